// The Envelope: all the state of one pipeline run, carried from stage to stage. Every member
// is a value type, so a copy is a deep copy: clone() is the copy constructor, and a checkpoint
// taken with it shares nothing with the live envelope.
//
// Times are integer milliseconds from the injected Clock (never wall-clock reads here), so
// an envelope and its JSON are deterministic under a LogicalClock.
//
// Threads: a plain struct with no lock. Concurrent const reads are safe (parallel stages share
// one read-only envelope); any write needs the run's driving thread to have the envelope to
// itself. Nothing here is durable: the run journal records envelopes.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/canonical_json.h"
#include "common/error.h"

namespace warden::executor {

// Why a run ended.
enum class TerminalReason {
  completed,                // every branch reached "end"
  max_iterations_exceeded,  // a cycle would pass the global iteration limit
  max_llm_calls_exceeded,   // the LLM-call budget is spent
  max_agent_hops_exceeded,  // the next step would pass the agent-hop budget
  edge_limit_exceeded,      // a cycle edge was taken more often than its max_count
  max_stages_exceeded,      // multi-stage execution would pass max_stages
  stage_failed,             // a stage failed and has no error_next
  deadlock,                 // stages wait for stages that will never complete
  cancelled,                // the caller stopped the run
};
std::string_view terminal_reason_name(TerminalReason reason);
std::optional<TerminalReason> parse_terminal_reason(std::string_view name);

// One agent's processing of one step.
struct ProcessingRecord {
  std::string agent;
  int64_t stage_order = 0;  // the stage's index in the config
  int64_t started_at = 0;
  std::optional<int64_t> completed_at;
  int64_t duration_ms = 0;
  std::string status = "running";  // running | success | error | interrupted | skipped
  std::optional<std::string> error;
  int64_t llm_calls = 0;

  bool operator==(const ProcessingRecord&) const = default;
};

// A pause for a human (or another system): raised by a stage, answered on resume.
struct FlowInterrupt {
  std::string id;
  std::string kind;   // e.g. "approval", "clarification"
  std::string stage;  // the stage that raised it, and that runs again on resume
  std::optional<std::string> question;
  Json payload;  // an object, or null
  int64_t created_at = 0;
  std::optional<std::string> response;
  std::optional<int64_t> responded_at;

  bool operator==(const FlowInterrupt&) const = default;
};

struct Envelope {
  // Identification
  std::string envelope_id;
  std::string request_id;
  std::string user_id;
  std::string session_id;

  // Input
  std::string raw_input;
  std::optional<int64_t> received_at;

  // Outputs, per stage name (each a JSON object)
  std::map<std::string, Json> outputs;

  // Pipeline state
  std::string current_stage = "start";
  std::vector<std::string> stage_order;
  int64_t iteration = 0;
  int64_t max_iterations = 3;

  // Bounds
  int64_t llm_call_count = 0;
  int64_t max_llm_calls = 10;
  int64_t agent_hop_count = 0;
  int64_t max_agent_hops = 21;
  std::optional<TerminalReason> terminal_reason;

  // Control flow
  bool terminated = false;
  std::optional<std::string> termination_reason;

  // Interrupt
  bool interrupt_pending = false;
  std::optional<FlowInterrupt> interrupt;

  // Parallel execution: scheduled stages, stages done in the current pass, failures
  std::map<std::string, bool> active_stages;
  std::map<std::string, bool> completed_stage_set;
  std::map<std::string, std::string> failed_stages;
  bool parallel_mode = false;

  // Multi-stage goals
  std::vector<Json> completed_stages;
  int64_t current_stage_number = 1;
  int64_t max_stages = 5;
  std::vector<std::string> all_goals;
  std::vector<std::string> remaining_goals;
  std::map<std::string, std::string> goal_completion_status;  // goal -> pending | complete

  // Retry
  std::vector<Json> prior_plans;
  std::vector<std::string> loop_feedback;

  // Audit
  std::vector<ProcessingRecord> processing_history;
  std::vector<Json> errors;

  // Timing
  std::optional<int64_t> created_at;
  std::optional<int64_t> completed_at;

  // Metadata
  Json metadata = Json::object();

  bool operator==(const Envelope&) const = default;

  // A deep copy: nothing is shared with this envelope.
  Envelope clone() const { return *this; }

  // The first bound the next step would break, if any. `hops_needed` is how many stages the
  // step would run.
  std::optional<TerminalReason> bounds_exceeded(int64_t hops_needed = 1) const;

  // Multi-stage goals.
  void initialize_goals(const std::vector<std::string>& goals);
  // False when `goal` is not one of all_goals.
  bool mark_goal_complete(std::string_view goal);
  // Closes the current stage (recorded in completed_stages) and starts the next one.
  void advance_stage();
  // What a stage needs to know about multi-stage progress.
  Json stage_context() const;
  // True when at least `min_progress_stages` stages have closed and the last that many
  // completed no goal.
  bool is_stuck(int64_t min_progress_stages = 2) const;
  int64_t completed_goal_count() const;
};

// The complete state as JSON: every field, timestamps as integer milliseconds, absent optionals
// as null. Lossless: envelope_from_json(envelope_to_json(e)) == e.
Json envelope_to_json(const Envelope& envelope);
// The inverse. Missing fields take their defaults; unknown or mistyped fields are refused
// with the field named. The error carries `code` (invalid_argument for input, corrupt when
// the caller is reading back its own records): the JSON is wrong, nothing was changed.
Result<Envelope> envelope_from_json(const Json& json, std::string_view what = "envelope",
                                    Errc code = Errc::invalid_argument);

Json interrupt_to_json(const FlowInterrupt& interrupt);

}  // namespace warden::executor
