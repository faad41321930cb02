// Pipeline configs: what a valid config compiles to, and that every kind of bad config is
// refused with the offending field named. Cycles are not an error.
#include "executor/pipeline_config.h"

#include <gtest/gtest.h>

#include <memory>

#include "executor/agent_registry.h"

namespace warden::executor {
namespace {

constexpr const char* kLoop = R"({
  "name": "loop",
  "stages": [
    {"name": "intent", "kind": "constant", "params": {"output": {}}, "default_next": "critic", "timeout_seconds": 5},
    {"name": "critic", "kind": "command", "command": ["./critic.sh", "--strict"], "env": {"MODE": "x"},
     "routing": [
       {"when": {"field": "verdict", "op": "equals", "value": "reintent"}, "next": "intent"},
       {"when": {"field": "review.score", "op": "gte", "value": 7}, "next": ["a", "b"], "advance_stage": true}
     ],
     "error_next": "fix"},
    {"name": "fix", "kind": "constant", "params": {"output": {}}, "default_next": "critic"},
    {"name": "a", "kind": "constant", "params": {"output": {}}, "default_next": "join"},
    {"name": "b", "kind": "constant", "params": {"output": {}}, "default_next": "join"},
    {"name": "join", "kind": "join", "requires": ["a", "b"]}
  ],
  "edge_limits": [{"from": "critic", "to": "intent", "max_count": 3}],
  "max_iterations": 4, "max_llm_calls": 9, "max_agent_hops": 50, "default_timeout_seconds": 12, "max_parallel": 2
})";

// A launcher binding may hold but that must never be asked to start anything.
class NeverLaunched final : public CommandLauncher {
 public:
  Result<SubprocessResult> launch(const LaunchRequest&) override {
    ADD_FAILURE() << "binding started a program";
    return fail(Errc::internal, "never launched");
  }
  LaunchConfinement confinement() const override { return {}; }
};

std::string bind_error_without_launcher(const PipelineConfig& config) {
  auto agents = standard_agents().bind(config, {});
  return agents ? std::string("(bound)") : agents.error().message;
}

std::string error_of(std::string_view text) {
  auto c = PipelineConfig::parse_text(text, "cfg");
  if (c) return "(parsed)";
  return c.error().message;
}

TEST(PipelineConfig, CompilesStagesRoutingAndBounds) {
  auto c = PipelineConfig::parse_text(kLoop, "cfg");
  ASSERT_TRUE(c) << c.error().message;
  ASSERT_EQ(c->stages.size(), 6u);
  EXPECT_EQ(c->name, "loop");
  EXPECT_EQ(c->start, 0);
  EXPECT_EQ(*c->find("critic"), 1);
  EXPECT_FALSE(c->find("nope"));
  const StageSpec& intent = c->stages[0];
  EXPECT_EQ(intent.timeout_seconds, 5);
  EXPECT_EQ(intent.default_next, std::vector<StageId>{1});
  const StageSpec& critic = c->stages[1];
  EXPECT_EQ(critic.command, (std::vector<std::string>{"./critic.sh", "--strict"}));
  EXPECT_EQ(critic.env.at("MODE"), "x");
  EXPECT_EQ(critic.timeout_seconds, 12);  // the default
  EXPECT_EQ(critic.default_next, std::vector<StageId>{kEnd});
  EXPECT_EQ(critic.error_next, 2);
  ASSERT_EQ(critic.routing.size(), 2u);
  EXPECT_EQ(critic.routing[0].next, std::vector<StageId>{0});
  EXPECT_EQ(critic.routing[1].when.path, (std::vector<std::string>{"review", "score"}));
  EXPECT_EQ(critic.routing[1].when.op, ConditionOp::gte);
  EXPECT_EQ(critic.routing[1].next, (std::vector<StageId>{3, 4}));
  EXPECT_TRUE(critic.routing[1].advance_stage);
  EXPECT_EQ(c->stages[5].required, (std::vector<StageId>{3, 4}));
  ASSERT_EQ(c->edge_limits.size(), 1u);
  EXPECT_EQ(c->edge_limit_index(1, 0), 0);
  EXPECT_EQ(c->edge_limit_index(0, 1), -1);
  EXPECT_EQ(c->max_iterations, 4);
  EXPECT_EQ(c->max_llm_calls, 9);
  EXPECT_EQ(c->max_agent_hops, 50);
  EXPECT_EQ(c->max_parallel, 2);
  // Cycles (critic -> intent, fix -> critic) are accepted; they are what the executor bounds.
  EXPECT_TRUE(PipelineConfig::is_cycle_edge(1, 0));
  EXPECT_TRUE(PipelineConfig::is_cycle_edge(2, 1));
  EXPECT_TRUE(PipelineConfig::is_cycle_edge(1, 1));
  EXPECT_FALSE(PipelineConfig::is_cycle_edge(0, 1));
  EXPECT_FALSE(PipelineConfig::is_cycle_edge(1, kEnd));
  // Every kind and its params bind with the standard agents; a command stage needs a
  // launcher to run through, and binding starts nothing.
  auto unlaunchable = bind_error_without_launcher(*c);
  EXPECT_NE(unlaunchable.find("stages[1] (critic): command stages need a launcher"), std::string::npos) << unlaunchable;
  EXPECT_TRUE(standard_agents().bind(*c, {{}, std::make_shared<NeverLaunched>()}));
}

