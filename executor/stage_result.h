// What a stage answers: its output, the LLM calls it made, and optionally a failure, an
// interrupt (a question for a human) and effects on the envelope's multi-stage and retry
// fields. Stages never change the envelope themselves; the executor applies their results,
// so a run can be replayed from the results recorded in the ledger.
//
// The JSON form is both the command-agent answer protocol and the recorded form:
//   {"output": {...}, "llm_calls": 2, "error": "...", "interrupt": {"kind", "question", "payload"},
//    "feedback": [...], "goals": [...], "completed_goals": [...], "prior_plan": {...}, "metadata": {...}}
// Every field is optional; absent output means {}.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/canonical_json.h"
#include "common/error.h"

namespace warden::executor {

struct InterruptRequest {
  std::string kind;  // [a-z0-9_]{1,64}, e.g. "approval"
  std::optional<std::string> question;
  Json payload;  // an object, or null

  bool operator==(const InterruptRequest&) const = default;
};

struct StageEffects {
  std::vector<std::string> feedback;         // appended to loop_feedback
  std::vector<std::string> goals;            // non-empty: initialize_goals(goals)
  std::vector<std::string> completed_goals;  // mark_goal_complete for each
  std::optional<Json> prior_plan;            // appended to prior_plans
  Json metadata;                             // an object: its top-level keys are set in metadata

  bool empty() const {
    return feedback.empty() && goals.empty() && completed_goals.empty() && !prior_plan && metadata.empty();
  }
  bool operator==(const StageEffects&) const = default;
};

struct StageResult {
  Json output = Json::object();
  int64_t llm_calls = 0;
  std::optional<std::string> error;  // set: the stage failed (routes to error_next)
  std::optional<InterruptRequest> interrupt;
  StageEffects effects;

  static StageResult failure(std::string message, int64_t llm_calls = 0) {
    StageResult r;
    r.error = std::move(message);
    r.llm_calls = llm_calls;
    return r;
  }
  bool operator==(const StageResult&) const = default;
};

// Only the fields that differ from their defaults.
Json stage_result_to_json(const StageResult& result);
// Strict: unknown fields, wrong types, floats and out-of-range integers are refused, naming
// the field under `what`.
Result<StageResult> stage_result_from_json(const Json& json, std::string_view what, Errc code = Errc::invalid_argument);
// The checks stage_result_from_json makes, for results built in C++ (built-in stages).
Status validate_stage_result(const StageResult& result);

}  // namespace warden::executor
