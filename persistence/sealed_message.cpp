// sealed_message.hpp: HKDF for the message key, AES-256-GCM per message.
#include "persistence/sealed_message.hpp"

#include <openssl/evp.h>
#include <openssl/kdf.h>

#include <cstring>
#include <memory>

namespace skein {
namespace {

constexpr size_t nonce_bytes = 12, tag_bytes = 16, head_bytes = 2;
constexpr char info[] = "skein replicated log v1";

struct ctx_free {
  void operator()(EVP_CIPHER_CTX* c) const { EVP_CIPHER_CTX_free(c); }
};
struct pkey_ctx_free {
  void operator()(EVP_PKEY_CTX* c) const { EVP_PKEY_CTX_free(c); }
};

}  // namespace

status message_sealer::make(const master_key& master, message_sealer* out) {
  std::unique_ptr<EVP_PKEY_CTX, pkey_ctx_free> ctx{EVP_PKEY_CTX_new_id(EVP_PKEY_HKDF, nullptr)};
  std::array<uint8_t, key_bytes> derived{};
  size_t len = derived.size();
  bool ok = ctx && EVP_PKEY_derive_init(ctx.get()) == 1 && EVP_PKEY_CTX_set_hkdf_md(ctx.get(), EVP_sha256()) == 1 &&
            EVP_PKEY_CTX_set1_hkdf_key(ctx.get(), master.data(), static_cast<int>(key_bytes)) == 1 &&
            EVP_PKEY_CTX_add1_hkdf_info(ctx.get(), reinterpret_cast<const unsigned char*>(info),
                                        static_cast<int>(sizeof info - 1)) == 1 &&
            EVP_PKEY_derive(ctx.get(), derived.data(), &len) == 1 && len == derived.size();
  if (!ok) return status::io_error("replicated log key: HKDF failed");
  out->key_ = master_key{derived};
  std::memset(derived.data(), 0, derived.size());
  return status::ok();
}

status message_sealer::seal(std::string_view subject, std::string_view plain, std::string* out) const {
  out->assign(head_bytes + nonce_bytes + plain.size() + tag_bytes, '\0');
  auto* p = reinterpret_cast<uint8_t*>(out->data());
  p[0] = 'S';
  p[1] = 1;
  uint8_t* nonce = p + head_bytes;
  uint8_t* body = nonce + nonce_bytes;
  uint8_t* tag = body + plain.size();
  if (!random_bytes(nonce, nonce_bytes)) return status::io_error("replicated log: getrandom failed for a nonce");
  std::unique_ptr<EVP_CIPHER_CTX, ctx_free> ctx{EVP_CIPHER_CTX_new()};
  int n = 0;
  bool ok = ctx && EVP_EncryptInit_ex(ctx.get(), EVP_aes_256_gcm(), nullptr, key_.data(), nonce) == 1 &&
            EVP_EncryptUpdate(ctx.get(), nullptr, &n, reinterpret_cast<const uint8_t*>(subject.data()),
                              static_cast<int>(subject.size())) == 1 &&
            EVP_EncryptUpdate(ctx.get(), body, &n, reinterpret_cast<const uint8_t*>(plain.data()),
                              static_cast<int>(plain.size())) == 1 &&
            EVP_EncryptFinal_ex(ctx.get(), body + n, &n) == 1 &&
            EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_GET_TAG, tag_bytes, tag) == 1;
  if (!ok) {
    out->clear();
    return status::io_error("replicated log: sealing failed");
  }
  return status::ok();
}

status message_sealer::open(std::string_view subject, std::string_view sealed, std::string* out) const {
  out->clear();
  if (sealed.size() < head_bytes + nonce_bytes + tag_bytes || sealed[0] != 'S')
    return status::corruption("replicated message on " + std::string{subject} + ": not sealed");
  if (sealed[1] != 1)
    return status::corruption("replicated message on " + std::string{subject} + ": seal version " +
                              std::to_string(static_cast<unsigned char>(sealed[1])) + " (1 is known)");
  const auto* p = reinterpret_cast<const uint8_t*>(sealed.data());
  const uint8_t* nonce = p + head_bytes;
  const uint8_t* body = nonce + nonce_bytes;
  const size_t body_bytes = sealed.size() - head_bytes - nonce_bytes - tag_bytes;
  std::string plain(body_bytes, '\0');
  std::unique_ptr<EVP_CIPHER_CTX, ctx_free> ctx{EVP_CIPHER_CTX_new()};
  int n = 0;
  auto* dst = reinterpret_cast<uint8_t*>(plain.data());
  bool ok = ctx && EVP_DecryptInit_ex(ctx.get(), EVP_aes_256_gcm(), nullptr, key_.data(), nonce) == 1 &&
            EVP_DecryptUpdate(ctx.get(), nullptr, &n, reinterpret_cast<const uint8_t*>(subject.data()),
                              static_cast<int>(subject.size())) == 1 &&
            EVP_DecryptUpdate(ctx.get(), dst, &n, body, static_cast<int>(body_bytes)) == 1 &&
            EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_SET_TAG, tag_bytes,
                                const_cast<uint8_t*>(body + body_bytes)) == 1 &&
            EVP_DecryptFinal_ex(ctx.get(), dst + n, &n) == 1;
  if (!ok)
    return status::corruption("replicated message on " + std::string{subject} +
                              ": does not open with this namespace's key (changed, misplaced or another key's)");
  *out = std::move(plain);
  return status::ok();
}

}  // namespace skein
