// The agent state machine: an agent — an executor or a runner — moves Idle -> Assigned ->
// Working -> Reporting -> Idle as it takes a task, starts it, has output ready and delivers it;
// AgentFailed sends it back to Idle from any state.
//
// Pure: apply() reads only its arguments and returns a new snapshot; there is no machine
// object and no state kept here. The current snapshot lives wherever the caller keeps it (a
// StateStore), and the caller serializes events per agent (a per-agent lock, or a
// compare-and-set on the version). Every function is safe from any thread.
#pragma once

#include <cstdint>
#include <expected>
#include <optional>
#include <string>
#include <string_view>

#include "common/error.h"

namespace warden::supervisor {

enum class AgentState {
  idle,       // registered, free for a task
  assigned,   // a task is assigned; the agent has not started it
  working,    // running the task
  reporting,  // output is ready and being delivered
};

enum class AgentEvent {
  task_assigned,     // idle -> assigned
  work_started,      // assigned -> working
  output_ready,      // working -> reporting
  output_delivered,  // reporting -> idle
  agent_failed,      // any state -> idle
};

// Lower-case names ("idle", "task_assigned") used in records and messages; parse_* is the
// inverse and returns nullopt for anything else (no case folding, no whitespace).
std::string_view to_string(AgentState state);
std::string_view to_string(AgentEvent event);
std::optional<AgentState> parse_agent_state(std::string_view name);
std::optional<AgentEvent> parse_agent_event(std::string_view name);

// One immutable observation of an agent: where it is, where it came from, the event that
// moved it, and how many events have moved it (callers compare versions to detect a lost
// update). A default snapshot is a freshly registered agent: idle, no event, version 0.
struct AgentSnapshot {
  AgentState previous = AgentState::idle;
  AgentState state = AgentState::idle;
  std::optional<AgentEvent> event;  // none only for the initial snapshot
  uint64_t version = 0;

  bool operator==(const AgentSnapshot&) const = default;
};

// `event` is not allowed in `state`. The snapshot it was applied to is still current: an
// invalid event changes nothing, and a caller usually drops the event (a late or duplicate
// report) or treats the agent as confused and sends agent_failed.
struct InvalidTransition {
  AgentState state;
  AgentEvent event;

  bool operator==(const InvalidTransition&) const = default;
  // "agent in state working cannot take event task_assigned".
  std::string message() const;
  // The same as a failed_precondition Error, for callers that pass errors up.
  Error to_error() const;
};

// The snapshot after `event`: previous = current.state, state from the transition table,
// event recorded, version + 1. Everything outside the table is an InvalidTransition.
std::expected<AgentSnapshot, InvalidTransition> apply(const AgentSnapshot& current, AgentEvent event);

}  // namespace warden::supervisor
