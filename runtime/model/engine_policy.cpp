#include "runtime/model/engine_policy.hpp"

#include <algorithm>
#include <array>
#include <string>

#include "runtime/model/json_reader.hpp"

namespace skein {
namespace {

constexpr std::array<std::string_view, 3> openai_thread_keys = {"model", "temperature", "max_tokens"};

}  // namespace

status check_thread_engine_patch(std::string_view engine, std::string_view patch) {
  if (patch.empty() || patch == "{}") return status::ok();
  bool openai = engine == "openai";
  if (!openai && engine != "process") return status::ok();
  json::document doc;
  json_limits limits;
  SKEIN_TRY(json::parse(patch, limits, "engine_config", &doc));
  simdjson::dom::object object;
  if (doc.root().get_object().get(object))
    return status::invalid_input("engine_config: must be a JSON object").with_field("engine_config");
  for (auto field : object) {
    std::string_view key = field.key;
    bool allowed = openai && std::find(openai_thread_keys.begin(), openai_thread_keys.end(), key) !=
                                 openai_thread_keys.end();
    if (allowed) continue;
    std::string shown = quote_input(key, 64);  // cut on a UTF-8 boundary
    std::string what = openai ? "only model, temperature and max_tokens" : "nothing";
    return status::invalid_input("engine_config." + shown + ": a thread may not set it for engine " +
                                 std::string(engine) + " (a thread may set " + what + ")")
        .with_field("engine_config." + shown);
  }
  return status::ok();
}

}  // namespace skein
