#include "runtime/model/hashing_embedder.hpp"

#include <cmath>
#include <cstdint>
#include <string>

#include "runtime/model/json_reader.hpp"

namespace skein {
namespace {

constexpr size_t hashing_dims_min = 16;
constexpr size_t hashing_dims_max = 4096;
// Bigrams carry word order; they count less than the words themselves.
constexpr float bigram_weight = 0.5f;

uint64_t fnv1a(std::string_view s, uint64_t h = 1469598103934665603ull) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

// Words: runs of ASCII letters and digits, lowercased, plus any non-ASCII byte
// (so words of other scripts stay whole). Everything else separates.
std::vector<std::string> words_of(std::string_view text) {
  std::vector<std::string> words;
  std::string cur;
  for (unsigned char c : text) {
    if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c >= 0x80) {
      cur.push_back(static_cast<char>(c));
    } else if (c >= 'A' && c <= 'Z') {
      cur.push_back(static_cast<char>(c - 'A' + 'a'));
    } else if (!cur.empty()) {
      words.push_back(std::move(cur));
      cur.clear();
    }
  }
  if (!cur.empty()) words.push_back(std::move(cur));
  return words;
}

// Each feature adds ±weight to one dimension; the sign comes from another bit of
// the hash so that collisions cancel out on average instead of piling up.
void add_feature(std::vector<float>& v, uint64_t h, float weight) {
  size_t i = static_cast<size_t>(h % v.size());
  v[i] += (h >> 63) ? -weight : weight;
}

class hashing_embedder final : public embedder {
 public:
  explicit hashing_embedder(size_t dims) : dims_(dims) {}
  size_t dimensions() const override { return dims_; }
  size_t batch_max() const override { return 1024; }
  void embed(std::vector<std::string> texts, std::function<void(embed_reply)> on_done) override {
    embed_reply r;
    r.vectors.reserve(texts.size());
    for (const auto& t : texts) r.vectors.push_back(hash_embed(t, dims_));
    on_done(std::move(r));
  }

 private:
  size_t dims_;
};

}  // namespace

std::vector<float> hash_embed(std::string_view text, size_t dims) {
  std::vector<float> v(dims, 0.0f);
  auto words = words_of(text);
  for (size_t i = 0; i < words.size(); ++i) {
    uint64_t h = fnv1a(words[i]);
    add_feature(v, h, 1.0f);
    if (i + 1 < words.size()) add_feature(v, fnv1a(words[i + 1], fnv1a(" ", h)), bigram_weight);
  }
  double norm = 0;
  for (float x : v) norm += static_cast<double>(x) * x;
  if (norm > 0) {
    auto inv = static_cast<float>(1.0 / std::sqrt(norm));
    for (float& x : v) x *= inv;
  }
  return v;
}

status make_hashing_embedder(std::string_view config_json, timer_service&, std::shared_ptr<embedder>* out) {
  json::document doc;
  json::object_reader r;
  SKEIN_TRY(json::parse_object(config_json.empty() ? std::string_view("{}") : config_json, {}, "embedder_config", &doc, &r));
  uint64_t dims = hashing_dims_default;
  SKEIN_TRY(r.uint("dims", &dims, false));
  if (dims < hashing_dims_min || dims > hashing_dims_max)
    return status::invalid_input("embedder_config.dims: must be between " + std::to_string(hashing_dims_min) +
                                 " and " + std::to_string(hashing_dims_max));
  *out = std::make_shared<hashing_embedder>(dims);
  return status::ok();
}

}  // namespace skein
