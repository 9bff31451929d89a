// Encryption at rest (encryption.hpp). The key file beside an encrypted
// database, version 1, 72 bytes:
//
//   SKEIN-KEY := header nonce wrapped tag
//   header    := "SKEINKEY" version:u8 algorithm:u8 reserved:u16   (12 bytes)
//   version   := 1
//   algorithm := 1   (wrap: AES-256-GCM under the master key; data: AES-256-CTR)
//   reserved  := 0x0000
//   nonce     := 12 random bytes
//   wrapped   := the 32-byte data key, AES-256-GCM encrypted, the header as AAD
//   tag       := the 16-byte GCM tag
//
// The data key is random (the kernel's CSPRNG, getrandom), one per database. Every RocksDB file then
// starts with a 4096-byte prefix (RocksDB's CTR provider): a 64-bit initial
// counter and a 64-bit IV, random per file, the rest random filler. RocksDB's
// own CreateNewPrefix seeds a non-cryptographic generator with the clock's
// microseconds, so two files created in the same microsecond would share a key
// stream; the provider below fills the prefix from getrandom instead and leaves
// the rest (the stream, the counter layout) to RocksDB's CTR provider.
#include "persistence/encryption.hpp"

#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <sys/random.h>
#include <rocksdb/env.h>
#include <rocksdb/env_encryption.h>
#include <sys/stat.h>
#include <unistd.h>

