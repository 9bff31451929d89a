// What work_common.hpp declares.
#include "tools/server/routes/work_common.hpp"

#include <charconv>

#include "runtime/model/json_reader.hpp"
#include "tools/server/work_json.hpp"

namespace skein::server {

status project_of(std::string text, std::string* out) {
  if (text.empty()) text = std::string{work_default_project};
  SKEIN_TRY(validate_work_project(text, "project"));
  *out = std::move(text);
  return status::ok();
}

status body_project(const json::object_reader& r, std::string* out) {
  std::string text;
  SKEIN_TRY(r.string("project", &text, false));
  if (r.has("project") && text.empty()) return r.invalid("project", "empty");
  return r.about("project", project_of(std::move(text), out));
}

status query_count(const http::request& req, const std::string& name, size_t fallback, size_t max,
                   std::string_view limit, size_t* out) {
  auto it = req.query.find(name);
  if (it == req.query.end()) {
    *out = fallback;
    return status::ok();
  }
  const std::string& t = it->second;
  uint64_t v = 0;
  auto r = std::from_chars(t.data(), t.data() + t.size(), v);
  if (t.empty() || r.ptr != t.data() + t.size() || r.ec != std::errc{} || v == 0 || v > max)
    return status::invalid_input(name + ": must be an integer between 1 and " + std::to_string(max))
        .with_limit(std::string{limit})
        .with_field(name);
  *out = static_cast<size_t>(v);
  return status::ok();
}

status query_bool(const http::request& req, const std::string& name, bool* out) {
  auto it = req.query.find(name);
  std::string v = it == req.query.end() ? std::string{} : it->second;
  if (v.empty() || v == "false") *out = false;
  else if (v == "true") *out = true;
  else return status::invalid_input(name + ": must be true or false").with_field(name);
  return status::ok();
}

std::string created_answer(runtime& rt, const work_create_result& r) {
  work_entry e;
  work_vitality v;
  if (rt.get_item(r.thread.id, &e)) v = e.vitality;
  return created_json(r, v);
}

}  // namespace skein::server
