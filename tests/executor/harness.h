// Test support for the executor suites: configs from JSON text, executors whose stages are
// C++ functions (the way the kernel plugs its stages in), and a recorder of events.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "executor/agent_registry.h"
#include "executor/state_machine.h"

namespace warden::executor::testing {

inline PipelineConfig parse_config(std::string_view text) {
  auto c = PipelineConfig::parse_text(text, "test config");
  if (!c) throw std::runtime_error(c.error().message);
  return std::move(*c);
}

using StageFns = std::map<std::string, FunctionAgent::Function>;

// Agents for `config`: the given functions by stage name, standard agents for the rest.
inline AgentSet make_agents(const PipelineConfig& config, const StageFns& fns, const AgentEnvironment& env = {}) {
  AgentRegistry registry = standard_agents();
  for (const auto& [name, fn] : fns) {
    registry.add("test_" + name, [fn](const PipelineConfig&, const StageSpec&, const AgentEnvironment&)
                                     -> Result<std::unique_ptr<StageAgent>> { return std::make_unique<FunctionAgent>(fn); });
  }
  PipelineConfig renamed = config;
  for (auto& s : renamed.stages) {
    if (fns.contains(s.name)) s.kind = "test_" + s.name;
  }
  auto agents = registry.bind(renamed, env);
  if (!agents) throw std::runtime_error(agents.error().message);
  return std::move(*agents);
}

inline StageResult output(Json out, int64_t llm_calls = 0) {
  StageResult r;
  r.output = std::move(out);
  r.llm_calls = llm_calls;
  return r;
}

// Answers outputs[i] on its i-th call (the last one repeats).
inline FunctionAgent::Function sequence(std::vector<Json> outputs, int64_t llm_calls = 0) {
  auto calls = std::make_shared<std::atomic<size_t>>(0);
  return [outputs = std::move(outputs), calls, llm_calls](const StageContext&) {
    size_t i = std::min(calls->fetch_add(1), outputs.size() - 1);
    return output(outputs[i], llm_calls);
  };
}

inline FunctionAgent::Function always(Json out, int64_t llm_calls = 0) { return sequence({std::move(out)}, llm_calls); }

// A config, an executor with a logical clock and sequential ids, and every event it emitted.
struct Harness {
  explicit Harness(std::string_view config_text, const StageFns& fns = {}, const AgentEnvironment& env = {})
      : config(parse_config(config_text)), exec(config, make_agents(config, fns, env), clock, ids) {
    exec.subscribe([this](const ExecutionEvent& e) { events.push_back(e); });
  }
  Harness(const Harness&) = delete;
  Harness& operator=(const Harness&) = delete;

  RunState start(std::string input = "input") {
    RunInput in;
    in.raw_input = std::move(input);
    auto run = exec.start(in);
    if (!run) throw std::runtime_error(run.error().message);
    return std::move(*run);
  }
  RunState run(std::string input = "input") {
    RunState r = start(std::move(input));
    auto st = exec.run(r);
    if (!st) throw std::runtime_error(st.error().message);
    return r;
  }
  std::vector<std::string> event_types() const {
    std::vector<std::string> out;
    for (const auto& e : events) out.push_back(std::string(event_type_name(e.type)) + (e.stage.empty() ? "" : ":" + e.stage));
    return out;
  }

  LogicalClock clock{1000, 1};
  SequentialIdSource ids;
  PipelineConfig config;
  PipelineExecutor exec;
  std::vector<ExecutionEvent> events;
};

// "from>to:reason" per transition, for compact assertions.
inline std::vector<std::string> moves(const RunState& run) {
  std::vector<std::string> out;
  for (const auto& t : run.transitions) out.push_back(t.from + ">" + t.to + ":" + std::string(transition_reason_name(t.reason)));
  return out;
}

inline TerminalReason reason_of(const RunState& run) {
  return run.envelope.terminal_reason.value_or(TerminalReason::completed);
}

}  // namespace warden::executor::testing
