#include "actors/reader_pool.hpp"

#include <caf/actor_system.hpp>
#include <caf/send.hpp>

#include "actors/error.hpp"

namespace skein {
namespace {

class reader : public caf::event_based_actor {
 public:
  reader(caf::actor_config& cfg, std::shared_ptr<std::atomic<size_t>> queued)
      : caf::event_based_actor(cfg), queued_(std::move(queued)) {}

  const char* name() const override { return "skein.reader"; }

  caf::behavior make_behavior() override {
    return {
        [this](reader_read_atom, read_job& job) {
          // A job is storage code, but an exception must not end a reader.
          try {
            *job.outcome = job.fn();
          } catch (const std::exception& e) {
            *job.outcome = status::io_error(std::string{"read: "} + e.what());
          }
          queued_->fetch_sub(1, std::memory_order_acq_rel);
        },
    };
  }

 private:
  std::shared_ptr<std::atomic<size_t>> queued_;
};

}  // namespace

reader_pool::reader_pool(caf::actor_system& sys, reader_options options)
    : options_(options),
      queued_counter_(std::make_shared<std::atomic<size_t>>(0)),
      queued_(*queued_counter_) {
  if (options_.readers == 0) options_.readers = 1;
  for (size_t i = 0; i < options_.readers; ++i)
    readers_.push_back(options_.detached ? sys.spawn<reader, caf::detached>(queued_counter_)
                                         : sys.spawn<reader>(queued_counter_));
}

reader_pool::~reader_pool() { stop(); }

void reader_pool::stop() {
  if (stopped_.exchange(true)) return;
  for (auto& r : readers_) caf::anon_send_exit(r, caf::exit_reason::user_shutdown);
}

bool reader_pool::reserve(caf::actor* target) {
  if (stopped_.load(std::memory_order_acquire)) return false;
  size_t now = queued_.load(std::memory_order_relaxed);
  do {
    if (now >= options_.reads_queued_max) return false;
  } while (!queued_.compare_exchange_weak(now, now + 1, std::memory_order_acq_rel));
  *target = readers_[next_.fetch_add(1, std::memory_order_relaxed) % readers_.size()];
  return true;
}

status reader_pool::refusal() const {
  if (stopped_.load(std::memory_order_acquire)) return status::overloaded("the readers are stopped: the runtime is closing");
  return status::overloaded("storage reads: reads_queued_max (" + std::to_string(options_.reads_queued_max) +
                            ") queued or running")
      .with_limit("reads_queued_max");
}

}  // namespace skein
