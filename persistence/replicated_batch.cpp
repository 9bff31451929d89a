// replicated_batch.hpp: encoding and strict decoding of a replicated message.
#include "persistence/replicated_batch.hpp"

namespace skein {
namespace {

void put_varint(uint64_t v, std::string* out) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

bool get_varint(std::string_view in, size_t* pos, uint64_t* v) {
  *v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (*pos >= in.size()) return false;
    auto byte = static_cast<unsigned char>(in[(*pos)++]);
    *v |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) return true;
  }
  return false;  // longer than 10 bytes
}

bool get_bytes(std::string_view in, size_t* pos, std::string* out) {
  uint64_t n = 0;
  if (!get_varint(in, pos, &n) || n > in.size() - *pos) return false;
  out->assign(in.substr(*pos, n));
  *pos += n;
  return true;
}

}  // namespace

void encode_replicated(const std::vector<replicated_row>& rows, std::string* out) {
  out->clear();
  out->push_back('R');
  out->push_back(1);
  put_varint(rows.size(), out);
  for (const auto& r : rows) {
    out->push_back(static_cast<char>(r.kind));
    out->push_back(static_cast<char>(r.family));
    put_varint(r.key.size(), out);
    out->append(r.key);
    if (r.kind == replicated_row::op::erase) continue;
    put_varint(r.value.size(), out);
    out->append(r.value);
  }
}

status decode_replicated(std::string_view in, std::vector<replicated_row>* out) {
  out->clear();
  size_t pos = 0;
  auto bad = [&](const std::string& why) {
    out->clear();
    return status::corruption("replicated message at byte " + std::to_string(pos) + " of " +
                              std::to_string(in.size()) + ": " + why);
  };
  if (in.size() < 2 || in[0] != 'R') return bad("not a replicated message");
  if (in[1] != 1) return bad("version " + std::to_string(static_cast<unsigned char>(in[1])) + " (1 is known)");
  pos = 2;
  uint64_t count = 0;
  if (!get_varint(in, &pos, &count)) return bad("truncated row count");
  // Each row takes at least three bytes: a count past that is a lie, not an allocation.
  if (count > replicated_rows_max || count > (in.size() - pos) / 3) return bad("row count " + std::to_string(count));
  out->reserve(count);
  for (uint64_t i = 0; i < count; ++i) {
    if (in.size() - pos < 2) return bad("truncated row " + std::to_string(i));
    replicated_row r;
    auto op = static_cast<unsigned char>(in[pos++]);
    if (op > 2) return bad("unknown op " + std::to_string(op) + " in row " + std::to_string(i));
    r.kind = static_cast<replicated_row::op>(op);
    r.family = static_cast<uint8_t>(in[pos++]);
    if (!get_bytes(in, &pos, &r.key)) return bad("truncated key in row " + std::to_string(i));
    if (r.kind != replicated_row::op::erase && !get_bytes(in, &pos, &r.value))
      return bad("truncated value in row " + std::to_string(i));
    out->push_back(std::move(r));
  }
  if (pos != in.size()) return bad("bytes after the last row");
  return status::ok();
}

}  // namespace skein
