#include "runtime/cluster/cluster_tls.hpp"

#include <dlfcn.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <vector>

namespace skein {
namespace {

constexpr size_t tls_file_bytes_max = 1 << 20;  // a PEM file larger than this is not a certificate or key

struct bio_free {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct x509_free {
  void operator()(X509* x) const { X509_free(x); }
};
struct pkey_free {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
struct store_free {
  void operator()(X509_STORE* s) const { X509_STORE_free(s); }
};
struct store_ctx_free {
  void operator()(X509_STORE_CTX* c) const { X509_STORE_CTX_free(c); }
};
struct chain_free {
  void operator()(STACK_OF(X509) * s) const { sk_X509_pop_free(s, X509_free); }
};
using x509_ptr = std::unique_ptr<X509, x509_free>;

status refuse(const char* setting, const std::string& path, const std::string& why) {
  return status::invalid_input(std::string{setting} + ": " + path + ": " + why).with_field(setting);
}

// OpenSSL's last error, and the queue cleared.
std::string openssl_error() {
  std::string out;
  while (unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    if (!out.empty()) out += "; ";
    out += buf;
  }
  return out.empty() ? "no detail" : out;
}

status read_file(const char* setting, const std::string& path, std::string* out) {
  std::ifstream in{path, std::ios::binary};
  if (!in) return refuse(setting, path, "cannot open");
  out->assign(tls_file_bytes_max + 1, '\0');
  in.read(out->data(), static_cast<std::streamsize>(out->size()));
  out->resize(static_cast<size_t>(in.gcount()));
  if (out->size() > tls_file_bytes_max)
    return refuse(setting, path, "larger than " + std::to_string(tls_file_bytes_max) + " bytes");
  return status::ok();
}

// Every certificate of a PEM text, in order; none is an error.
status read_certificates(const char* setting, const std::string& path, const std::string& pem,
                         std::vector<x509_ptr>* out) {
  std::unique_ptr<BIO, bio_free> bio{BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()))};
  while (X509* x = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) out->emplace_back(x);
  ERR_clear_error();  // the end of the text reads as an error
  if (out->empty()) return refuse(setting, path, "no PEM certificate in it");
  return status::ok();
}

// A key protected by a passphrase is refused, not asked for on a terminal.
int no_passphrase(char*, int, int, void*) { return -1; }

// The three files' bytes, as read once.
struct tls_pems {
  std::string cert, key, ca;
};

status read_pems(const cluster_tls& t, tls_pems* out) {
  SKEIN_TRY(read_file("cluster_cert", t.certificate, &out->cert));
  SKEIN_TRY(read_file("cluster_key", t.key, &out->key));
  return read_file("cluster_ca", t.ca, &out->ca);
}

// check_cluster_tls on bytes read from the files `t` names (named in refusals).
status check_pems(const cluster_tls& t, const tls_pems& pems) {
  ERR_clear_error();
  const std::string& ca_pem = pems.ca;
  const std::string& cert_pem = pems.cert;
  const std::string& key_pem = pems.key;
  std::vector<x509_ptr> cas, chain;
  SKEIN_TRY(read_certificates("cluster_ca", t.ca, ca_pem, &cas));
  for (const auto& c : cas)
    if (X509_check_ca(c.get()) == 0)
      return refuse("cluster_ca", t.ca, "a certificate in it is not a CA (no basicConstraints CA:TRUE)");
  SKEIN_TRY(read_certificates("cluster_cert", t.certificate, cert_pem, &chain));

  std::unique_ptr<BIO, bio_free> key_bio{BIO_new_mem_buf(key_pem.data(), static_cast<int>(key_pem.size()))};
  std::unique_ptr<EVP_PKEY, pkey_free> key{PEM_read_bio_PrivateKey(key_bio.get(), nullptr, no_passphrase, nullptr)};
  if (!key) {
    bool encrypted = key_pem.find("ENCRYPTED") != std::string::npos;
    std::string detail = openssl_error();
    return refuse("cluster_key", t.key,
                  encrypted ? "the key is encrypted: give an unencrypted key (readable by this node alone)"
                            : "no PEM private key in it (" + detail + ")");
  }
  X509* leaf = chain.front().get();
  if (X509_check_private_key(leaf, key.get()) != 1) {
    ERR_clear_error();
    return refuse("cluster_key", t.key, "does not match the certificate in " + t.certificate);
  }

  // Verified as a peer will: against the CA alone, now, for both ends of a link.
  std::unique_ptr<X509_STORE, store_free> store{X509_STORE_new()};
  for (const auto& c : cas) X509_STORE_add_cert(store.get(), c.get());
  std::unique_ptr<STACK_OF(X509), chain_free> untrusted{sk_X509_new_null()};
  for (size_t i = 1; i < chain.size(); ++i) {
    X509_up_ref(chain[i].get());
    sk_X509_push(untrusted.get(), chain[i].get());
  }
  for (int purpose : {X509_PURPOSE_SSL_SERVER, X509_PURPOSE_SSL_CLIENT}) {
    std::unique_ptr<X509_STORE_CTX, store_ctx_free> ctx{X509_STORE_CTX_new()};
    if (!ctx || X509_STORE_CTX_init(ctx.get(), store.get(), leaf, untrusted.get()) != 1)
      return status::io_error("cluster_cert: cannot set up a verification: " + openssl_error());
    X509_STORE_CTX_set_purpose(ctx.get(), purpose);
    if (X509_verify_cert(ctx.get()) != 1) {
      int err = X509_STORE_CTX_get_error(ctx.get());
      ERR_clear_error();
      const char* end = purpose == X509_PURPOSE_SSL_SERVER ? "server" : "client";
      return refuse("cluster_cert", t.certificate,
                    std::string{"does not verify against the cluster CA in "} + t.ca + " as a TLS " + end + ": " +
                        X509_verify_cert_error_string(err));
    }
  }
  return status::ok();
}

}  // namespace

status check_cluster_tls(const cluster_tls& t) {
  tls_pems pems;
  SKEIN_TRY(read_pems(t, &pems));
  return check_pems(t, pems);
}

cluster_tls_files::~cluster_tls_files() {
  if (dir_.empty()) return;
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

status cluster_tls_files::open(const cluster_tls& t) {
  // Read once: the bytes checked are the bytes copied.
  tls_pems pems;
  SKEIN_TRY(read_pems(t, &pems));
  SKEIN_TRY(check_pems(t, pems));
  std::string base = std::filesystem::temp_directory_path().string() + "/skein-tls-XXXXXX";
  std::vector<char> name(base.begin(), base.end());
  name.push_back('\0');
  if (::mkdtemp(name.data()) == nullptr)
    return status::io_error("cluster TLS: cannot make a private directory for the node's TLS files in " +
                            std::filesystem::temp_directory_path().string());
  dir_ = name.data();  // mkdtemp: mode 0700
  auto write = [&](const std::string& bytes, const char* as, std::string* to) -> status {
    *to = dir_ + "/" + as;
    std::ofstream out{*to, std::ios::binary | std::ios::trunc};
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.close();
    if (!out) return status::io_error("cluster TLS: cannot write " + *to);
    return status::ok();
  };
  SKEIN_TRY(write(pems.cert, "cert.pem", &copies_.certificate));
  SKEIN_TRY(write(pems.key, "key.pem", &copies_.key));
  return write(pems.ca, "ca.pem", &copies_.ca);
}

}  // namespace skein

// OpenSSL keeps one error queue per thread, and SSL_get_error() reads it: it
// answers reliably only when the queue was empty before the TLS call
// (SSL_get_error(3)). CAF 0.17's OpenSSL module runs every link on its
// multiplexer thread and never empties the queue: once one link fails (a peer
// that closed without close_notify — a SIGKILL, a node closing — or a handshake
// a certificate of another CA failed), the next call on another, healthy link
// that only wants more bytes is taken for an error and that link is closed.
// Seen as the first call between two other nodes timing out right after a
// third node went away, and as a pair of nodes whose second link (dialed from
// the other end; CAF's BASP closes the spare) took the first one down with it.
// These definitions take the place of libssl's four calls CAF makes (the executable's, or libskein's, symbols come first in the
// dynamic linker's search) and empty the queue before each, as the manual
// asks; then libssl's own function runs. Beast's TLS (openai_http.cpp) empties
// it itself before each call already.
namespace {
void* libssl_function(const char* name) {
  static void* lib = dlopen("libssl.so.3", RTLD_NOW | RTLD_NOLOAD);
  void* f = lib != nullptr ? dlsym(lib, name) : nullptr;
  if (f == nullptr) f = dlsym(RTLD_NEXT, name);
  if (f == nullptr) {
    std::fprintf(stderr, "skein: cannot find libssl's %s\n", name);
    std::abort();
  }
  return f;
}
}  // namespace

extern "C" int SSL_read(SSL* s, void* buf, int num) {
  static auto real = reinterpret_cast<int (*)(SSL*, void*, int)>(libssl_function("SSL_read"));
  ERR_clear_error();
  return real(s, buf, num);
}

extern "C" int SSL_write(SSL* s, const void* buf, int num) {
  static auto real = reinterpret_cast<int (*)(SSL*, const void*, int)>(libssl_function("SSL_write"));
  ERR_clear_error();
  return real(s, buf, num);
}

extern "C" int SSL_connect(SSL* s) {
  static auto real = reinterpret_cast<int (*)(SSL*)>(libssl_function("SSL_connect"));
  ERR_clear_error();
  return real(s);
}

extern "C" int SSL_accept(SSL* s) {
  static auto real = reinterpret_cast<int (*)(SSL*)>(libssl_function("SSL_accept"));
  ERR_clear_error();
  return real(s);
}
