#include "runtime/model/tool.hpp"

namespace skein {
namespace {

class noop_handle final : public call_handle {
 public:
  void cancel() override {}
};

class function_tool final : public tool {
 public:
  function_tool(tool_spec spec, std::function<tool_output(const tool_invocation&)> fn)
      : spec_(std::move(spec)), fn_(std::move(fn)) {}

  const tool_spec& spec() const override { return spec_; }

  std::unique_ptr<call_handle> invoke(tool_invocation call,
                                      std::function<void(tool_output)> done) override {
    tool_output out;
    try {
      out = fn_(call);
    } catch (const std::exception& e) {
      out = {std::string("tool threw: ") + e.what(), true};
    }
    done(std::move(out));
    return std::make_unique<noop_handle>();
  }

 private:
  tool_spec spec_;
  std::function<tool_output(const tool_invocation&)> fn_;
};

}  // namespace

std::shared_ptr<tool> make_function_tool(tool_spec spec,
                                         std::function<tool_output(const tool_invocation&)> fn) {
  return std::make_shared<function_tool>(std::move(spec), std::move(fn));
}

}  // namespace skein