TEST(PipelineConfig, DefaultsFollowTheSeeds) {
  auto c = PipelineConfig::parse_text(R"({"name":"one","stages":[{"name":"s","kind":"constant"}]})", "cfg");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->max_iterations, 3);
  EXPECT_EQ(c->max_llm_calls, 10);
  EXPECT_EQ(c->max_agent_hops, 21);
  EXPECT_EQ(c->default_timeout_seconds, 30);
  EXPECT_EQ(c->stages[0].default_next, std::vector<StageId>{kEnd});
  EXPECT_EQ(c->stages[0].error_next, kEnd);
}

TEST(PipelineConfig, RefusesBadConfigsNamingTheField) {
  struct Case {
    const char* text;
    const char* message;
  };
  const Case cases[] = {
      {R"({"name": "x", "stages": [)", "cfg"},  // malformed JSON names the input
      {R"([1, 2])", "must be a JSON object"},
      {R"({"stages": [{"name": "a", "kind": "k"}]})", "name: is required"},
      {R"({"name": "x", "stages": []})", "stages: must list at least one stage"},
      {R"({"name": "x", "stages": [{"name": "a", "kind": "k"}], "extra": 1})", "extra: unknown field"},
      {R"({"name": "x", "stages": [{"name": "a", "kind": "k", "defualt_next": "a"}]})",
       "stages[0].defualt_next: unknown field"},
      {R"({"name": "x", "stages": [{"name": "a", "kind": "k", "default_next": "b"}]})",
       "stages[0].default_next: unknown stage \"b\" (stages: a)"},
      {R"({"name": "x", "stages": [{"name": "a", "kind": "k", "error_next": "zz"}]})",
       "stages[0].error_next: unknown stage \"zz\""},
      {R"({"name": "x", "stages": [{"name": "a", "kind": "k", "requires": ["q"]}, {"name": "q", "kind": "k"}], "start": "a"})",
       "start stage \"a\" cannot wait"},
      {R"({"name": "x", "stages": [{"name": "a", "kind": "k"}, {"name": "b", "kind": "k", "requires": ["c"]}]})",
       "stages[1].requires[0]: unknown stage \"c\""},
      {R"({"name": "x", "stages": [{"name": "a", "kind": "k"}, {"name": "a", "kind": "k"}]})",
       "stages[1].name: duplicate stage name \"a\""},
      {R"({"name": "x", "stages": [{"name": "end", "kind": "k"}]})", "\"end\" is reserved"},
      {R"({"name": "x", "stages": [{"name": "a b", "kind": "k"}]})", "is not a stage name"},
      {R"({"name": "x", "stages": [{"name": "a", "kind": "Bad-Kind"}]})", "stages[0].kind: \"Bad-Kind\" is not a kind"},
      {R"({"name": "x", "stages": [{"name": "a", "kind": "command"}]})", "stages[0].command: is required"},
      {R"({"name": "x", "stages": [{"name": "a", "kind": "k", "command": ["x"]}]})", "command: is only for kind"},
      {R"({"name": "x", "stages": [{"name": "a", "kind": "k", "routing": [{"when": {"field": "v", "op": "eq", "value": 1}, "next": "end"}]}]})",
       "stages[0].routing[0].when.op: unknown operator \"eq\""},
      {R"({"name": "x", "stages": [{"name": "a", "kind": "k", "routing": [{"when": {"field": "v", "op": "gt", "value": "7"}, "next": "end"}]}]})",
       "stages[0].routing[0].when.value: must be an integer for gt"},
      {R"({"name": "x", "stages": [{"name": "a", "kind": "k", "routing": [{"when": {"field": "v", "op": "in", "value": 3}, "next": "end"}]}]})",
       "when.value: must be an array for in"},
      {R"({"name": "x", "stages": [{"name": "a", "kind": "k", "routing": [{"when": {"field": "v", "op": "exists"}}]}]})",
       "stages[0].routing[0].next: is required"},
      {R"({"name": "x", "stages": [{"name": "a", "kind": "k", "routing": [{"when": {"field": "v..w", "op": "exists"}, "next": "a"}]}]})",
       "empty path segment"},
      {R"({"name": "x", "stages": [{"name": "a", "kind": "k", "default_next": ["a", "end"]}]})",
       "stages[0].default_next[1]: \"end\" is not a stage here"},
      {R"({"name": "x", "stages": [{"name": "a", "kind": "k", "default_next": ["a", "a"]}]})", "names a stage twice"},
      {R"({"name": "x", "stages": [{"name": "a", "kind": "k"}], "edge_limits": [{"from": "a", "to": "b", "max_count": 1}]})",
       "edge_limits[0].to: unknown stage \"b\""},
      {R"({"name": "x", "stages": [{"name": "a", "kind": "k"}], "edge_limits": [{"from": "a", "to": "a", "max_count": -1}]})",
       "edge_limits[0].max_count: must be between 0"},
      {R"({"name": "x", "stages": [{"name": "a", "kind": "k"}], "edge_limits": [{"from": "a", "to": "a", "max_count": 1}, {"from": "a", "to": "a", "max_count": 2}]})",
       "a second limit for the edge a -> a"},
      {R"({"name": "x", "stages": [{"name": "a", "kind": "k"}], "max_llm_calls": 0})", "max_llm_calls: must be between 1"},
      {R"({"name": "x", "stages": [{"name": "a", "kind": "k"}], "max_iterations": 2.5})", "floating-point number at /max_iterations"},
      {R"({"name": "x", "stages": [{"name": "a", "kind": "k", "params": {"p": 0.1}}]})", "floating-point number at /stages/0/params/p"},
      {R"({"name": "x", "stages": [{"name": "a", "kind": "k", "timeout_seconds": 0}]})", "stages[0].timeout_seconds: must be between 1"},
  };
  for (const auto& c : cases) {
    EXPECT_NE(error_of(c.text).find(c.message), std::string::npos) << c.text << "\n  -> " << error_of(c.text);
  }
}

TEST(AgentRegistry, RefusesUnknownKindsAndBadParamsNamingTheStage) {
  auto bind_error = [](const char* text) {
    auto c = PipelineConfig::parse_text(text, "cfg");
    EXPECT_TRUE(c) << c.error().message;
    auto agents = standard_agents().bind(*c, {});
    return agents ? std::string("(bound)") : agents.error().message;
  };
  EXPECT_NE(bind_error(R"({"name":"x","stages":[{"name":"a","kind":"llm"}]})")
                .find("stages[0] (a).kind: unknown stage kind \"llm\" (known: approval, command, constant, join)"),
            std::string::npos);
  EXPECT_NE(bind_error(R"({"name":"x","stages":[{"name":"a","kind":"constant"}]})").find("stages[0] (a): params.output: is required"),
            std::string::npos);
  EXPECT_NE(bind_error(R"({"name":"x","stages":[{"name":"a","kind":"constant","params":{"output":{},"x":1}}]})")
                .find("params.x: unknown field"),
            std::string::npos);
  EXPECT_NE(bind_error(R"({"name":"x","stages":[{"name":"a","kind":"join"}]})").find("a join must require"),
            std::string::npos);
}

}  // namespace
}  // namespace warden::executor
