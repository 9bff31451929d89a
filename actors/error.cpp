#include "actors/error.hpp"

#include <caf/actor_system_config.hpp>
#include <caf/error.hpp>
#include <caf/make_message.hpp>
#include <caf/message.hpp>
#include <caf/sec.hpp>

namespace skein {
namespace {

// The context is (message) or (message, limit, field).
std::string context_text(const caf::message& context) {
  if ((context.size() == 1 || context.size() == 3) && context.match_element<std::string>(0))
    return context.get_as<std::string>(0);
  return context.empty() ? std::string{} : caf::to_string(context);
}

std::string context_part(const caf::message& context, size_t i) {
  if (context.size() == 3 && context.match_element<std::string>(i)) return context.get_as<std::string>(i);
  return {};
}

}  // namespace

caf::error to_error(const status& s) {
  if (s.is_ok()) return caf::error{};
  if (s.limit().empty() && s.field().empty())
    return caf::error{static_cast<uint8_t>(s.code()), error_category, caf::make_message(s.message())};
  return caf::error{static_cast<uint8_t>(s.code()), error_category,
                    caf::make_message(s.message(), s.limit(), s.field())};
}

status to_status(const caf::error& e) {
  if (!e) return status::ok();
  if (e.category() == error_category)
    return status{static_cast<errc>(e.code()), context_text(e.context())}
        .with_limit(context_part(e.context(), 1))
        .with_field(context_part(e.context(), 2));
  if (e.category() == caf::atom("system")) {
    auto code = static_cast<caf::sec>(e.code());
    if (code == caf::sec::request_timeout) return status::overloaded("request timed out");
    return status::io_error("actor system: " + caf::to_string(code));
  }
  return status::io_error(caf::to_string(e));
}

void register_skein_types(caf::actor_system_config& cfg) {
  cfg.add_error_category(error_category, [](uint8_t code, caf::atom_value, const caf::message& ctx) {
    std::string out{to_string(static_cast<errc>(code))};
    auto text = context_text(ctx);
    if (!text.empty()) out += ": " + text;
    return out;
  });
}

}  // namespace skein
