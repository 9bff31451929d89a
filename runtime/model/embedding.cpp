#include "runtime/model/embedding.hpp"

#include <bit>
#include <cstring>

#include "runtime/model/ids.hpp"

namespace skein {
namespace {

constexpr uint8_t embedding_format = 1;

static_assert(std::endian::native == std::endian::little,
              "embedding values are little-endian floats copied as they are");

}  // namespace

status encode_embedding(const embedding_record& r, std::string* out) {
  SKEIN_TRY(validate_id(r.agent_id, "embedding.agent_id"));
  if (r.agent_id.size() > 255) return status::invalid_input("embedding.agent_id: longer than 255 bytes");
  if (r.vector.empty() || r.vector.size() > embedding_dims_max)
    return status::invalid_input("embedding.vector: dimensions must be between 1 and embedding_dims_max (" +
                                 std::to_string(embedding_dims_max) + ")")
        .with_limit("embedding_dims_max");
  out->clear();
  out->reserve(5 + r.agent_id.size() + r.vector.size() * sizeof(float));
  out->push_back(static_cast<char>(embedding_format));
  out->push_back(static_cast<char>(r.assistant ? 1 : 0));
  out->push_back(static_cast<char>(r.agent_id.size()));
  out->append(r.agent_id);
  auto dims = static_cast<uint16_t>(r.vector.size());
  out->push_back(static_cast<char>(dims & 0xff));
  out->push_back(static_cast<char>(dims >> 8));
  out->append(reinterpret_cast<const char*>(r.vector.data()), r.vector.size() * sizeof(float));
  return status::ok();
}

status decode_embedding(std::string_view v, embedding_record* out) {
  if (v.size() < 3) return status::corruption("embedding: value of " + std::to_string(v.size()) + " bytes is too short");
  if (static_cast<uint8_t>(v[0]) != embedding_format)
    return status::corruption("embedding: unknown format " + std::to_string(static_cast<uint8_t>(v[0])));
  auto role = static_cast<uint8_t>(v[1]);
  if (role > 1) return status::corruption("embedding: unknown role " + std::to_string(role));
  size_t agent_len = static_cast<uint8_t>(v[2]);
  if (v.size() < 3 + agent_len + 2) return status::corruption("embedding: value cut inside its header");
  std::string_view agent = v.substr(3, agent_len);
  size_t dims = static_cast<uint8_t>(v[3 + agent_len]) | (static_cast<size_t>(static_cast<uint8_t>(v[4 + agent_len])) << 8);
  size_t body = 5 + agent_len;
  if (dims == 0 || dims > embedding_dims_max) return status::corruption("embedding: dims " + std::to_string(dims) + " out of range");
  if (v.size() != body + dims * sizeof(float))
    return status::corruption("embedding: " + std::to_string(v.size()) + " bytes for " + std::to_string(dims) + " dims");
  if (!validate_id(agent, "embedding.agent_id")) return status::corruption("embedding: bad agent id");
  out->agent_id.assign(agent);
  out->assistant = role == 1;
  out->vector.resize(dims);
  std::memcpy(out->vector.data(), v.data() + body, dims * sizeof(float));
  return status::ok();
}

}  // namespace skein