namespace skein {

bool random_bytes(void* out, size_t n) {
  auto* p = static_cast<unsigned char*>(out);
  while (n > 0) {
    ssize_t got = ::getrandom(p, n, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    p += got;
    n -= static_cast<size_t>(got);
  }
  return true;
}

namespace {

constexpr size_t block_bytes = 16;
constexpr size_t nonce_bytes = 12;
constexpr size_t tag_bytes = 16;
constexpr size_t header_bytes = 12;
constexpr size_t key_file_bytes = header_bytes + nonce_bytes + key_bytes + tag_bytes;
constexpr uint8_t key_file_version = 1;
constexpr uint8_t algorithm_aes256 = 1;
constexpr size_t key_text_bytes_max = 4096;  // a key file longer than this is not a key

// Zeroes a buffer holding key material when it goes out of scope.
template <class Buffer>
struct cleanse_on_exit {
  Buffer& b;
  ~cleanse_on_exit() { OPENSSL_cleanse(b.data(), b.size()); }
};

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// AES-256 of one 16-byte block (ECB), the block cipher under RocksDB's CTR
// stream. Each thread keeps one EVP context, keyed for the last cipher it
// served: no state is shared between threads.
class aes_block_cipher final : public rocksdb::BlockCipher {
 public:
  explicit aes_block_cipher(const std::array<uint8_t, key_bytes>& key)
      : key_(key), id_(next_id_.fetch_add(1, std::memory_order_relaxed)) {}
  ~aes_block_cipher() override { OPENSSL_cleanse(key_.data(), key_.size()); }

  const char* Name() const override { return "skein.aes256"; }
  size_t BlockSize() override { return block_bytes; }
  rocksdb::Status Encrypt(char* data) override { return apply(data, true); }
  rocksdb::Status Decrypt(char* data) override { return apply(data, false); }

 private:
  struct thread_context {
    EVP_CIPHER_CTX* ctx = EVP_CIPHER_CTX_new();
    uint64_t owner = 0;  // the cipher id the context is keyed for; 0: none
    bool encrypt = true;
    ~thread_context() { EVP_CIPHER_CTX_free(ctx); }  // frees and cleanses the key schedule
  };

  rocksdb::Status apply(char* data, bool encrypt) {
    thread_local thread_context tc;
    if (tc.ctx == nullptr) return rocksdb::Status::IOError("AES: no cipher context");
    if (tc.owner != id_ || tc.encrypt != encrypt) {
      if (EVP_CipherInit_ex(tc.ctx, EVP_aes_256_ecb(), nullptr, key_.data(), nullptr, encrypt ? 1 : 0) != 1)
        return rocksdb::Status::IOError("AES: init failed");
      EVP_CIPHER_CTX_set_padding(tc.ctx, 0);
      tc.owner = id_;
      tc.encrypt = encrypt;
    }
    unsigned char out[block_bytes];
    int n = 0;
    if (EVP_CipherUpdate(tc.ctx, out, &n, reinterpret_cast<const unsigned char*>(data), block_bytes) != 1 ||
        n != static_cast<int>(block_bytes))
      return rocksdb::Status::IOError("AES: block failed");
    std::memcpy(data, out, block_bytes);
    return rocksdb::Status::OK();
  }

  std::array<uint8_t, key_bytes> key_;
  uint64_t id_;
  static inline std::atomic<uint64_t> next_id_{1};
};

// RocksDB's CTR provider with file prefixes (initial counter and IV) from
// getrandom: see the top of this file. Not OpenSSL's RAND_bytes: that keeps a
// generator per thread, and RocksDB's background threads (which create files)
// outlive every destructor, so the generators would be left at exit.
class random_prefix_provider final : public rocksdb::EncryptionProvider {
 public:
  explicit random_prefix_provider(std::shared_ptr<rocksdb::BlockCipher> cipher)
      : ctr_(rocksdb::EncryptionProvider::NewCTRProvider(cipher)) {}
  const char* Name() const override { return "skein.ctr"; }
  size_t GetPrefixLength() const override { return ctr_->GetPrefixLength(); }
  rocksdb::Status CreateNewPrefix(const std::string&, char* prefix, size_t length) const override {
    if (!random_bytes(prefix, length)) return rocksdb::Status::IOError("getrandom failed for a file prefix");
    return rocksdb::Status::OK();
  }
  rocksdb::Status AddCipher(const std::string&, const char*, size_t, bool) override {
    return rocksdb::Status::NotSupported("skein.ctr: one cipher, given at construction");
  }
  rocksdb::Status CreateCipherStream(const std::string& fname, const rocksdb::EnvOptions& options,
                                     rocksdb::Slice& prefix,
                                     std::unique_ptr<rocksdb::BlockAccessCipherStream>* result) override {
    return ctr_->CreateCipherStream(fname, options, prefix, result);
  }

 private:
  std::shared_ptr<rocksdb::EncryptionProvider> ctr_;
};

std::string key_path(const std::string& dir) { return dir + "/" + key_file_name; }

bool exists(const std::string& path) {
  struct stat st{};
  return ::stat(path.c_str(), &st) == 0;
}

status errno_status(const std::string& what) {
  int e = errno;
  std::string msg = what + ": " + std::strerror(e);
  return e == ENOSPC ? status::no_space(msg) : status::io_error(msg);
}

status fsync_path(const std::string& path, int flags) {
  int fd = ::open(path.c_str(), flags | O_CLOEXEC);
  if (fd < 0) return errno_status("open " + path);
  int r = ::fsync(fd);
  ::close(fd);
  return r == 0 ? status::ok() : errno_status("fsync " + path);
}

// Reads a whole small file (at most `bytes_max`; *too_long when it is longer).
status read_small_file(const std::string& path, size_t bytes_max, std::string* out, bool* too_long) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return status::not_found(path + ": no such file");
    return errno_status("open " + path);
  }
  out->assign(bytes_max + 1, '\0');
  size_t got = 0;
  while (got < out->size()) {
    ssize_t n = ::read(fd, out->data() + got, out->size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      status s = errno_status("read " + path);
      ::close(fd);
      return s;
    }
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  ::close(fd);
  *too_long = got > bytes_max;
  out->resize(got);
  return status::ok();
}

struct key_file {
  std::array<uint8_t, header_bytes> header{};
  std::array<uint8_t, nonce_bytes> nonce{};
  std::array<uint8_t, key_bytes> wrapped{};
  std::array<uint8_t, tag_bytes> tag{};
};

std::array<uint8_t, header_bytes> make_header() {
  std::array<uint8_t, header_bytes> h{};
  std::memcpy(h.data(), "SKEINKEY", 8);
  h[8] = key_file_version;
  h[9] = algorithm_aes256;
  return h;  // reserved: zero
}

// AES-256-GCM of the 32-byte key `in` (encrypt) or of the wrapped key (decrypt,
// checking the tag). false on a tag mismatch or an OpenSSL failure.
bool gcm(bool encrypt, const master_key& mk, const key_file& f, const uint8_t* in, uint8_t* out,
         uint8_t* tag_out) {
  EVP_CIPHER_CTX* ctx = EVP_CIPHER_CTX_new();
  if (ctx == nullptr) return false;
  int n = 0;
  bool ok = EVP_CipherInit_ex(ctx, EVP_aes_256_gcm(), nullptr, nullptr, nullptr, encrypt ? 1 : 0) == 1 &&
            EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_IVLEN, nonce_bytes, nullptr) == 1 &&
            EVP_CipherInit_ex(ctx, nullptr, nullptr, mk.data(), f.nonce.data(), encrypt ? 1 : 0) == 1 &&
            EVP_CipherUpdate(ctx, nullptr, &n, f.header.data(), header_bytes) == 1 &&
            EVP_CipherUpdate(ctx, out, &n, in, key_bytes) == 1 && n == static_cast<int>(key_bytes);
  if (ok && !encrypt)
    ok = EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, tag_bytes, const_cast<uint8_t*>(f.tag.data())) == 1;
  unsigned char final_block[block_bytes];
  ok = ok && EVP_CipherFinal_ex(ctx, final_block, &n) == 1;
  if (ok && encrypt) ok = EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, tag_bytes, tag_out) == 1;
  EVP_CIPHER_CTX_free(ctx);
  return ok;
}

