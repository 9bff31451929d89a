// Throwaway certificates for TLS tests, made with OpenSSL's C API at test time:
// a CA (key and self-signed certificate), server certificates it signs, for
// the subjectAltName the test names, and cluster nodes' certificates (both
// ends of a link; tls_authority writes their files). Keys are EC P-256 (quick to generate), the
// certificates valid from an hour ago for a day. Nothing here is checked in and
// nothing needs the openssl program. Failures throw std::runtime_error: a test
// that cannot make its certificates cannot run.
#pragma once

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>

#include "runtime/model/cluster.hpp"

namespace skein::test {

struct pem_pair {
  std::string cert;  // PEM
  std::string key;   // PEM, unencrypted
};

namespace tls_detail {

struct pkey_free {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
struct x509_free {
  void operator()(X509* x) const { X509_free(x); }
};
struct bio_free {
  void operator()(BIO* b) const { BIO_free(b); }
};
using pkey_ptr = std::unique_ptr<EVP_PKEY, pkey_free>;
using x509_ptr = std::unique_ptr<X509, x509_free>;
using bio_ptr = std::unique_ptr<BIO, bio_free>;

inline void require(bool ok, const char* what) {
  if (!ok) throw std::runtime_error(std::string("tls_cert: ") + what + " failed");
}

inline std::string bio_text(BIO* b) {
  char* data = nullptr;
  long n = BIO_get_mem_data(b, &data);
  return std::string(data, static_cast<size_t>(n));
}

inline std::string cert_pem(X509* x) {
  bio_ptr b{BIO_new(BIO_s_mem())};
  require(b && PEM_write_bio_X509(b.get(), x) == 1, "PEM_write_bio_X509");
  return bio_text(b.get());
}

inline std::string key_pem(EVP_PKEY* k) {
  bio_ptr b{BIO_new(BIO_s_mem())};
  require(b && PEM_write_bio_PrivateKey(b.get(), k, nullptr, nullptr, 0, nullptr, nullptr) == 1,
          "PEM_write_bio_PrivateKey");
  return bio_text(b.get());
}

inline pkey_ptr read_key(const std::string& pem) {
  bio_ptr b{BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()))};
  pkey_ptr k{b ? PEM_read_bio_PrivateKey(b.get(), nullptr, nullptr, nullptr) : nullptr};
  require(k != nullptr, "PEM_read_bio_PrivateKey");
  return k;
}

inline x509_ptr read_cert(const std::string& pem) {
  bio_ptr b{BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()))};
  x509_ptr x{b ? PEM_read_bio_X509(b.get(), nullptr, nullptr, nullptr) : nullptr};
  require(x != nullptr, "PEM_read_bio_X509");
  return x;
}

inline void add_ext(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_nconf_nid(nullptr, &ctx, nid, value);
  require(ext != nullptr, "X509V3_EXT_nconf_nid");
  int added = X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
  require(added == 1, "X509_add_ext");
}

// An unsigned certificate for `key` named `common_name`, issued by `issuer`
// (null: by itself), valid from `from_s` to `to_s` seconds from now. The
// caller adds extensions, then signs.
inline x509_ptr new_cert(EVP_PKEY* key, const std::string& common_name, X509* issuer, long serial,
                         long from_s = -3600, long to_s = 24 * 3600) {
  x509_ptr x{X509_new()};
  require(x != nullptr, "X509_new");
  require(X509_set_version(x.get(), X509_VERSION_3) == 1, "X509_set_version");
  require(ASN1_INTEGER_set(X509_get_serialNumber(x.get()), serial) == 1, "serial");
  require(X509_gmtime_adj(X509_getm_notBefore(x.get()), from_s) != nullptr, "notBefore");
  require(X509_gmtime_adj(X509_getm_notAfter(x.get()), to_s) != nullptr, "notAfter");
  X509_NAME* name = X509_get_subject_name(x.get());
  require(X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8,
                                     reinterpret_cast<const unsigned char*>(common_name.c_str()), -1, -1, 0) == 1,
          "subject CN");
  require(X509_set_issuer_name(x.get(), issuer ? X509_get_subject_name(issuer) : name) == 1, "issuer name");
  require(X509_set_pubkey(x.get(), key) == 1, "X509_set_pubkey");
  return x;
}

inline pkey_ptr new_key() {
  pkey_ptr k{EVP_EC_gen("P-256")};
  require(k != nullptr, "EVP_EC_gen");
  return k;
}

}  // namespace tls_detail

