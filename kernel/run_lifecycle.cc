#include "kernel/run_lifecycle.h"

#include <array>

namespace warden::kernel {

namespace {

constexpr std::array<std::string_view, 8> kStatusNames = {"queued",    "planning", "running", "verifying",
                                                          "completed", "failed",   "timeout", "cancelled"};
constexpr std::array<std::string_view, 12> kEventNames = {
    "run_started",    "step_started",     "tool_called",      "tool_output",   "step_completed", "artifact_created",
    "replan_triggered", "run_completed", "run_failed", "run_cancelled", "timeout_error", "heartbeat"};

}  // namespace

std::string_view run_status_name(RunStatus status) { return kStatusNames[static_cast<size_t>(status)]; }

std::optional<RunStatus> parse_run_status(std::string_view name) {
  for (size_t i = 0; i < kStatusNames.size(); ++i) {
    if (kStatusNames[i] == name) return static_cast<RunStatus>(i);
  }
  return std::nullopt;
}

bool is_terminal(RunStatus status) {
  return status == RunStatus::completed || status == RunStatus::failed || status == RunStatus::timeout ||
         status == RunStatus::cancelled;
}

bool can_move(RunStatus from, RunStatus to) {
  if (is_terminal(from)) return false;
  switch (to) {
    case RunStatus::queued: return false;
    case RunStatus::planning: return from == RunStatus::queued || from == RunStatus::running;  // replanning
    case RunStatus::running: return from == RunStatus::planning;
    case RunStatus::verifying: return from == RunStatus::running;
    case RunStatus::completed: return from == RunStatus::verifying;
    case RunStatus::failed:
    case RunStatus::timeout:
    case RunStatus::cancelled: return true;
  }
  return false;
}

std::string_view error_type_name(ErrorType type) {
  switch (type) {
    case ErrorType::planning_error: return "PLANNING_ERROR";
    case ErrorType::execution_error: return "EXECUTION_ERROR";
    case ErrorType::timeout_error: return "TIMEOUT_ERROR";
    case ErrorType::cancelled: return "CANCELLED";
  }
  return "EXECUTION_ERROR";
}

std::string_view run_event_type_name(RunEventType type) { return kEventNames[static_cast<size_t>(type)]; }

Json RunEvent::to_json() const {
  Json j = {{"event_id", event_id},
            {"run_id", run_id},
            {"event_type", run_event_type_name(type)},
            {"timestamp_ms", timestamp_ms},
            {"data", data}};
  if (step_index) j["step_index"] = *step_index;
  if (tool) j["tool_name"] = *tool;
  return j;
}

Status RunLifecycle::move(RunStatus to) {
  if (!can_move(status_, to)) {
    return warden::fail(Errc::internal, "run " + run_id_ + ": cannot move from " + std::string(run_status_name(status_)) +
                                           " to " + std::string(run_status_name(to)));
  }
  status_ = to;
  return {};
}

Status RunLifecycle::fail(RunStatus terminal, ErrorType type, std::string message) {
  if (terminal == RunStatus::completed || !is_terminal(terminal)) {
    return warden::fail(Errc::internal, "run " + run_id_ + ": fail() needs failed, timeout or cancelled");
  }
  if (Status st = move(terminal); !st) return st;
  error_type_ = type;
  error_ = std::move(message);
  return {};
}

}  // namespace warden::kernel
