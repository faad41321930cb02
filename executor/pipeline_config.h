// A pipeline config: the capability that defines the graph the executor runs. Stages (agents)
// with a kind, routing rules on their outputs, default and error successors, `requires` for
// joins, per-edge cycle limits and the run's bounds. Parsing validates everything and names
// the offending field; unknown stage names are errors, cycles are not (the executor bounds
// them with edge limits and the global iteration limit).
//
// Stages are referred to by StageId, their index in `stages`; the config order is also the
// order that decides which edges are backward jumps (cycles).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/canonical_json.h"
#include "common/error.h"

namespace warden::executor {

using StageId = int32_t;
inline constexpr StageId kEnd = -1;  // the pseudo-stage "end"
inline constexpr std::string_view kEndName = "end";

enum class ConditionOp { equals, not_equals, in, exists, lt, lte, gt, gte };
std::string_view condition_op_name(ConditionOp op);

// A test on one field of a stage's output; `field` may be a dotted path ("review.verdict").
struct Condition {
  std::string field;
  std::vector<std::string> path;  // `field` split at dots
  ConditionOp op = ConditionOp::equals;
  Json value;           // equals/not_equals: any value; in: an array; lt..gte: an integer
  bool exists = true;   // exists: whether the field must be present or absent
};

struct RoutingRule {
  Condition when;
  std::vector<StageId> next;   // one stage, several (fan-out), or {kEnd}
  bool advance_stage = false;  // taking this rule advances the multi-stage goal counter
};

struct StageSpec {
  StageId id = 0;
  std::string name;
  std::string kind;                          // "command" or a built-in kind
  std::vector<std::string> command;          // kind "command": argv
  std::map<std::string, std::string> env;    // kind "command": extra environment
  int64_t timeout_seconds = 0;               // resolved: the stage's own or the default
  Json params = Json::object();              // handed to the agent as given
  std::vector<StageId> required;             // config "requires": stages that must have completed first
  std::vector<StageId> default_next{kEnd};
  StageId error_next = kEnd;                 // kEnd: a failure ends the run (stage_failed)
  std::vector<RoutingRule> routing;          // first match wins
};

struct EdgeLimit {
  StageId from = 0, to = 0;
  int64_t max_count = 0;  // 0: only the global iteration limit applies
};

struct PipelineConfig {
  std::string name;
  std::string description;
  std::vector<StageSpec> stages;
  StageId start = 0;
  std::vector<EdgeLimit> edge_limits;
  int64_t max_iterations = 3;
  int64_t max_llm_calls = 10;
  int64_t max_agent_hops = 21;
  int64_t default_timeout_seconds = 30;
  int64_t max_parallel = 4;  // worker threads for stages that run together
  int64_t max_stages = 5;    // multi-stage goal execution: how many stages a run may advance to
  Json source;               // the config as given
  std::string canonical;     // its canonical JSON: stored once in the blob store, named by each run
  std::string digest;        // "sha256:<hex>" of `canonical`

  static Result<PipelineConfig> parse(const Json& config);
  static Result<PipelineConfig> parse_text(std::string_view text, std::string_view what);

  std::optional<StageId> find(std::string_view name) const;
  std::string_view stage_name(StageId id) const { return id == kEnd ? kEndName : std::string_view(stages[id].name); }
  // Index into edge_limits for from->to, or -1.
  int edge_limit_index(StageId from, StageId to) const;
  // A backward (or self) jump in config order: what the executor counts as a cycle.
  static bool is_cycle_edge(StageId from, StageId to) { return to != kEnd && to <= from; }

 private:
  friend class ConfigParser;
  struct NameHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, StageId, NameHash, std::equal_to<>> index_;
};

}  // namespace warden::executor
