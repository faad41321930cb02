#include "supervisor/agent_state.h"

#include <array>
#include <utility>

namespace warden::supervisor {
namespace {

struct Move {
  AgentState from;
  AgentEvent event;
  AgentState to;
};

// The whole machine. A pair not listed here is invalid; agent_failed is listed once per
// state rather than special-cased, so this table is the one place the rules live.
constexpr std::array<Move, 8> kTransitions{{
    {AgentState::idle, AgentEvent::task_assigned, AgentState::assigned},
    {AgentState::assigned, AgentEvent::work_started, AgentState::working},
    {AgentState::working, AgentEvent::output_ready, AgentState::reporting},
    {AgentState::reporting, AgentEvent::output_delivered, AgentState::idle},
    {AgentState::idle, AgentEvent::agent_failed, AgentState::idle},
    {AgentState::assigned, AgentEvent::agent_failed, AgentState::idle},
    {AgentState::working, AgentEvent::agent_failed, AgentState::idle},
    {AgentState::reporting, AgentEvent::agent_failed, AgentState::idle},
}};

constexpr std::optional<AgentState> next_state(AgentState from, AgentEvent event) {
  for (const Move& move : kTransitions) {
    if (move.from == from && move.event == event) return move.to;
  }
  return std::nullopt;
}

// Compile-time spot checks of the table against the diagram.
static_assert(next_state(AgentState::idle, AgentEvent::task_assigned) == AgentState::assigned);
static_assert(next_state(AgentState::reporting, AgentEvent::output_delivered) == AgentState::idle);
static_assert(!next_state(AgentState::idle, AgentEvent::output_delivered).has_value());

constexpr std::array<std::pair<AgentState, std::string_view>, 4> kStateNames{{
    {AgentState::idle, "idle"},
    {AgentState::assigned, "assigned"},
    {AgentState::working, "working"},
    {AgentState::reporting, "reporting"},
}};

constexpr std::array<std::pair<AgentEvent, std::string_view>, 5> kEventNames{{
    {AgentEvent::task_assigned, "task_assigned"},
    {AgentEvent::work_started, "work_started"},
    {AgentEvent::output_ready, "output_ready"},
    {AgentEvent::output_delivered, "output_delivered"},
    {AgentEvent::agent_failed, "agent_failed"},
}};

template <typename E, size_t N>
std::string_view name_in(const std::array<std::pair<E, std::string_view>, N>& names, E value) {
  for (const auto& [v, name] : names) {
    if (v == value) return name;
  }
  return "unknown";
}

template <typename E, size_t N>
std::optional<E> value_in(const std::array<std::pair<E, std::string_view>, N>& names, std::string_view name) {
  for (const auto& [v, n] : names) {
    if (n == name) return v;
  }
  return std::nullopt;
}

}  // namespace

std::string_view to_string(AgentState state) { return name_in(kStateNames, state); }
std::string_view to_string(AgentEvent event) { return name_in(kEventNames, event); }
std::optional<AgentState> parse_agent_state(std::string_view name) { return value_in(kStateNames, name); }
std::optional<AgentEvent> parse_agent_event(std::string_view name) { return value_in(kEventNames, name); }

std::string InvalidTransition::message() const {
  return "agent in state " + std::string(to_string(state)) + " cannot take event " + std::string(to_string(event));
}

Error InvalidTransition::to_error() const { return Error{Errc::failed_precondition, message()}; }

std::expected<AgentSnapshot, InvalidTransition> apply(const AgentSnapshot& current, AgentEvent event) {
  std::optional<AgentState> next = next_state(current.state, event);
  if (!next) return std::unexpected(InvalidTransition{current.state, event});
  return AgentSnapshot{current.state, *next, event, current.version + 1};
}

}  // namespace warden::supervisor
