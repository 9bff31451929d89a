// skein::runtime's runs: send (a run_handle a host waits on or hears from),
// submit (the run's id at once), cancel; and the client actors that deliver a
// send to its thread actor here (another node's thread: cluster_link::send).
#include <caf/all.hpp>
#include <condition_variable>
#include <mutex>

#include "actors/caller.hpp"
#include "actors/error.hpp"
#include "actors/messages.hpp"
#include "runtime/host_sink.hpp"
#include "runtime/model/ids.hpp"
#include "runtime/runtime.hpp"
#include "runtime/runtime_impl.hpp"

namespace skein {

struct run_handle::state {
  std::string run_id;
  std::string thread_id;
  mutable std::mutex mu;
  mutable std::condition_variable cv;
  bool done = false;  // guarded by mu
  status result;      // guarded by mu
  run_result value;   // guarded by mu
  std::vector<std::function<void(const status&, const run_result&)>> callbacks;  // guarded by mu
  std::shared_ptr<std::atomic<uint64_t>> host_failures;  // the runtime's count; set before sharing

  void finish(status s, run_result r) {
    std::vector<std::function<void(const status&, const run_result&)>> to_call;
    {
      std::lock_guard<std::mutex> lock{mu};
      if (done) return;
      done = true;
      result = std::move(s);
      value = std::move(r);
      to_call.swap(callbacks);
    }
    cv.notify_all();
    for (auto& fn : to_call)  // done is final: no lock needed to read
      guard_host_call(host_failures, "a run_handle::on_done callback", [&] { fn(result, value); });
  }
};

}  // namespace skein

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::shared_ptr<skein::run_handle::state>)

namespace skein {
namespace {

// Resolves the thread and sends the input; a thread that passivated between the
// two is resolved again (its mailbox never saw the input).
void deliver_send(caf::event_based_actor* self, directory_actor directory, std::string thread,
                  run_input in, std::shared_ptr<run_handle::state> st, int attempt) {
  self->request(directory, caf::infinite, resolve_atom::value, thread)
      .then(
          [=](thread_actor& target) {
            self->request(target, caf::infinite, send_atom::value, in)
                .then([st](run_result& r) { st->finish(status::ok(), std::move(r)); },
                      [=](caf::error& e) {
                        if (receiver_down(e) && attempt < 8) deliver_send(self, directory, thread, in, st, attempt + 1);
                        else st->finish(to_status(e), {});
                      });
          },
          [st](caf::error& e) { st->finish(to_status(e), {}); });
}

}  // namespace

caf::behavior client_actor(caf::event_based_actor* self, directory_actor directory) {
  return {
      [=](send_atom, std::string& thread, run_input& in, std::shared_ptr<run_handle::state>& st) {
        deliver_send(self, directory, std::move(thread), std::move(in), std::move(st), 0);
      },
  };
}

const std::string& run_handle::run_id() const { return state_->run_id; }
const std::string& run_handle::thread_id() const { return state_->thread_id; }

bool run_handle::ready() const {
  std::lock_guard<std::mutex> lock{state_->mu};
  return state_->done;
}

status run_handle::wait(run_result* out, std::chrono::milliseconds timeout) const {
  if (!state_) return status::invalid_input("run_handle: empty");
  std::unique_lock<std::mutex> lock{state_->mu};
  auto done = [&] { return state_->done; };
  if (timeout == std::chrono::milliseconds::max()) state_->cv.wait(lock, done);
  else if (!state_->cv.wait_for(lock, timeout, done))
    return status::overloaded("run " + state_->run_id + " still running after " +
                              std::to_string(timeout.count()) + " ms");
  if (state_->result.is_ok() && out != nullptr) *out = state_->value;
  return state_->result;
}

void run_handle::on_done(std::function<void(const status&, const run_result&)> fn) const {
  {
    std::lock_guard<std::mutex> lock{state_->mu};
    if (!state_->done) {
      state_->callbacks.push_back(std::move(fn));
      return;
    }
  }
  fn(state_->result, state_->value);
}

run_handle runtime::send(const std::string& thread_id, run_input input) {
  auto st = std::make_shared<run_handle::state>();
  st->host_failures = impl_->host_failures;
  if (input.run_id.empty()) input.run_id = new_run_id();
  st->run_id = input.run_id;
  st->thread_id = thread_id;
  std::string owner;
  if (status c = impl_->check_open(); !c) st->finish(c, {});
  else if (status s = validate_id(thread_id, "thread id"); !s) st->finish(s, {});
  else if (status v = validate_input(input); !v) st->finish(v, {});
  else if (status r = impl_->route(thread_id, &owner); !r) st->finish(r, {});
  else if (!owner.empty())
    impl_->cluster->send(owner, thread_id, std::move(input),
                         [st](status s, run_result r) { st->finish(std::move(s), std::move(r)); });
  else {
    size_t i = impl_->next_client.fetch_add(1, std::memory_order_relaxed) % impl_->clients.size();
    caf::anon_send(impl_->clients[i], send_atom::value, thread_id, std::move(input), st);
  }
  return run_handle{st};
}

status runtime::submit(const std::string& thread_id, run_input input, std::string* run_id) {
  SKEIN_TRY(validate_id(thread_id, "thread id"));
  SKEIN_TRY(validate_input(input));
  if (input.run_id.empty()) input.run_id = new_run_id();
  std::string owner;
  SKEIN_TRY(impl_->route(thread_id, &owner));
  if (!owner.empty())
    return impl_->cluster->call(owner, [&](std::string& r) { *run_id = std::move(r); }, submit_atom::value,
                                thread_id, std::move(input));
  return impl_->ask_thread(thread_id, run_id, submit_atom::value, std::move(input));
}

status runtime::cancel(const std::string& thread_id, bool* cancelled) {
  bool was = false;
  // High priority: the cancel overtakes inputs queued in the thread's mailbox.
  std::string owner;
  SKEIN_TRY(impl_->route(thread_id, &owner));
  if (!owner.empty())
    SKEIN_TRY(impl_->cluster->call(owner, [&](bool b) { was = b; }, cancel_atom::value, thread_id));
  else
    SKEIN_TRY(impl_->ask_thread<caf::message_priority::high>(thread_id, &was, cancel_atom::value));
  if (cancelled != nullptr) *cancelled = was;
  return status::ok();
}

}  // namespace skein
