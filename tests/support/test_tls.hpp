// Certificates for tests of TLS between nodes: a cluster CA of its own (EC
// P-256, self-signed) and node certificates it signs, written as PEM files.
// Made with OpenSSL's API at test time: nothing checked in expires.
#pragma once

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>

#include "runtime/model/cluster.hpp"

namespace skein::test {

class tls_authority {
 public:
  // A CA named `name` with its files in `dir` (ca_file(): its certificate).
  tls_authority(std::string dir, const std::string& name) : dir_(std::move(dir)) {
    key_.reset(EVP_EC_gen("P-256"));
    cert_.reset(make(name, key_.get(), nullptr, key_.get(), true, -3600, 30L * 86400, "serverAuth,clientAuth"));
    ca_file_ = dir_ + "/" + name + "-ca.pem";
    write_cert(ca_file_, cert_.get());
  }

  const std::string& ca_file() const { return ca_file_; }

  // A node certificate signed by this CA, valid from `from_s` to `to_s`
  // seconds from now, for the extended key usages `usage`; with this CA's file.
  cluster_tls node(const std::string& name, long from_s = -3600, long to_s = 30L * 86400,
                   const char* usage = "serverAuth,clientAuth") const {
    std::unique_ptr<EVP_PKEY, key_free> key{EVP_EC_gen("P-256")};
    std::unique_ptr<X509, cert_free> cert{make(name, key.get(), cert_.get(), key_.get(), false, from_s, to_s, usage)};
    cluster_tls t;
    t.certificate = dir_ + "/" + name + ".crt";
    t.key = dir_ + "/" + name + ".key";
    t.ca = ca_file_;
    write_cert(t.certificate, cert.get());
    FILE* f = std::fopen(t.key.c_str(), "w");
    if (f == nullptr || PEM_write_PrivateKey(f, key.get(), nullptr, nullptr, 0, nullptr, nullptr) != 1)
      throw std::runtime_error("cannot write " + t.key);
    std::fclose(f);
    return t;
  }

 private:
  struct key_free {
    void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
  };
  struct cert_free {
    void operator()(X509* x) const { X509_free(x); }
  };

  static void add_ext(X509* x, X509* issuer, int nid, const char* value) {
    X509V3_CTX ctx;
    X509V3_set_ctx(&ctx, issuer != nullptr ? issuer : x, x, nullptr, nullptr, 0);
    X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
    if (ext == nullptr) throw std::runtime_error("cannot make a certificate extension");
    X509_add_ext(x, ext, -1);
    X509_EXTENSION_free(ext);
  }

  static X509* make(const std::string& name, EVP_PKEY* key, X509* issuer, EVP_PKEY* issuer_key, bool ca, long from_s,
                    long to_s, const char* usage) {
    static long serial = 1;
    X509* x = X509_new();
    X509_set_version(x, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(x), serial++);
    X509_gmtime_adj(X509_getm_notBefore(x), from_s);
    X509_gmtime_adj(X509_getm_notAfter(x), to_s);
    X509_set_pubkey(x, key);
    X509_NAME* subject = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(name.c_str()), -1,
                               -1, 0);
    X509_set_issuer_name(x, issuer != nullptr ? X509_get_subject_name(issuer) : subject);
    add_ext(x, issuer, NID_basic_constraints, ca ? "critical,CA:TRUE" : "critical,CA:FALSE");
    add_ext(x, issuer, NID_key_usage, ca ? "critical,keyCertSign,cRLSign" : "critical,digitalSignature,keyEncipherment");
    if (!ca) add_ext(x, issuer, NID_ext_key_usage, usage);
    if (X509_sign(x, issuer_key, EVP_sha256()) == 0) throw std::runtime_error("cannot sign a certificate");
    return x;
  }

  static void write_cert(const std::string& path, X509* x) {
    FILE* f = std::fopen(path.c_str(), "w");
    if (f == nullptr || PEM_write_X509(f, x) != 1) throw std::runtime_error("cannot write " + path);
    std::fclose(f);
  }

  std::string dir_;
  std::string ca_file_;
  std::unique_ptr<EVP_PKEY, key_free> key_;
  std::unique_ptr<X509, cert_free> cert_;
};

}  // namespace skein::test
