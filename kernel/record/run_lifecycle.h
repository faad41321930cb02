// The run lifecycle: a build run moves queued -> planning -> running -> verifying -> completed,
// and may end failed, timeout or cancelled from any live state. A run whose process died before
// recording its end is recorded `interrupted` by the next process that notices
// (run_recovery.h); no lifecycle moves there.
// Every run ends in exactly one terminal state; the lifecycle refuses any other move, so a
// bug that would skip a state or leave a run dangling fails loudly instead. Typed events
// (run_started, step_started, ...) are what clients see and what the ledger records.
//
// RunLifecycle and RunEvent are plain values with no lock and no I/O: one lifecycle per run,
// moved by the thread that drives the run; recording events durably is the caller's job. An
// Error from move() or fail() (Errc::internal) is a bug in the caller — a move the lifecycle
// forbids — and the state is left unchanged. RunEvent::from_json() refuses malformed JSON.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/canonical_json.h"
#include "common/error.h"

namespace warden::kernel {

// `refused`: the verdict said no (a step refused past its retries and replans), which is the
// kernel working, not failing: its own end, apart from `failed` (an error stopped the run).
enum class RunStatus { queued, planning, running, verifying, completed, failed, timeout, cancelled, interrupted, refused };
std::string_view run_status_name(RunStatus status);
std::optional<RunStatus> parse_run_status(std::string_view name);
bool is_terminal(RunStatus status);
bool can_move(RunStatus from, RunStatus to);

enum class ErrorType { planning_error, execution_error, timeout_error, cancelled, refused };
std::string_view error_type_name(ErrorType type);  // PLANNING_ERROR, EXECUTION_ERROR, ..., REFUSED
std::optional<ErrorType> parse_error_type(std::string_view name);

enum class RunEventType {
  run_started,
  step_started,
  tool_called,
  tool_output,
  step_completed,
  artifact_created,
  replan_triggered,
  run_completed,
  run_failed,
  run_cancelled,
  timeout_error,
  heartbeat,
  // A merge-queue plan's queue (merge_queue.h) after each round: which steps are in flight on
  // which speculative base, and which speculations were thrown away and why.
  queue_updated,
};
std::string_view run_event_type_name(RunEventType type);
std::optional<RunEventType> parse_run_event_type(std::string_view name);

// A typed event of a run (run_started, step_started, ...): its id, run, type and time, the step
// it concerns and the executor or check involved, and its data. The id comes from the injected
// IdSource and the timestamp from the injected Clock, so a golden run's events are
// byte-identical.
struct RunEvent {
  std::string event_id;
  std::string run_id;
  RunEventType type = RunEventType::heartbeat;
  int64_t timestamp_ms = 0;
  std::optional<int64_t> step_index;  // 0-based index in the plan
  std::optional<std::string> tool;    // the executor or check involved
  Json data = Json::object();
  Json to_json() const;  // {"event_id","run_id","event_type","timestamp_ms","step_index"?,"tool_name"?,"data"}
  static Result<RunEvent> from_json(const Json& json);  // strict, as records.h
};

// The run as the kernel tracks it; moves are checked.
class RunLifecycle {
 public:
  explicit RunLifecycle(std::string run_id) : run_id_(std::move(run_id)) {}
  const std::string& run_id() const { return run_id_; }
  RunStatus status() const { return status_; }
  const std::optional<ErrorType>& error_type() const { return error_type_; }
  const std::string& error() const { return error_; }
  Status move(RunStatus to);
  // Ends the run in a terminal state other than completed, with its error.
  Status fail(RunStatus terminal, ErrorType type, std::string message);

 private:
  std::string run_id_;
  RunStatus status_ = RunStatus::queued;
  std::optional<ErrorType> error_type_;
  std::string error_;
};

}  // namespace warden::kernel
