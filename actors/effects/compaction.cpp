// The compaction effect (DESIGN §6): when the estimated tokens of a thread's
// working conversation pass its agent's compaction.auto_tokens, the thread is
// compacted in the background, between runs. The effect only decides: it asks
// the thread actor (the only writer of the thread) to compact, with its cursor,
// and the compaction's tick carries that cursor — so a compaction is applied
// once even across a crash. The thread actor checks the threshold again when the
// compaction's turn comes (a run or a compaction may have come first), so a
// repeated or late request compacts nothing twice.
#include <algorithm>

#include "actors/effects/effects.hpp"
#include "actors/thread_actor.hpp"
#include "persistence/event_log.hpp"
#include "runtime/model/compaction.hpp"

namespace skein {
namespace {

constexpr size_t new_events_page = 256;

bool is_conversation(const event& e) {
  switch (e.type) {
    case event_type::message:
    case event_type::assistant_text:
    case event_type::thinking:
    case event_type::tool_call:
    case event_type::tool_result:
      return true;
    default:
      return false;
  }
}

class compaction_effect final : public effect_kind {
 public:
  std::string name() const override { return compaction_effect_name; }

  status load(const event_log& log, effect_job& job) const override {
    job.events.clear();
    uint64_t threshold = job.agent->config.compaction.auto_tokens;
    if (threshold == 0) return status::ok();  // only on request: the cursor moves on
    // Only new conversation asks for a compaction — events after both the cursor
    // and the latest compaction: a compaction's own tick, a
    // thread.compaction_failed signal or a heartbeat never do — else a view that
    // stays past the threshold after a compaction would be compacted again and again.
    // What the latest compaction covers is not new, even past the cursor (a
    // compaction waits for the run it was asked during).
    bool fresh = false;
    for (uint64_t from = std::max(job.cursor, job.thread.compaction_seq) + 1; !fresh && from <= job.target;) {
      std::vector<event> page;
      SKEIN_TRY(log.read_events(job.thread_id, from, new_events_page, &page));
      if (page.empty()) break;
      for (const auto& e : page)
        if (e.seq <= job.target && is_conversation(e)) fresh = true;
      from = page.back().seq + 1;
    }
    if (!fresh) return status::ok();
    std::vector<event> view;  // O(working view): from the latest compaction on
    SKEIN_TRY(read_working_view(log, job.thread, &view));
    if (estimate_tokens(view) <= threshold) return status::ok();
    job.events = std::move(view);  // non-empty: process() asks for a compaction
    return status::ok();
  }

  std::unique_ptr<call_handle> process(effect_job job, std::function<void(effect_result)> done) const override {
    effect_result r;
    r.write.cursor = job.target;
    if (!job.events.empty()) {
      compact_request req;
      req.automatic = true;
      req.effect = compaction_effect_name;
      req.effect_seq = job.target;
      r.compaction = std::move(req);
    }
    done(std::move(r));
    return nullptr;
  }
};

}  // namespace

std::shared_ptr<const effect_kind> make_compaction_effect() { return std::make_shared<compaction_effect>(); }

}  // namespace skein
