#include "actors/timers.hpp"

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>
#include <atomic>

#include "actors/messages.hpp"

namespace skein {
namespace {

class actor_timers final : public actor_timer_service {
 public:
  explicit actor_timers(caf::actor_system& sys)
      : actor_(sys.spawn([](caf::event_based_actor*) -> caf::behavior {
          return {[](run_atom, std::function<void()>& fn) { fn(); }};
        })) {}

  ~actor_timers() override {
    if (!stopped_.load(std::memory_order_acquire)) stop();
  }

  void stop() override {
    stopped_.store(true, std::memory_order_release);
    caf::anon_send_exit(actor_, caf::exit_reason::user_shutdown);
  }

  void after(std::chrono::milliseconds delay, std::function<void()> fn) override {
    if (delay.count() <= 0) caf::anon_send(actor_, run_atom::value, std::move(fn));
    else caf::delayed_anon_send(actor_, delay, run_atom::value, std::move(fn));
  }

 private:
  const caf::actor actor_;  // never reassigned: after() may race with stop()
  std::atomic<bool> stopped_{false};
};

}  // namespace

std::unique_ptr<actor_timer_service> make_actor_timers(caf::actor_system& sys) {
  return std::make_unique<actor_timers>(sys);
}

}  // namespace skein
