// The runtime's work-item calls (runtime.hpp): each checks that the runtime is
// open and hands over to the work service (work_service.hpp). In a cluster a
// call about one item (by its thread id) goes to the item's node, where its
// rows and the work index that holds it live; calls by agent are the node's
// own (README, "A cluster of nodes").
#include "runtime/runtime.hpp"
#include "runtime/model/ids.hpp"
#include "runtime/runtime_impl.hpp"
#include "runtime/work_service.hpp"

namespace skein {

status runtime::impl::item_node(const std::string& thread_id, std::string* node) const {
  node->clear();
  SKEIN_TRY(check_open());
  if (!cluster) return status::ok();
  SKEIN_TRY(validate_id(thread_id, "thread id"));
  return route(thread_id, node);
}

#define SKEIN_WORK(call)                                                      \
  do {                                                                        \
    work_service* w = works();                                                \
    if (w == nullptr) return status::io_error("the runtime is closed");       \
    return w->call;                                                           \
  } while (false)

status runtime::create_item(const work_create& in, work_create_result* out) { SKEIN_WORK(create_item(in, out)); }
status runtime::touch_item(const std::string& thread_id, work_entry* out) {
  std::string node;
  SKEIN_TRY(impl_->item_node(thread_id, &node));
  if (!node.empty()) return impl_->ask_item(node, out, touch_atom::value, thread_id);
  SKEIN_WORK(touch_item(thread_id, out));
}
status runtime::resolve_item(const work_resolve& in, work_entry* out) {
  std::string node;
  if (!in.thread_id.empty()) SKEIN_TRY(impl_->item_node(in.thread_id, &node));
  if (!node.empty()) return impl_->ask_item(node, out, item_resolve_atom::value, in);
  SKEIN_WORK(resolve_item(in, out));
}
status runtime::relate_item(const std::string& thread_id, const std::string& issue_id, work_entry* out) {
  std::string node;
  SKEIN_TRY(impl_->item_node(thread_id, &node));
  if (!node.empty()) return impl_->ask_item(node, out, relate_atom::value, thread_id, issue_id);
  SKEIN_WORK(relate_item(thread_id, issue_id, out));
}
status runtime::get_item(const std::string& thread_id, work_entry* out) {
  std::string node;
  SKEIN_TRY(impl_->item_node(thread_id, &node));
  if (!node.empty()) return impl_->ask_item(node, out, caf::get_atom::value, thread_id);
  SKEIN_WORK(get_item(thread_id, out));
}
status runtime::list_items(const work_list_query& query, work_list_page* out) { SKEIN_WORK(list_items(query, out)); }
status runtime::sweep_items(const work_sweep_options& options, work_sweep_result* out) {
  SKEIN_WORK(sweep_items(options, out));
}
status runtime::graph_connected_to(const std::string& node, size_t limit, std::vector<work_triple>* out) {
  SKEIN_WORK(graph_connected_to(node, limit, out));
}
status runtime::graph_produced_by(const std::string& agent_id, size_t limit, std::vector<work_triple>* out) {
  SKEIN_WORK(graph_produced_by(agent_id, limit, out));
}
status runtime::graph_provenance(const std::string& node, size_t depth, size_t limit, std::vector<work_triple>* out) {
  SKEIN_WORK(graph_provenance(node, depth, limit, out));
}
status runtime::graph_stats(work_graph_stats* out) { SKEIN_WORK(graph_stats(out)); }
status runtime::list_suggestions(const std::string& agent_id, bool all, std::vector<work_suggestion>* out) {
  SKEIN_WORK(list_suggestions(agent_id, all, out));
}
status runtime::promote_suggestion(const std::string& suggestion_id, work_create_result* out) {
  SKEIN_WORK(promote_suggestion(suggestion_id, out));
}
status runtime::dismiss_suggestion(const std::string& suggestion_id, work_suggestion* out) {
  SKEIN_WORK(dismiss_suggestion(suggestion_id, out));
}
status runtime::session_start(const work_session_start& in, work_session_started* out) {
  SKEIN_WORK(session_start(in, out));
}
status runtime::session_close(const work_session_close& in, work_session_closed* out) {
  SKEIN_WORK(session_close(in, out));
}

#undef SKEIN_WORK

}  // namespace skein