// A self-signed CA, allowed to sign server certificates.
inline pem_pair make_test_ca(const std::string& common_name = "skein test CA") {
  using namespace tls_detail;
  pkey_ptr key = new_key();
  x509_ptr x = new_cert(key.get(), common_name, nullptr, 1);
  add_ext(x.get(), x.get(), NID_basic_constraints, "critical,CA:TRUE");
  add_ext(x.get(), x.get(), NID_key_usage, "critical,keyCertSign,cRLSign");
  add_ext(x.get(), x.get(), NID_subject_key_identifier, "hash");
  require(X509_sign(x.get(), key.get(), EVP_sha256()) > 0, "X509_sign (CA)");
  return {cert_pem(x.get()), key_pem(key.get())};
}

// A server certificate signed by `ca`, for `alt_names` in subjectAltName syntax
// ("IP:127.0.0.1,DNS:localhost").
inline pem_pair make_server_cert(const pem_pair& ca, const std::string& alt_names, long serial = 2) {
  using namespace tls_detail;
  pkey_ptr ca_key = read_key(ca.key);
  x509_ptr ca_cert = read_cert(ca.cert);
  pkey_ptr key = new_key();
  x509_ptr x = new_cert(key.get(), "skein test server", ca_cert.get(), serial);
  add_ext(x.get(), ca_cert.get(), NID_basic_constraints, "critical,CA:FALSE");
  add_ext(x.get(), ca_cert.get(), NID_key_usage, "critical,digitalSignature");
  add_ext(x.get(), ca_cert.get(), NID_ext_key_usage, "serverAuth");
  add_ext(x.get(), ca_cert.get(), NID_subject_alt_name, alt_names.c_str());
  add_ext(x.get(), ca_cert.get(), NID_authority_key_identifier, "keyid:always");
  require(X509_sign(x.get(), ca_key.get(), EVP_sha256()) > 0, "X509_sign (server)");
  return {cert_pem(x.get()), key_pem(key.get())};
}

// A certificate signed by `ca` for both ends of a TLS link (a cluster node),
// named `common_name`, for the extended key usages `usage`, valid from `from_s`
// to `to_s` seconds from now.
inline pem_pair make_peer_cert(const pem_pair& ca, const std::string& common_name, long serial,
                               const char* usage = "serverAuth,clientAuth", long from_s = -3600,
                               long to_s = 24 * 3600) {
  using namespace tls_detail;
  pkey_ptr ca_key = read_key(ca.key);
  x509_ptr ca_cert = read_cert(ca.cert);
  pkey_ptr key = new_key();
  x509_ptr x = new_cert(key.get(), common_name, ca_cert.get(), serial, from_s, to_s);
  add_ext(x.get(), ca_cert.get(), NID_basic_constraints, "critical,CA:FALSE");
  add_ext(x.get(), ca_cert.get(), NID_key_usage, "critical,digitalSignature");
  add_ext(x.get(), ca_cert.get(), NID_ext_key_usage, usage);
  require(X509_sign(x.get(), ca_key.get(), EVP_sha256()) > 0, "X509_sign (peer)");
  return {cert_pem(x.get()), key_pem(key.get())};
}

inline void write_text_file(const std::string& path, const std::string& text) {
  std::ofstream f{path, std::ios::binary | std::ios::trunc};
  f << text;
  f.close();
  tls_detail::require(static_cast<bool>(f), "writing a PEM file");
}

// A cluster CA of its own with its files in a directory, and the TLS files
// (runtime/model/cluster.hpp, cluster_tls) of nodes it signs.
class tls_authority {
 public:
  tls_authority(std::string dir, const std::string& name) : dir_(std::move(dir)), ca_(make_test_ca(name)) {
    ca_file_ = dir_ + "/" + name + "-ca.pem";
    write_text_file(ca_file_, ca_.cert);
  }

  const std::string& ca_file() const { return ca_file_; }

  // Node `name`'s certificate and key (make_peer_cert's options), with this CA's file.
  cluster_tls node(const std::string& name, long from_s = -3600, long to_s = 30L * 86400,
                   const char* usage = "serverAuth,clientAuth") {
    pem_pair p = make_peer_cert(ca_, name, ++serial_, usage, from_s, to_s);
    cluster_tls t{dir_ + "/" + name + ".crt", dir_ + "/" + name + ".key", ca_file_};
    write_text_file(t.certificate, p.cert);
    write_text_file(t.key, p.key);
    return t;
  }

 private:
  std::string dir_;
  pem_pair ca_;
  std::string ca_file_;
  long serial_ = 1;
};

}  // namespace skein::test
