// Houses (DESIGN §4): a thread whose members are agents. An input runs every
// member it triggers in turn, one run per member under that member's agent; the
// later members' turns are put in the inbox by the tick that starts the first.
// Members are added and removed with house.* signals. The class is in
// thread_actor_impl.hpp.
#include <caf/send.hpp>

#include "actors/error.hpp"
#include "actors/messages.hpp"
#include "actors/thread_actor_impl.hpp"
#include "runtime/model/ids.hpp"

namespace skein::detail {

bool thread_impl::is_house() const {
  const auto& members = manifest_.members;
  if (members.empty()) return false;
  return !(members.size() == 1 && members[0].agent_id == manifest_.agent_id &&
           members[0].trigger == member_trigger::always);
}

void thread_impl::fetch_members() {
  std::vector<std::string> ids;
  for (const auto& m : manifest_.members)
    if (m.agent_id != manifest_.agent_id) ids.push_back(m.agent_id);
  if (ids.empty()) {
    members_known_ = true;
    return start_next();
  }
  fetching_members_ = true;
  auto left = std::make_shared<size_t>(ids.size());
  auto one_done = [this, left] {
    if (--*left != 0) return;
    fetching_members_ = false;
    members_known_ = true;
    start_next();
  };
  for (const auto& id : ids)
    request(ctx_->directory, caf::infinite, agent_atom::value, id, caf::get_atom::value)
        .then(
            [this, id, one_done](agent_spec_ptr& spec) {
              member_specs_[id] = std::move(spec);
              one_done();
            },
            [this, id, one_done](caf::error&) {
              member_specs_[id] = nullptr;  // no such agent: its runs are dispatch failures
              one_done();
            });
}

agent_spec_ptr thread_impl::member_spec(const std::string& agent_id, std::string* why) const {
  agent_spec_ptr spec = agent_;
  if (agent_id != manifest_.agent_id) {
    auto it = member_specs_.find(agent_id);
    spec = it == member_specs_.end() ? nullptr : it->second;
  }
  if (!spec) {
    *why = "agent " + agent_id + " does not exist";
    return nullptr;
  }
  if (ctx_->ledger) {
    if (status b = ctx_->ledger->check(spec->config, wall_now()); !b) {
      *why = b.to_string();
      return nullptr;
    }
  }
  return spec;
}

agent_spec_ptr thread_impl::dispatch_members(pending_input& p, std::vector<event>* failed,
                                              std::vector<std::pair<uint64_t, run_input>>* inbox_put) {
  auto failure = [&](const std::string& agent, const std::string& why) {
    return make_signal("dispatch.failed", signal_data({{"kind", "member"},
                                                       {"agent", agent},
                                                       {"input_run_id", p.input.run_id},
                                                       {"reason", why}}));
  };
  std::string why;
  if (p.input.follow_up) {
    if (agent_spec_ptr spec = member_spec(p.input.member, &why)) return spec;
    commit_job job;
    job.events.push_back(failure(p.input.member, why));
    job.inbox_take = p.inbox_order;
    commit(std::move(job));
    return nullptr;
  }
  std::vector<std::pair<std::string, agent_spec_ptr>> runnable;
  for (const auto& id : triggered_members(manifest_.members, p.input.text)) {
    if (agent_spec_ptr spec = member_spec(id, &why)) runnable.emplace_back(id, std::move(spec));
    else failed->push_back(failure(id, why));
  }
  // No member can take it (or none is triggered): the thread's own agent runs it,
  // so that the input still enters the log through a run.
  if (runnable.empty()) return agent_;
  // The others follow this run at once, in member order, before any other input:
  // one run per member, never interleaved (this actor runs one at a time).
  // Each is durable in the inbox from the tick that starts the first run on.
  std::vector<pending_input> next(runnable.size() - 1);
  for (size_t i = 1; i < runnable.size(); ++i) {
    pending_input& n = next[i - 1];
    n.input.member = runnable[i].first;
    n.input.follow_up = true;
    n.input.text = p.input.text;  // for the log's readers; not appended again
    n.input.role = p.input.role;
    n.input.source = "house";
    n.input.run_id = new_run_id();
    n.inbox_order = inbox_next_++;
    inbox_put->emplace_back(n.inbox_order, n.input);
  }
  for (size_t i = next.size(); i-- > 0;) queue_.push_front(std::move(next[i]));
  p.input.member = runnable[0].first;
  return runnable[0].second;
}

caf::result<manifest> thread_impl::change_member(std::string agent_id, std::string trigger, bool add) {
  if (stopping_) return gone_error();
  if (manifest_.parent != parent_kind::none && manifest_.parent != parent_kind::agent)
    return to_error(status::invalid_input("members: thread " + manifest_.id + " hangs from a " +
                                          std::string{to_string(manifest_.parent)} + "; only a root thread is a house")
                        .with_field("members"));
  auto members = manifest_.members;
  auto it = std::find_if(members.begin(), members.end(), [&](const house_member& m) { return m.agent_id == agent_id; });
  house_member member{agent_id, member_trigger::always};
  if (add) {
    auto t = parse_member_trigger(trigger);
    if (!t) return to_error(status::invalid_input("trigger: must be always or on_mention").with_field("trigger"));
    member.trigger = *t;
    if (it != members.end()) {
      if (*it == member) return manifest_;  // already so: nothing to record
      *it = member;
    } else {
      members.push_back(member);
    }
  } else {
    if (it == members.end())
      return to_error(status::not_found("members: agent " + agent_id + " is no member of thread " + manifest_.id)
                          .with_field("agent"));
    members.erase(it);
  }
  if (status s = validate_members(members, "members"); !s) return to_error(s);
  auto promise = make_response_promise<manifest>();
  commit_job job;
  job.mutate = [members](manifest& m) { m.members = members; };
  job.events.push_back(make_signal(add ? "house.member_added" : "house.member_removed",
                                   signal_data({{"agent", agent_id},
                                                {"trigger", add ? std::string{to_string(member.trigger)} : ""}})));
  job.on_done = [this, promise](uint64_t) mutable {
    members_known_ = false;  // a new member's spec is fetched before the next run
    promise.deliver(manifest_);
  };
  job.on_failed = [promise](const caf::error& e) mutable { promise.deliver(e); };
  commit(std::move(job));
  return promise;
}

void thread_impl::record_dispatch_failed(std::string data) {
  if (stopping_ || failed_) return;
  commit_job job;
  job.events.push_back(make_signal("dispatch.failed", std::move(data)));
  commit(std::move(job));
}

}  // namespace skein::detail
