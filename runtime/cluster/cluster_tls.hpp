// cluster_tls: the files of TLS between nodes (runtime/model/cluster.hpp,
// cluster_tls), checked at open as a peer would check them, and copied so that
// CAF's OpenSSL module reads files nobody changes under it.
//
// CAF 0.17's OpenSSL module reads the certificate, key and CA files again for
// every connection and aborts the process's network loop when one does not load
// (CAF_RAISE_ERROR inside the multiplexer). So a node checks them before its
// actor system starts — each refusal names its setting — and hands CAF private
// copies: a certificate renewed or deleted on disk while the node runs changes
// nothing until it restarts.
#pragma once

#include <string>

#include "runtime/model/cluster.hpp"
#include "runtime/model/status.hpp"

namespace skein {

// invalid_input naming the setting (cluster_cert, cluster_key, cluster_ca) when
// a file cannot be read, holds no PEM of its kind, the key is encrypted or does
// not match the certificate, the CA is not a CA, or the certificate does not
// verify against the CA now (expired, not yet valid, another CA) or may not
// serve as both ends of a TLS link.
status check_cluster_tls(const cluster_tls& tls);

// Private copies of the three files (a directory of this process, mode 0700),
// removed when destroyed.
class cluster_tls_files {
 public:
  cluster_tls_files() = default;
  ~cluster_tls_files();
  cluster_tls_files(const cluster_tls_files&) = delete;
  cluster_tls_files& operator=(const cluster_tls_files&) = delete;

  // Reads the files once, checks those bytes (check_cluster_tls) and writes
  // them to the copies; paths() names the copies.
  status open(const cluster_tls& tls);
  const cluster_tls& paths() const { return copies_; }

 private:
  std::string dir_;
  cluster_tls copies_;
};

}  // namespace skein
