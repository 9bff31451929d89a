#include "runtime/namespaces/namespaces.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

#include "runtime/model/ids.hpp"
#include "runtime/model/json_reader.hpp"
#include "runtime/model/json_writer.hpp"

namespace skein {
namespace {

namespace fs = std::filesystem;

constexpr const char* registry_file = "namespaces.json";
constexpr const char* databases_dir = "namespaces";
// A legacy data directory being moved into namespaces/default/ (see migrate()).
constexpr const char* migrating_dir = "default.migrating";
constexpr uint64_t registry_version = 1;

status errno_status(const std::string& what) { return status::io_error(what + ": " + std::strerror(errno)); }

status fsync_path(const fs::path& p) {
  int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno_status("open " + p.string());
  int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) return errno_status("fsync " + p.string());
  return status::ok();
}

// Writes `bytes` to `path` so that a crash leaves the old file or the new one.
status replace_file(const fs::path& path, const std::string& bytes) {
  fs::path tmp = path;
  tmp += ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return errno_status("create " + tmp.string());
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ::close(fd);
      return errno_status("write " + tmp.string());
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) {
    ::close(fd);
    return errno_status("fsync " + tmp.string());
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) return errno_status("rename " + tmp.string());
  return fsync_path(path.parent_path());
}

std::string encode_registry(const std::map<std::string, namespace_info>& all) {
  std::string out;
  json_writer w{&out};
  w.begin_object();
  w.field_uint("version", registry_version);
  w.key("namespaces");
  w.begin_array();
  for (const auto& [name, info] : all) {
    w.begin_object();
    w.field("name", name);
    w.field_int("created_at_ms", info.created_at_ms);
    w.key("quota");
    write_namespace_quota(w, info.quota);
    w.end_object();
  }
  w.end_array();
  w.end_object();
  out += '\n';
  return out;
}

status decode_registry(const std::string& text, std::map<std::string, namespace_info>* out) {
  json::document doc;
  json_limits limits{64 << 20, 16};
  json::object_reader root;
  SKEIN_TRY(json::parse_object(text, limits, registry_file, &doc, &root));
  uint64_t version = 0;
  SKEIN_TRY(root.uint("version", &version));
  if (version != registry_version)
    return status::corruption(std::string(registry_file) + ": unknown version " + std::to_string(version));
  json::dom::element list;
  SKEIN_TRY(root.element("namespaces", &list));
  json::dom::array arr;
  if (list.get_array().get(arr)) return status::corruption(std::string(registry_file) + ".namespaces: not an array");
  size_t i = 0;
  for (json::dom::element el : arr) {
    std::string ctx = std::string(registry_file) + ".namespaces[" + std::to_string(i++) + "]";
    json::object_reader o;
    SKEIN_TRY(json::object_reader::open(el, ctx, &o));
    namespace_info info;
    SKEIN_TRY(o.string("name", &info.name));
    SKEIN_TRY(validate_namespace(info.name, o.name("name")));
    SKEIN_TRY(o.int64("created_at_ms", &info.created_at_ms));
    json::dom::element q;
    SKEIN_TRY(o.element("quota", &q));
    json::object_reader qr;
    SKEIN_TRY(json::object_reader::open(q, o.name("quota"), &qr));
    SKEIN_TRY(read_namespace_quota(qr, true, &info.quota));
    if (out->count(info.name)) return status::corruption(ctx + ": namespace " + info.name + " listed twice");
    std::string name = info.name;
    out->emplace(std::move(name), std::move(info));
  }
  return status::ok();
}


// Holds RocksDB's own lock file of a legacy database while its files move, so
// that a process that has it open (an older skein) makes the move refuse.
class legacy_lock {
 public:
  status acquire(const fs::path& lock_file) {
    fd_ = ::open(lock_file.c_str(), O_RDWR | O_CLOEXEC);
    if (fd_ < 0) return errno == ENOENT ? status::ok() : errno_status("open " + lock_file.string());
    struct flock f {};
    f.l_type = F_WRLCK;
    f.l_whence = SEEK_SET;
    if (::fcntl(fd_, F_SETLK, &f) != 0)
      return status::conflict("the event log at " + lock_file.parent_path().string() +
                              " is open in another process: stop it before this skein moves it into namespaces/");
    return status::ok();
  }
  ~legacy_lock() {
    if (fd_ >= 0) ::close(fd_);
  }

 private:
  int fd_ = -1;
};

