#include "executor/builtin_stages.h"

#include <algorithm>
#include <cctype>
#include <utility>

#include "common/json_reader.h"

namespace warden::executor {
namespace {

using AgentResult = Result<std::unique_ptr<StageAgent>>;

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

class ConstantStage final : public StageAgent {
 public:
  ConstantStage(Json output, int64_t llm_calls) : output_(std::move(output)), llm_calls_(llm_calls) {}
  StageResult run(const StageContext&) override {
    StageResult r;
    r.output = output_;
    r.llm_calls = llm_calls_;
    return r;
  }

 private:
  Json output_;
  int64_t llm_calls_;
};

class ApprovalStage final : public StageAgent {
 public:
  ApprovalStage(std::string question, std::vector<std::string> approve)
      : question_(std::move(question)), approve_(std::move(approve)) {}

  StageResult run(const StageContext& ctx) override {
    const auto& interrupt = ctx.envelope.interrupt;
    StageResult r;
    if (interrupt && interrupt->stage == ctx.spec.name && interrupt->response) {
      std::string answer = lower(*interrupt->response);
      bool approved = std::find(approve_.begin(), approve_.end(), answer) != approve_.end();
      r.output = Json{{"approved", approved}, {"response", *interrupt->response}};
      return r;
    }
    r.interrupt = InterruptRequest{"approval", question_, Json(nullptr)};
    return r;
  }

 private:
  std::string question_;
  std::vector<std::string> approve_;
};

class JoinStage final : public StageAgent {
 public:
  explicit JoinStage(std::vector<std::string> inputs) : inputs_(std::move(inputs)) {}
  StageResult run(const StageContext& ctx) override {
    Json joined = Json::object();
    for (const auto& name : inputs_) {
      auto it = ctx.envelope.outputs.find(name);
      joined[name] = it == ctx.envelope.outputs.end() ? Json::object() : it->second;
    }
    StageResult r;
    r.output = Json{{"joined", std::move(joined)}};
    return r;
  }

 private:
  std::vector<std::string> inputs_;
};

AgentResult make_constant(const PipelineConfig&, const StageSpec& spec, const AgentEnvironment&) {
  JsonReader p(spec.params, "params", JsonDialect::null_is_absent);
  if (!p.has("output")) p.fail("output", "is required for kind constant (the JSON object to answer)");
  Json output = p.object_or_empty("output");
  int64_t calls = p.integer_or("llm_calls", 0, 0, 1'000'000);
  if (auto st = p.finish(); !st) return std::unexpected(st.error());
  return std::make_unique<ConstantStage>(std::move(output), calls);
}

AgentResult make_approval(const PipelineConfig&, const StageSpec& spec, const AgentEnvironment&) {
  JsonReader p(spec.params, "params", JsonDialect::null_is_absent);
  std::string question = p.string_or("question", "Approve stage " + spec.name + "?");
  std::vector<std::string> approve = p.string_list("approve");
  if (auto st = p.finish(); !st) return std::unexpected(st.error());
  if (approve.empty()) approve = {"yes", "y", "approve", "approved"};
  for (auto& a : approve) a = lower(a);
  return std::make_unique<ApprovalStage>(std::move(question), std::move(approve));
}

AgentResult make_join(const PipelineConfig& config, const StageSpec& spec, const AgentEnvironment&) {
  JsonReader p(spec.params, "params", JsonDialect::null_is_absent);
  if (auto st = p.finish(); !st) return std::unexpected(st.error());
  if (spec.required.empty()) return fail(Errc::invalid_argument, "requires: a join must require the stages it joins");
  std::vector<std::string> inputs;
  for (StageId id : spec.required) inputs.push_back(config.stages[id].name);
  return std::make_unique<JoinStage>(std::move(inputs));
}

}  // namespace

void add_builtin_stages(AgentRegistry& registry) {
  registry.add("constant", make_constant);
  registry.add("approval", make_approval);
  registry.add("join", make_join);
}

}  // namespace warden::executor