status read_key_file(const std::string& dir, key_file* out) {
  std::string path = key_path(dir);
  std::string bytes;
  bool too_long = false;
  SKEIN_TRY(read_small_file(path, key_file_bytes, &bytes, &too_long));
  if (too_long || bytes.size() != key_file_bytes)
    return status::corruption(path + ": expected " + std::to_string(key_file_bytes) + " bytes");
  std::memcpy(out->header.data(), bytes.data(), header_bytes);
  if (std::memcmp(out->header.data(), "SKEINKEY", 8) != 0) return status::corruption(path + ": not a skein key file");
  if (out->header[8] != key_file_version)
    return status::conflict(path + ": key file version " + std::to_string(out->header[8]) +
                            " is not one this skein reads (1): upgrade skein");
  if (out->header[9] != algorithm_aes256 || out->header[10] != 0 || out->header[11] != 0)
    return status::corruption(path + ": unknown algorithm");
  const char* p = bytes.data() + header_bytes;
  std::memcpy(out->nonce.data(), p, nonce_bytes);
  std::memcpy(out->wrapped.data(), p + nonce_bytes, key_bytes);
  std::memcpy(out->tag.data(), p + nonce_bytes + key_bytes, tag_bytes);
  return status::ok();
}

status unwrap(const std::string& dir, const master_key& mk, std::array<uint8_t, key_bytes>* data_key) {
  key_file f;
  SKEIN_TRY(read_key_file(dir, &f));
  if (!gcm(false, mk, f, f.wrapped.data(), data_key->data(), nullptr)) {
    OPENSSL_cleanse(data_key->data(), data_key->size());
    return status::invalid_input("encrypted database at " + dir +
                                 ": wrong key (the master key does not unwrap its " + key_file_name + ")")
        .with_field("key");
  }
  return status::ok();
}

}  // namespace

master_key::~master_key() { OPENSSL_cleanse(bytes_.data(), bytes_.size()); }

std::string key_source::describe() const {
  return from == kind::file ? "key file " + name : "environment variable " + name;
}

status load_master_key(const key_source& source, master_key* out) {
  std::string text;
  cleanse_on_exit<std::string> wipe_text{text};
  if (source.name.empty()) return status::invalid_input("key source: an empty " +
                                                        std::string(source.from == key_source::kind::file ? "path" : "variable name"));
  if (source.from == key_source::kind::file) {
    bool too_long = false;
    status s = read_small_file(source.name, key_text_bytes_max, &text, &too_long);
    if (s.code() == errc::not_found) return status::not_found(source.describe() + ": no such file");
    if (!s) return status(s.code(), source.describe() + ": cannot be read: " + s.message());
    if (too_long) return status::invalid_input(source.describe() + ": expected 64 hex characters, the file is longer");
  } else {
    const char* v = std::getenv(source.name.c_str());
    if (v == nullptr) return status::not_found(source.describe() + ": not set");
    text = v;
  }
  size_t begin = 0, end = text.size();
  while (begin < end && std::isspace(static_cast<unsigned char>(text[begin]))) ++begin;
  while (end > begin && std::isspace(static_cast<unsigned char>(text[end - 1]))) --end;
  const std::string expected = ": expected 64 hex characters (a 32-byte key) with nothing else but surrounding whitespace";
  if (end - begin != 2 * key_bytes) return status::invalid_input(source.describe() + expected);
  std::array<uint8_t, key_bytes> bytes{};
  cleanse_on_exit<std::array<uint8_t, key_bytes>> wipe_bytes{bytes};
  for (size_t i = 0; i < key_bytes; ++i) {
    int hi = hex_value(text[begin + 2 * i]), lo = hex_value(text[begin + 2 * i + 1]);
    if (hi < 0 || lo < 0) return status::invalid_input(source.describe() + expected);
    bytes[i] = static_cast<uint8_t>(hi << 4 | lo);
  }
  *out = master_key{bytes};
  return status::ok();
}

