#include "supervisor/agent_state.h"

#include <gtest/gtest.h>

#include <array>
#include <optional>
#include <string>

namespace warden::supervisor {
namespace {

constexpr std::array kStates{AgentState::idle, AgentState::assigned, AgentState::working, AgentState::reporting};
constexpr std::array kEvents{AgentEvent::task_assigned, AgentEvent::work_started, AgentEvent::output_ready,
                             AgentEvent::output_delivered, AgentEvent::agent_failed};

// The diagram, written out independently of the library's table: rows are states in
// kStates order, columns events in kEvents order; nullopt is an invalid transition.
using Row = std::array<std::optional<AgentState>, 5>;
constexpr std::optional<AgentState> kNo = std::nullopt;
const std::array<Row, 4> kExpected{{
    /* idle      */ {AgentState::assigned, kNo, kNo, kNo, AgentState::idle},
    /* assigned  */ {kNo, AgentState::working, kNo, kNo, AgentState::idle},
    /* working   */ {kNo, kNo, AgentState::reporting, kNo, AgentState::idle},
    /* reporting */ {kNo, kNo, kNo, AgentState::idle, AgentState::idle},
}};

TEST(AgentState, EveryStateEventPairFollowsTheDiagram) {
  int legal = 0;
  int invalid = 0;
  for (size_t s = 0; s < kStates.size(); ++s) {
    for (size_t e = 0; e < kEvents.size(); ++e) {
      SCOPED_TRACE(std::string(to_string(kStates[s])) + " + " + std::string(to_string(kEvents[e])));
      const AgentSnapshot current{AgentState::idle, kStates[s], std::nullopt, 41};
      auto next = apply(current, kEvents[e]);
      if (kExpected[s][e]) {
        ++legal;
        ASSERT_TRUE(next.has_value());
        EXPECT_EQ(*next, (AgentSnapshot{kStates[s], *kExpected[s][e], kEvents[e], 42}));
      } else {
        ++invalid;
        ASSERT_FALSE(next.has_value());
        EXPECT_EQ(next.error(), (InvalidTransition{kStates[s], kEvents[e]}));
      }
    }
  }
  EXPECT_EQ(legal, 8);
  EXPECT_EQ(invalid, 12);
}

TEST(AgentState, InitialSnapshotIsIdleAtVersionZero) {
  AgentSnapshot initial;
  EXPECT_EQ(initial.state, AgentState::idle);
  EXPECT_EQ(initial.previous, AgentState::idle);
  EXPECT_FALSE(initial.event.has_value());
  EXPECT_EQ(initial.version, 0u);
}

TEST(AgentState, FullCycleRecordsPreviousEventAndVersion) {
  AgentSnapshot s;
  auto assigned = apply(s, AgentEvent::task_assigned);
  ASSERT_TRUE(assigned);
  EXPECT_EQ(*assigned, (AgentSnapshot{AgentState::idle, AgentState::assigned, AgentEvent::task_assigned, 1}));
  auto working = apply(*assigned, AgentEvent::work_started);
  ASSERT_TRUE(working);
  EXPECT_EQ(*working, (AgentSnapshot{AgentState::assigned, AgentState::working, AgentEvent::work_started, 2}));
  auto reporting = apply(*working, AgentEvent::output_ready);
  ASSERT_TRUE(reporting);
  EXPECT_EQ(*reporting, (AgentSnapshot{AgentState::working, AgentState::reporting, AgentEvent::output_ready, 3}));
  auto idle = apply(*reporting, AgentEvent::output_delivered);
  ASSERT_TRUE(idle);
  EXPECT_EQ(*idle, (AgentSnapshot{AgentState::reporting, AgentState::idle, AgentEvent::output_delivered, 4}));
}

TEST(AgentState, ApplyLeavesItsInputUntouched) {
  const AgentSnapshot working{AgentState::assigned, AgentState::working, AgentEvent::work_started, 7};
  const AgentSnapshot copy = working;
  auto failed = apply(working, AgentEvent::agent_failed);
  ASSERT_TRUE(failed);
  EXPECT_EQ(*failed, (AgentSnapshot{AgentState::working, AgentState::idle, AgentEvent::agent_failed, 8}));
  EXPECT_EQ(working, copy);
  EXPECT_FALSE(apply(working, AgentEvent::task_assigned));
  EXPECT_EQ(working, copy);
}

TEST(AgentState, InvalidTransitionNamesStateAndEvent) {
  auto bad = apply(AgentSnapshot{}, AgentEvent::output_delivered);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().state, AgentState::idle);
  EXPECT_EQ(bad.error().event, AgentEvent::output_delivered);
  EXPECT_EQ(bad.error().message(), "agent in state idle cannot take event output_delivered");
  Error error = bad.error().to_error();
  EXPECT_EQ(error.code, Errc::failed_precondition);
  EXPECT_EQ(error.message, "agent in state idle cannot take event output_delivered");
}

TEST(AgentState, NamesRoundTrip) {
  const std::array<std::string_view, 4> state_names{"idle", "assigned", "working", "reporting"};
  for (size_t i = 0; i < kStates.size(); ++i) {
    EXPECT_EQ(to_string(kStates[i]), state_names[i]);
    EXPECT_EQ(parse_agent_state(state_names[i]), kStates[i]);
  }
  const std::array<std::string_view, 5> event_names{"task_assigned", "work_started", "output_ready",
                                                    "output_delivered", "agent_failed"};
  for (size_t i = 0; i < kEvents.size(); ++i) {
    EXPECT_EQ(to_string(kEvents[i]), event_names[i]);
    EXPECT_EQ(parse_agent_event(event_names[i]), kEvents[i]);
  }
}

TEST(AgentState, ParseRejectsAnythingElse) {
  EXPECT_EQ(parse_agent_state("Idle"), std::nullopt);
  EXPECT_EQ(parse_agent_state(" idle"), std::nullopt);
  EXPECT_EQ(parse_agent_state(""), std::nullopt);
  EXPECT_EQ(parse_agent_state("task_assigned"), std::nullopt);
  EXPECT_EQ(parse_agent_event("TaskAssigned"), std::nullopt);
  EXPECT_EQ(parse_agent_event("idle"), std::nullopt);
  EXPECT_EQ(parse_agent_event(""), std::nullopt);
}

}  // namespace
}  // namespace warden::supervisor
