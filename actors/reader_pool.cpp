#include "actors/reader_pool.hpp"

#include <caf/actor_system.hpp>
#include <caf/send.hpp>

#include "actors/error.hpp"

namespace skein {
namespace {

using read_atom = caf::atom_constant<caf::atom("read")>;

// A job and the outcome it leaves for the asker. Local only.
struct read_job {
  std::function<status()> fn;
  std::shared_ptr<status> outcome;
};

}  // namespace
}  // namespace skein

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(skein::read_job)

namespace skein {
namespace {

class reader : public caf::event_based_actor {
 public:
  reader(caf::actor_config& cfg, std::shared_ptr<std::atomic<size_t>> queued)
      : caf::event_based_actor(cfg), queued_(std::move(queued)) {}

  const char* name() const override { return "skein.reader"; }

  caf::behavior make_behavior() override {
    return {
        [this](read_atom, read_job& job) {
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

void reader_pool::read_then(caf::event_based_actor* self, std::function<status()> job,
                            std::function<void(const status&)> done) {
  if (try_read_then(self, job, done)) return;
  if (stopped_.load(std::memory_order_acquire))
    return done(status::overloaded("the readers are stopped: the runtime is closing"));
  done(status::overloaded("storage reads: reads_queued_max (" + std::to_string(options_.reads_queued_max) +
                          ") queued or running")
           .with_limit("reads_queued_max"));
}

void reader_pool::read_or_inline(caf::event_based_actor* self, std::function<status()> job,
                                 std::function<void(const status&)> done) {
  if (!try_read_then(self, job, done)) done(job());
}

bool reader_pool::try_read_then(caf::event_based_actor* self, std::function<status()>& job,
                                std::function<void(const status&)>& done) {
  if (stopped_.load(std::memory_order_acquire)) return false;
  size_t now = queued_.load(std::memory_order_relaxed);
  do {
    if (now >= options_.reads_queued_max) return false;
  } while (!queued_.compare_exchange_weak(now, now + 1, std::memory_order_acq_rel));
  auto outcome = std::make_shared<status>();
  const caf::actor& target = readers_[next_.fetch_add(1, std::memory_order_relaxed) % readers_.size()];
  self->request(target, caf::infinite, read_atom::value, read_job{std::move(job), outcome})
      .then([outcome, done]() { done(*outcome); }, [done](caf::error& e) { done(to_status(e)); });
  return true;
}

}  // namespace skein
