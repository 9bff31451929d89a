// sealed_message: a replicated message's bytes as they travel through NATS and
// rest in its store, encrypted and authenticated with a key derived from the
// namespace's master key (encryption.hpp), so that a grep of the NATS servers'
// files finds none of a thread's text and a changed byte is caught.
//
// The message key is HKDF-SHA256 of the master key (info "skein replicated
// log v1"): it never encrypts anything else. Each message is AES-256-GCM under
// a random 96-bit nonce, with the subject it is published to as associated
// data, so a message copied onto another partition's subject does not open.
// Format (version 1): 'S' 1 nonce[12] ciphertext tag[16]. Random nonces bound a
// key to about 2^32 messages; a namespace's rekey gives a new master key.
#pragma once

#include <array>
#include <string>
#include <string_view>

#include "persistence/encryption.hpp"
#include "runtime/model/status.hpp"

namespace skein {

class message_sealer {
 public:
  // io_error when the key cannot be derived (an OpenSSL failure).
  static status make(const master_key& master, message_sealer* out);

  status seal(std::string_view subject, std::string_view plain, std::string* out) const;
  // corruption (nothing in *out) when `sealed` is not a message sealed with
  // this key for `subject`, whole and unchanged.
  status open(std::string_view subject, std::string_view sealed, std::string* out) const;

 private:
  master_key key_;  // the derived message key
};

}  // namespace skein