// A data directory that is itself an event log (it has RocksDB's CURRENT) is
// moved into namespaces/default/: first namespaces/default.migrating/ is
// created, then every entry of the data directory except the new layout's moves
// into it one rename at a time, then it is renamed to namespaces/default. A
// crash anywhere leaves default.migrating/ behind, and the next open goes on.
status migrate(const fs::path& root) {
  fs::path dbs = root / databases_dir;
  fs::path staging = dbs / migrating_dir;
  std::error_code ec;
  bool legacy = fs::exists(root / "CURRENT", ec);
  bool resuming = fs::exists(staging, ec);
  if (!legacy && !resuming) return status::ok();
  if (fs::exists(dbs / std::string(default_namespace), ec))
    return status::corruption("data directory " + root.string() +
                              " holds both an event log and namespaces/default: move one away");
  legacy_lock lock;
  SKEIN_TRY(lock.acquire(root / "LOCK"));
  fs::create_directories(staging, ec);
  if (ec) return status::io_error("create " + staging.string() + ": " + ec.message());
  SKEIN_TRY(fsync_path(dbs));
  SKEIN_TRY(fsync_path(root));
  for (const auto& entry : fs::directory_iterator(root, ec)) {
    std::string name = entry.path().filename().string();
    if (name == databases_dir || name == registry_file || name == std::string(registry_file) + ".tmp") continue;
    if (::rename(entry.path().c_str(), (staging / name).c_str()) != 0) return errno_status("move " + entry.path().string());
  }
  if (ec) return status::io_error("list " + root.string() + ": " + ec.message());
  SKEIN_TRY(fsync_path(staging));
  SKEIN_TRY(fsync_path(root));
  if (::rename(staging.c_str(), (dbs / std::string(default_namespace)).c_str()) != 0)
    return errno_status("rename " + staging.string());
  return fsync_path(dbs);
}

}  // namespace

// Set by a runtime's deleter once it closed.
struct close_state {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  status result;

  void wait() {
    std::unique_lock<std::mutex> lock{mu};
    cv.wait(lock, [&] { return done; });
  }
};

// One registered namespace's runtime, while open. `lease` is the set's own
// reference; the runtime closes in its deleter when the last lease drops.
struct open_runtime {
  std::shared_ptr<runtime> lease;
  std::shared_ptr<close_state> closed;
};

struct namespace_set::impl {
  namespace_set_options options;
  fs::path root;
  mutable std::mutex mu;
  std::map<std::string, namespace_info> registry;
  std::map<std::string, open_runtime> open;
  // One per namespace, held while its database opens or is erased: a cold open
  // (recovery may read for a while) holds up its own namespace only, and a
  // removal never erases a database that is being opened.
  std::map<std::string, std::shared_ptr<std::mutex>> gates;
  bool closed = false;

  std::shared_ptr<std::mutex> gate(const std::string& name) {  // under mu
    auto& g = gates[name];
    if (!g) g = std::make_shared<std::mutex>();
    return g;
  }

  int64_t now() const { return options.runtime.clock ? options.runtime.clock() : now_ms(); }

  status save() const { return replace_file(root / registry_file, encode_registry(registry)); }

  fs::path dir_of(const std::string& name) const { return root / databases_dir / name; }

  // Drops the set's reference and waits for the runtime to close.
  static status close_entry(open_runtime& e) {
    auto state = e.closed;
    e.lease.reset();
    state->wait();
    return state->result;
  }
};

namespace_set::namespace_set(std::unique_ptr<impl> p) : impl_(std::move(p)) {}

namespace_set::~namespace_set() { close().ignore(); }

