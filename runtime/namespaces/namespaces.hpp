// namespace_set: many tenants in one data directory. Each namespace is its own
// skein::runtime over its own RocksDB database, so no key of one namespace is in
// another's database: a listing, a memory search, a usage query or an export in
// one namespace cannot read another's keys, and a foreign id answers as a missing
// one because it is one. Deleting a namespace removes its database whole.
//
// Layout of the data directory:
//   namespaces.json        the registry: names, creation times, quotas (replaced atomically)
//   namespaces/<name>/     one event log (RocksDB) per namespace, opened on first use
// A data directory that is itself an event log (skein before namespaces) is
// moved in place into namespaces/default/ at open, crash-safely.
//
// Thread-safe. A runtime is handed out as a lease (shared_ptr): a namespace's
// runtime closes when it is removed (or the set closes) and the last lease drops.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/model/ids.hpp"
#include "runtime/runtime.hpp"

namespace skein {

class json_writer;
namespace json {
class object_reader;
}

inline constexpr size_t namespaces_max = 10000;

// A namespace's quotas are its database's (persistence/event_log.hpp: what each
// limit counts, 0: unlimited), and so is what they measure.
using namespace_quota = log_quota;
using namespace_usage = log_usage;

// A quota as JSON, the registry's and the HTTP API's:
// {"threads_max":N,"events_per_day_max":N,"storage_bytes_max":N}.
void write_namespace_quota(json_writer& w, const namespace_quota& q);
// Its fields from the object `r`; with `required` false one left out keeps its
// value in *out. An error names its field as `r` names it.
status read_namespace_quota(const json::object_reader& r, bool required, namespace_quota* out);

struct namespace_info {
  std::string name;
  int64_t created_at_ms = 0;
  namespace_quota quota;
};

struct namespace_set_options {
  std::string data_dir = "./skein-data";
  // What every namespace's runtime opens with; data_dir and quota are set per
  // namespace. Its clock (if any) also stamps created_at_ms.
  runtime_options runtime;
};

class namespace_set {
 public:
  static status open(namespace_set_options options, std::unique_ptr<namespace_set>* out);
  ~namespace_set();
  namespace_set(const namespace_set&) = delete;
  namespace_set& operator=(const namespace_set&) = delete;

  // conflict when the name is taken; invalid_input names the field.
  status create(const std::string& name, const namespace_quota& quota, namespace_info* out = nullptr);
  status get(const std::string& name, namespace_info* out) const;
  status list(std::vector<namespace_info>* out) const;  // by name
  status set_quota(const std::string& name, const namespace_quota& quota, namespace_info* out = nullptr);
  // What the namespace holds now against its quota (opens it if needed).
  status usage(const std::string& name, namespace_usage* out);
  // Unregisters the namespace (no new lease), waits for the leases in use to
  // drop, closes its runtime and erases its database. The default namespace
  // cannot be removed. not_found when absent.
  status remove(const std::string& name);
  // The namespace's runtime, opened on first use. not_found when absent.
  status runtime_of(const std::string& name, std::shared_ptr<runtime>* out);
  // Closes every runtime (after their leases drop). Idempotent.
  status close();

  const std::string& data_dir() const;
  // The directory of a namespace's event log.
  std::string database_dir(const std::string& name) const;

 private:
  struct impl;
  explicit namespace_set(std::unique_ptr<impl> p);
  std::unique_ptr<impl> impl_;
};

// One namespace of a data directory, for a tool that embeds the runtime (skein
// serve, skein mcp --data, skein demo): a namespace set on disk, or a lone
// runtime in memory mode (one namespace, "default").
struct embedded_namespace {
  std::unique_ptr<namespace_set> set;  // null in memory mode
  std::unique_ptr<runtime> single;     // memory mode only
  std::shared_ptr<runtime> rt;         // the namespace's runtime
  // Drops `rt` and closes what was opened.
  status close();
};
status open_embedded(runtime_options options, const std::string& ns, embedded_namespace* out);

}  // namespace skein