bool has_database_key(const std::string& dir) { return exists(key_path(dir)); }

status create_database_key(const std::string& dir, const master_key& mk) {
  std::string path = key_path(dir);
  if (exists(path)) return status::conflict(path + ": exists already");
  key_file f;
  f.header = make_header();
  std::array<uint8_t, key_bytes> data_key{};
  cleanse_on_exit<std::array<uint8_t, key_bytes>> wipe{data_key};
  if (!random_bytes(data_key.data(), key_bytes) || !random_bytes(f.nonce.data(), nonce_bytes))
    return status::io_error("getrandom failed making a data key");
  if (!gcm(true, mk, f, data_key.data(), f.wrapped.data(), f.tag.data()))
    return status::io_error("AES-256-GCM failed wrapping the data key");
  std::string bytes;
  bytes.append(reinterpret_cast<const char*>(f.header.data()), header_bytes);
  bytes.append(reinterpret_cast<const char*>(f.nonce.data()), nonce_bytes);
  bytes.append(reinterpret_cast<const char*>(f.wrapped.data()), key_bytes);
  bytes.append(reinterpret_cast<const char*>(f.tag.data()), tag_bytes);

  std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return errno_status("create " + tmp);
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      status s = errno_status("write " + tmp);
      ::close(fd);
      return s;
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) {
    status s = errno_status("fsync " + tmp);
    ::close(fd);
    return s;
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) return errno_status("rename " + tmp);
  return fsync_path(dir, O_RDONLY | O_DIRECTORY);
}

encrypted_env::~encrypted_env() = default;

status open_database_key(const std::string& dir, const master_key* key, rocksdb::Env* base, bool create,
                         std::unique_ptr<encrypted_env>* out) {
  out->reset();
  bool keyed = has_database_key(dir);
  if (!keyed && key == nullptr) return status::ok();
  if (keyed && key == nullptr)
    return status::invalid_input("database at " + dir +
                                 " is encrypted: a key is needed (--key-file PATH or --key-env NAME)")
        .with_field("key");
  if (!keyed) {
    if (exists(dir + "/CURRENT"))
      return status::invalid_input("database at " + dir +
                                   " is not encrypted: use skein rekey to encrypt it (a key was given)")
          .with_field("key");
    if (!create) return status::not_found("database at " + dir + ": does not exist");
    if (::mkdir(dir.c_str(), 0755) == 0) {
      std::string parent = dir.substr(0, dir.find_last_of('/') == std::string::npos ? 0 : dir.find_last_of('/'));
      SKEIN_TRY(fsync_path(parent.empty() ? (dir.front() == '/' ? "/" : ".") : parent, O_RDONLY | O_DIRECTORY));
    } else if (errno != EEXIST) {
      return errno_status("mkdir " + dir);
    }
    SKEIN_TRY(create_database_key(dir, *key));
  }
  std::array<uint8_t, key_bytes> data_key{};
  cleanse_on_exit<std::array<uint8_t, key_bytes>> wipe{data_key};
  SKEIN_TRY(unwrap(dir, *key, &data_key));
  auto cipher = std::make_shared<aes_block_cipher>(data_key);
  auto provider = std::make_shared<random_prefix_provider>(cipher);
  std::unique_ptr<encrypted_env> e{new encrypted_env};
  e->env_.reset(rocksdb::NewEncryptedEnv(base != nullptr ? base : rocksdb::Env::Default(), provider));
  if (!e->env_) return status::io_error("RocksDB refused the encrypted environment");
  *out = std::move(e);
  return status::ok();
}

}  // namespace skein
