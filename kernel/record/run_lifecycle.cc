#include "kernel/record/run_lifecycle.h"

#include <array>

#include "common/json_reader.h"

namespace warden::kernel {

namespace {

constexpr std::array<std::string_view, 10> kStatusNames = {"queued", "planning",  "running",     "verifying", "completed",
                                                           "failed", "timeout",   "cancelled", "interrupted", "refused"};
constexpr std::array<std::string_view, 13> kEventNames = {
    "run_started",    "step_started",     "tool_called",      "tool_output",   "step_completed", "artifact_created",
    "replan_triggered", "run_completed", "run_failed", "run_cancelled", "timeout_error", "heartbeat", "queue_updated"};

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
         status == RunStatus::cancelled || status == RunStatus::interrupted || status == RunStatus::refused;
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
    case RunStatus::refused:
    case RunStatus::timeout:
    case RunStatus::cancelled: return true;
    // Recorded by another process once the run's own has died (run_recovery.h), never a move.
    case RunStatus::interrupted: return false;
  }
  return false;
}

std::string_view error_type_name(ErrorType type) {
  switch (type) {
    case ErrorType::planning_error: return "PLANNING_ERROR";
    case ErrorType::execution_error: return "EXECUTION_ERROR";
    case ErrorType::timeout_error: return "TIMEOUT_ERROR";
    case ErrorType::cancelled: return "CANCELLED";
    case ErrorType::refused: return "REFUSED";
  }
  return "EXECUTION_ERROR";
}

std::optional<ErrorType> parse_error_type(std::string_view name) {
  for (ErrorType t : {ErrorType::planning_error, ErrorType::execution_error, ErrorType::timeout_error, ErrorType::cancelled,
                      ErrorType::refused}) {
    if (error_type_name(t) == name) return t;
  }
  return std::nullopt;
}

std::string_view run_event_type_name(RunEventType type) { return kEventNames[static_cast<size_t>(type)]; }

std::optional<RunEventType> parse_run_event_type(std::string_view name) {
  for (size_t i = 0; i < kEventNames.size(); ++i) {
    if (kEventNames[i] == name) return static_cast<RunEventType>(i);
  }
  return std::nullopt;
}

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

Result<RunEvent> RunEvent::from_json(const Json& json) {
  JsonReader r(json, "run_event record");
  RunEvent ev;
  r.string("event_id", ev.event_id);
  r.string("run_id", ev.run_id);
  std::string type;
  r.string("event_type", type);
  if (auto parsed = parse_run_event_type(type)) ev.type = *parsed;
  else if (r.ok()) r.fail("event_type", "unknown event type \"" + type + "\"");
  r.integer("timestamp_ms", ev.timestamp_ms, 0, kMaxCanonicalInteger);
  if (const Json* data = r.value("data", Json::value_t::object)) ev.data = *data;
  if (r.has("step_index")) {
    int64_t index = 0;
    r.integer("step_index", index, 0, kMaxCanonicalInteger);
    ev.step_index = index;
  }
  if (r.has("tool_name")) {
    std::string tool;
    r.string("tool_name", tool);
    ev.tool = std::move(tool);
  }
  if (Status st = r.finish(); !st) return std::unexpected(st.error());
  return ev;
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
