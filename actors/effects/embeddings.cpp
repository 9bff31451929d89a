// The embeddings effect (DESIGN §4): every user and assistant `message` with
// text is embedded with its agent's embedder and stored in the embeddings
// column family (value codec: runtime/model/embedding.hpp), with the cursor in
// the same batch. An agent without an embedder only moves the cursor. One job
// reads at most job_events_max events and embeds at most the embedder's
// batch_max() texts: the cursor then stops before the first message left out.
#include <algorithm>

#include "actors/effects/effects.hpp"
#include "persistence/event_log.hpp"

namespace skein {
namespace {

bool embeddable(const event& e) {
  return e.type == event_type::message && !e.text.empty() &&
         (e.role == message_role::user || e.role == message_role::assistant);
}

class embeddings_effect final : public effect_kind {
 public:
  explicit embeddings_effect(effects_config hooks) : hooks_(std::move(hooks)) {}

  std::string name() const override { return "embeddings"; }

  status load(const event_log& log, effect_job& job) const override {
    job.events.clear();
    if (!job.agent->embedder) return status::ok();
    // Seqs have no gaps: this reads exactly cursor+1 .. the new target.
    uint64_t count = std::min<uint64_t>(job.target - job.cursor, std::max<size_t>(1, hooks_.job_events_max));
    std::vector<event> events;
    SKEIN_TRY(log.read_events(job.thread_id, job.cursor + 1, count, &events));
    job.target = job.cursor + events.size();
    for (auto& e : events)
      if (embeddable(e)) job.events.push_back(std::move(e));
    return status::ok();
  }

  std::unique_ptr<call_handle> process(effect_job job, std::function<void(effect_result)> done) const override {
    effect_result r;
    r.write.cursor = job.target;
    if (job.events.empty()) {
      done(std::move(r));
      return nullptr;
    }
    size_t batch = std::max<size_t>(1, job.agent->embedder->batch_max());
    if (job.events.size() > batch) {
      r.write.cursor = job.events[batch].seq - 1;  // the rest is the next job's
      job.events.resize(batch);
    }
    std::vector<std::string> texts;
    texts.reserve(job.events.size());
    for (const auto& e : job.events) texts.push_back(e.text);
    auto events = std::make_shared<std::vector<event>>(std::move(job.events));
    std::string agent = job.agent->config.id;
    size_t dims = job.agent->embedder->dimensions();
    job.agent->embedder->embed(std::move(texts), [r, events, agent, dims, done](embed_reply reply) mutable {
      if (!reply.result) {
        r.result = reply.result;
      } else if (reply.vectors.size() != events->size()) {
        r.result = status::io_error("embeddings: the embedder returned " + std::to_string(reply.vectors.size()) +
                                    " vectors for " + std::to_string(events->size()) + " texts");
      } else {
        for (size_t i = 0; i < events->size() && r.result; ++i) {
          const event& e = (*events)[i];
          embedding_record rec{agent, e.role == message_role::assistant, std::move(reply.vectors[i])};
          if (rec.vector.size() != dims) {
            r.result = status::io_error("embeddings: a vector of " + std::to_string(rec.vector.size()) +
                                        " dimensions from an embedder of " + std::to_string(dims));
            break;
          }
          std::string value;
          r.result = encode_embedding(rec, &value);
          r.write.embeddings.emplace_back(e.seq, std::move(value));
          r.embedded.emplace_back(e.seq, std::move(rec));
        }
      }
      done(std::move(r));
    });
    return nullptr;
  }

  void on_durable(const effect_job& job, const effect_result& r) const override {
    if (!hooks_.on_embedded) return;
    for (const auto& [seq, rec] : r.embedded) hooks_.on_embedded(job.thread_id, seq, rec);
  }

  void on_erased(const std::string& thread) const override {
    if (hooks_.on_erased) hooks_.on_erased(thread);
  }

 private:
  effects_config hooks_;
};

}  // namespace

std::shared_ptr<const effect_kind> make_embeddings_effect(effects_config hooks) {
  return std::make_shared<embeddings_effect>(std::move(hooks));
}

}  // namespace skein