status namespace_set::open(namespace_set_options options, std::unique_ptr<namespace_set>* out) {
  if (options.data_dir.empty()) return status::invalid_input("data_dir: must not be empty").with_field("data_dir");
  if (options.runtime.mode == durability::memory)
    return status::invalid_input("namespaces keep one database per namespace on disk: durability memory is not supported");
  auto p = std::make_unique<impl>();
  p->root = fs::path(options.data_dir);
  p->options = std::move(options);
  std::error_code ec;
  fs::create_directories(p->root / databases_dir, ec);
  if (ec) return status::io_error("create " + (p->root / databases_dir).string() + ": " + ec.message());
  SKEIN_TRY(migrate(p->root));

  fs::path reg = p->root / registry_file;
  if (fs::exists(reg, ec)) {
    std::ifstream in(reg, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    if (!in.good() && !in.eof()) return status::io_error("read " + reg.string());
    SKEIN_TRY(decode_registry(text.str(), &p->registry));
  }
  if (!p->registry.count(std::string(default_namespace))) {
    namespace_info d;
    d.name = default_namespace;
    d.created_at_ms = p->now();
    p->registry.emplace(d.name, d);
    SKEIN_TRY(p->save());
  }
  // A database whose namespace is not registered is what a removal left when it
  // stopped after unregistering: finish it. Names hold no '.', so a rekey's
  // sibling directories (<name>.rekey...) stay with their registered namespace.
  for (const auto& entry : fs::directory_iterator(p->root / databases_dir, ec)) {
    std::string name = entry.path().filename().string();
    std::string base = name.substr(0, name.find('.'));
    if (p->registry.count(base)) continue;
    fs::remove_all(entry.path(), ec);
    if (ec) return status::io_error("remove " + entry.path().string() + ": " + ec.message());
  }
  out->reset(new namespace_set(std::move(p)));
  return status::ok();
}

status namespace_set::create(const std::string& name, const namespace_quota& quota, namespace_info* out) {
  SKEIN_TRY(validate_namespace(name, "name"));
  std::lock_guard<std::mutex> lock{impl_->mu};
  if (impl_->closed) return status::io_error("the namespace set is closed");
  if (impl_->registry.count(name)) return status::conflict("namespace " + name + " exists");
  if (impl_->registry.size() >= namespaces_max)
    return status::invalid_input("namespaces: at most namespaces_max (" + std::to_string(namespaces_max) + ")")
        .with_limit("namespaces_max");
  namespace_info info;
  info.name = name;
  info.created_at_ms = impl_->now();
  info.quota = quota;
  impl_->registry.emplace(name, info);
  if (status s = impl_->save(); !s) {
    impl_->registry.erase(name);
    return s;
  }
  if (out != nullptr) *out = info;
  return status::ok();
}

status namespace_set::get(const std::string& name, namespace_info* out) const {
  std::lock_guard<std::mutex> lock{impl_->mu};
  auto it = impl_->registry.find(name);
  if (it == impl_->registry.end()) return status::not_found("namespace " + name + " not found");
  *out = it->second;
  return status::ok();
}

status namespace_set::list(std::vector<namespace_info>* out) const {
  std::lock_guard<std::mutex> lock{impl_->mu};
  out->clear();
  for (const auto& [name, info] : impl_->registry) out->push_back(info);
  return status::ok();
}

status namespace_set::set_quota(const std::string& name, const namespace_quota& quota, namespace_info* out) {
  std::lock_guard<std::mutex> lock{impl_->mu};
  auto it = impl_->registry.find(name);
  if (it == impl_->registry.end()) return status::not_found("namespace " + name + " not found");
  namespace_quota before = it->second.quota;
  it->second.quota = quota;
  if (status s = impl_->save(); !s) {
    it->second.quota = before;
    return s;
  }
  if (auto o = impl_->open.find(name); o != impl_->open.end()) SKEIN_TRY(o->second.lease->set_quota(quota));
  if (out != nullptr) *out = it->second;
  return status::ok();
}

status namespace_set::usage(const std::string& name, namespace_usage* out) {
  std::shared_ptr<runtime> rt;
  SKEIN_TRY(runtime_of(name, &rt));
  return rt->quota_usage(out);
}

status namespace_set::remove(const std::string& name) {
  if (name == default_namespace)
    return status::invalid_input("namespace default cannot be removed").with_field("name");
  open_runtime entry;
  {
    std::lock_guard<std::mutex> lock{impl_->mu};
    auto it = impl_->registry.find(name);
    if (it == impl_->registry.end()) return status::not_found("namespace " + name + " not found");
    namespace_info was = it->second;
    impl_->registry.erase(it);
    if (status s = impl_->save(); !s) {
      impl_->registry.emplace(name, was);
      return s;
    }
    if (auto o = impl_->open.find(name); o != impl_->open.end()) {
      entry = std::move(o->second);
      impl_->open.erase(o);
    }
  }
  // Unregistered: no new lease. The runtime closes once the requests using it
  // end; an open in progress finishes (and closes what it opened) first.
  if (entry.lease) SKEIN_TRY(impl::close_entry(entry));
  std::shared_ptr<std::mutex> gate;
  {
    std::lock_guard<std::mutex> lock{impl_->mu};
    gate = impl_->gate(name);
  }
  std::lock_guard<std::mutex> erasing{*gate};
  std::error_code ec;
  // The rekey's sibling directories go too (namespace names hold no '.').
  for (const auto& e : fs::directory_iterator(impl_->root / databases_dir, ec)) {
    std::string n = e.path().filename().string();
    if (n == name || n.rfind(name + ".", 0) == 0) fs::remove_all(e.path(), ec);
    if (ec) return status::io_error("remove " + e.path().string() + ": " + ec.message());
  }
  return fsync_path(impl_->root / databases_dir);
}

status namespace_set::runtime_of(const std::string& name, std::shared_ptr<runtime>* out) {
  std::shared_ptr<std::mutex> gate;
  {
    std::lock_guard<std::mutex> lock{impl_->mu};
    if (impl_->closed) return status::io_error("the namespace set is closed");
    if (!impl_->registry.count(name)) return status::not_found("namespace " + name + " not found");
    if (auto o = impl_->open.find(name); o != impl_->open.end()) {
      *out = o->second.lease;
      return status::ok();
    }
    gate = impl_->gate(name);
  }
  std::lock_guard<std::mutex> opening{*gate};
  runtime_options ro;
  {
    std::lock_guard<std::mutex> lock{impl_->mu};
    if (impl_->closed) return status::io_error("the namespace set is closed");
    auto it = impl_->registry.find(name);
    if (it == impl_->registry.end()) return status::not_found("namespace " + name + " not found");
    if (auto o = impl_->open.find(name); o != impl_->open.end()) {  // opened while this call waited
      *out = o->second.lease;
      return status::ok();
    }
    ro = impl_->options.runtime;
    ro.data_dir = impl_->dir_of(name).string();
    ro.quota = it->second.quota;
  }
  std::unique_ptr<runtime> rt;
  SKEIN_TRY(runtime::open(std::move(ro), &rt));
  auto state = std::make_shared<close_state>();
  open_runtime e;
  e.closed = state;
  e.lease = std::shared_ptr<runtime>(rt.release(), [state](runtime* r) {
    status s = r->close();
    delete r;
    std::lock_guard<std::mutex> l{state->mu};
    state->result = s;
    state->done = true;
    state->cv.notify_all();
  });
  std::lock_guard<std::mutex> lock{impl_->mu};
  // Removed or closed while it opened: the runtime closes here (`e` goes before
  // the gate opens), and a removal waiting at the gate erases it after.
  if (impl_->closed) return status::io_error("the namespace set is closed");
  if (!impl_->registry.count(name)) return status::not_found("namespace " + name + " not found");
  *out = e.lease;
  impl_->open.emplace(name, std::move(e));
  return status::ok();
}

status namespace_set::close() {
  std::map<std::string, open_runtime> open;
  {
    std::lock_guard<std::mutex> lock{impl_->mu};
    if (impl_->closed) return status::ok();
    impl_->closed = true;
    open.swap(impl_->open);
  }
  status result;
  for (auto& [name, e] : open) {
    status s = impl::close_entry(e);
    if (result.is_ok() && !s.is_ok()) result = s;
  }
  return result;
}

const std::string& namespace_set::data_dir() const { return impl_->options.data_dir; }

std::string namespace_set::database_dir(const std::string& name) const { return impl_->dir_of(name).string(); }

status open_embedded(runtime_options options, const std::string& ns, embedded_namespace* out) {
  SKEIN_TRY(validate_namespace(ns));
  if (options.mode == durability::memory) {
    if (ns != default_namespace) return status::not_found("namespace " + ns + " not found: in memory there is only default");
    SKEIN_TRY(runtime::open(std::move(options), &out->single));
    out->rt = std::shared_ptr<runtime>(out->single.get(), [](runtime*) {});
    return status::ok();
  }
  namespace_set_options no;
  no.data_dir = options.data_dir;
  no.runtime = std::move(options);
  SKEIN_TRY(namespace_set::open(std::move(no), &out->set));
  return out->set->runtime_of(ns, &out->rt);
}

status embedded_namespace::close() {
  rt.reset();
  if (set) return set->close();
  if (single) return single->close();
  return status::ok();
}

void write_namespace_quota(json_writer& w, const namespace_quota& q) {
  w.begin_object();
  w.field_uint("threads_max", q.threads_max);
  w.field_uint("events_per_day_max", q.events_per_day_max);
  w.field_uint("storage_bytes_max", q.storage_bytes_max);
  w.end_object();
}

status read_namespace_quota(const json::object_reader& r, bool required, namespace_quota* out) {
  SKEIN_TRY(r.uint("threads_max", &out->threads_max, required));
  SKEIN_TRY(r.uint("events_per_day_max", &out->events_per_day_max, required));
  return r.uint("storage_bytes_max", &out->storage_bytes_max, required);
}

}  // namespace skein
