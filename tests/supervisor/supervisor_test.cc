// The Supervisor over a real LMDB StateStore on a clock the test sets: registration,
// assignment by role and priority, the state machine's path through started / output_ready /
// delivered, heartbeat failure detection at exactly the stated bound, a failed agent's task
// returning to the queue, backoff and the circuit breaker holding an agent out, restart
// intensity giving up, a stale claim that cannot deliver (one decision per task), and two
// supervisors on one store assigning each task once.
#include "supervisor/supervisor.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <thread>

#include "common/random_source.h"
#include "store/lmdb_state_store.h"
#include "tests/support/temp_dir.h"

namespace warden::supervisor {
namespace {

class ManualClock final : public Clock {
 public:
  int64_t now_ms() override { return now_; }
  void set(int64_t t) { now_ = t; }
  void advance(int64_t d) { now_ += d; }

 private:
  int64_t now_ = 1000;
};

SupervisorConfig test_config() {
  SupervisorConfig config;
  config.heartbeat_interval_ms = 1000;
  config.missed_heartbeats = 2;
  config.detection_slack_ms = 100;
  config.visibility_timeout_ms = 10000;
  config.restart.backoff = {100, 2.0, 1000, 0.0};  // no jitter: exact delays
  config.restart.intensity = {3, 60000};
  config.restart.breaker = {2, 5000};
  return config;
}

struct Fleet {
  test::TempDir dir;
  std::unique_ptr<store::StateStore> store;
  ManualClock clock;
  SeededRandomSource random{7};
  std::unique_ptr<Supervisor> sup;

  explicit Fleet(SupervisorConfig config = test_config()) {
    auto opened = store::open_lmdb_state_store(dir.path() / "store", {.sync = false});
    if (!opened) throw std::runtime_error(opened.error().message);
    store = std::move(*opened);
    auto made = Supervisor::create(*store, clock, random, config);
    if (!made) throw std::runtime_error(made.error().message);
    sup = std::move(*made);
  }
  void task(const std::string& id, int64_t priority, const std::string& kind = "runner") {
    ASSERT_TRUE(store->enqueue(store::Task{id, priority, kind, "payload " + id}));
  }
  std::vector<FleetEvent> events() {
    std::vector<FleetEvent> out;
    auto read = store->read(1, 1000);
    EXPECT_TRUE(read);
    for (const auto& e : *read) {
      auto decoded = decode_fleet_event(e.bytes);
      EXPECT_TRUE(decoded) << decoded.error().message;
      if (decoded) out.push_back(*decoded);
    }
    return out;
  }
  // Agent `agent` (a runner) registered, given task `task` and started on it: its claim.
  store::ClaimRef working(const std::string& agent, const std::string& task_id) {
    EXPECT_TRUE(sup->register_agent({agent, "runner", {}}));
    task(task_id, 1);
    auto made = sup->assign();
    if (!made || made->size() != 1) {
      ADD_FAILURE() << "no assignment";
      return {};
    }
    const store::ClaimRef ref = (*made)[0].claim.ref();
    EXPECT_TRUE(sup->started(agent, ref));
    return ref;
  }
  AgentView view(const std::string& id) {
    auto v = sup->agent(id);
    EXPECT_TRUE(v && *v);
    return **v;
  }
};

std::vector<FleetEventType> types(const std::vector<FleetEvent>& events) {
  std::vector<FleetEventType> out;
  for (const auto& e : events) out.push_back(e.type);
  return out;
}

TEST(FleetEvents, RoundTripAsCanonicalJsonAndUnknownTypesAreRefused) {
  FleetEvent event;
  event.type = FleetEventType::restart;
  event.agent_id = "r1";
  event.at_ms = 42;
  event.attempt = 3;
  event.delay_ms = 800;
  EXPECT_EQ(encode(event), R"({"agent":"r1","at_ms":42,"attempt":3,"delay_ms":800,"type":"restart"})");
  auto back = decode_fleet_event(encode(event));
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(*back, event);
  // An enrolment names the identity and the key the agent signs with.
  const FleetEvent enrolled{.type = FleetEventType::registered, .agent_id = "r1", .at_ms = 5, .owner = "ops",
                            .key = std::string(64, 'a')};
  EXPECT_EQ(encode(enrolled), R"({"agent":"r1","at_ms":5,"key":")" + std::string(64, 'a') +
                                  R"(","owner":"ops","type":"registered"})");
  EXPECT_EQ(decode_fleet_event(encode(enrolled)).value(), enrolled);
  const FleetEvent began{.type = FleetEventType::assigned, .agent_id = "r1", .at_ms = 5, .task_id = "t", .attempt = 1,
                         .started = true};
  EXPECT_EQ(encode(began), R"({"agent":"r1","at_ms":5,"attempt":1,"started":true,"task":"t","type":"assigned"})");
  EXPECT_EQ(decode_fleet_event(encode(began)).value(), began);
  EXPECT_FALSE(decode_fleet_event(R"({"agent":"r1","at_ms":1,"type":"promoted"})"));
  EXPECT_FALSE(decode_fleet_event(R"({"agent":"r1","at_ms":1,"type":"failed","extra":1})"));
  EXPECT_FALSE(decode_fleet_event(R"({"agent":"r1","at_ms":"soon","type":"failed"})"));
  // Whatever encode writes reads back, a clock reading before the epoch included.
  event.at_ms = -1;
  EXPECT_EQ(decode_fleet_event(encode(event)).value(), event);
}

TEST(Supervisor, ConfigAndSpecsAreValidated) {
  test::TempDir dir;
  auto store = store::open_lmdb_state_store(dir.path() / "s", {.sync = false});
  ASSERT_TRUE(store);
  ManualClock clock;
  SeededRandomSource random(1);
  SupervisorConfig bad = test_config();
  bad.missed_heartbeats = 0;
  auto made = Supervisor::create(**store, clock, random, bad);
  ASSERT_FALSE(made);
  EXPECT_EQ(made.error().code, Errc::invalid_argument);
  EXPECT_NE(made.error().message.find("missed_heartbeats"), std::string::npos) << made.error().message;

  Fleet fleet;
  EXPECT_EQ(fleet.sup->register_agent({"", "runner", {}}).error().code, Errc::invalid_argument);
  EXPECT_EQ(fleet.sup->register_agent({"a/b", "runner", {}}).error().code, Errc::invalid_argument);
  EXPECT_EQ(fleet.sup->register_agent({"a", "", {}}).error().code, Errc::invalid_argument);
  EXPECT_EQ(fleet.sup->heartbeat("nobody").error().code, Errc::not_found);
  EXPECT_EQ(fleet.sup->stale_after_ms(), 2100);
}

// A runner begins its task the moment it is given it: with starts_at_once the assignment's one
// write puts it in working, the event says so, and started() is refused as out of order.
TEST(Supervisor, AnAgentThatStartsAtOnceIsWorkingFromItsAssignmentsOneWrite) {
  Fleet fleet;
  ASSERT_TRUE(fleet.sup->register_agent({"r1", "runner", {}}));
  ASSERT_TRUE(fleet.sup->register_agent({"e1", "executor", {}}));
  fleet.task("t", 1);
  fleet.task("x", 1, "executor");
  const uint64_t registered = fleet.view("r1").record.version;
  AssignScope scope;
  scope.starts_at_once = [](const AgentView& v) { return v.record.role == "runner"; };
  auto made = fleet.sup->assign(scope);
  ASSERT_TRUE(made && made->size() == 2);
  EXPECT_EQ(fleet.view("r1").state, AgentState::working);
  EXPECT_EQ(fleet.view("r1").record.version, registered + 1);
  EXPECT_EQ(fleet.view("e1").state, AgentState::assigned) << "only the agents the scope names start at once";
  std::map<std::string, bool> started;
  for (const FleetEvent& e : fleet.events()) {
    if (e.type == FleetEventType::assigned) started[e.agent_id] = e.started;
  }
  EXPECT_TRUE(started["r1"]);
  EXPECT_FALSE(started["e1"]);
  store::ClaimRef ref;
  for (const auto& a : *made) {
    if (a.agent_id == "r1") ref = a.claim.ref();
  }
  EXPECT_FALSE(fleet.sup->started("r1", ref));
  ASSERT_TRUE(fleet.sup->delivered("r1", ref));
  EXPECT_EQ(fleet.view("r1").state, AgentState::idle);
}

// A runner's result is taken as soon as it is ready: delivered straight from working goes
// through reporting in the state machine and writes the record once, with the ack.
TEST(Supervisor, AnOutputTakenAsSoonAsItIsReadyIsDeliveredFromWorkingInOneWrite) {
  Fleet fleet;
  const store::ClaimRef ref = fleet.working("r1", "t");
  const uint64_t working = fleet.view("r1").record.version;
  ASSERT_TRUE(fleet.sup->delivered("r1", ref));
  EXPECT_EQ(fleet.view("r1").state, AgentState::idle);
  EXPECT_TRUE(fleet.view("r1").task_id.empty());
  EXPECT_EQ(fleet.view("r1").record.version, working + 1) << "one write for reporting and idle";
  EXPECT_EQ(fleet.store->queue_length().value(), 0u);
  auto events = fleet.events();
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().type, FleetEventType::delivered);
  EXPECT_EQ(events.back().task_id, "t");
  EXPECT_TRUE(fleet.sup->delivered("r1", ref)) << "its retry after a lost reply";
  EXPECT_EQ(fleet.view("r1").record.version, working + 1);
}

// A task nobody waits for any more is acked unrun: recorded as withdrawn with its reason,
// never as delivered, and its agent is idle again with its restart policy untouched.
TEST(Supervisor, ATaskWithdrawnUnrunIsRecordedWithdrawnWithWhyNotDelivered) {
  Fleet fleet;
  const store::ClaimRef ref = fleet.working("r1", "t");
  ASSERT_TRUE(fleet.sup->withdraw("r1", ref, "its quorum settled without it"));
  EXPECT_EQ(fleet.view("r1").state, AgentState::idle);
  EXPECT_EQ(fleet.store->queue_length().value(), 0u);
  auto events = fleet.events();
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().type, FleetEventType::withdrawn);
  EXPECT_EQ(events.back().task_id, "t");
  EXPECT_EQ(events.back().reason, "its quorum settled without it");
  for (const auto& e : events) EXPECT_NE(e.type, FleetEventType::delivered);
  auto round = decode_fleet_event(encode(events.back()));
  ASSERT_TRUE(round) << round.error().message;
  EXPECT_EQ(*round, events.back());
  // A claim it no longer holds is refused as delivered() refuses it.
  EXPECT_FALSE(fleet.sup->withdraw("r1", store::ClaimRef{"t", "r1", ref.token + 100}, "late"));
}

TEST(Supervisor, AssignsByRoleAndPriorityAndWalksTheStateMachineToDelivery) {
  Fleet fleet;
  ASSERT_TRUE(fleet.sup->register_agent({"r1", "runner", {{"zone", "a"}}}));
  ASSERT_TRUE(fleet.sup->register_agent({"e1", "executor", {}}));
  fleet.task("low", 1);
  fleet.task("high", 9);
  fleet.task("exec", 5, "executor");

  auto made = fleet.sup->assign();
  ASSERT_TRUE(made) << made.error().message;
  ASSERT_EQ(made->size(), 2u);
  std::map<std::string, std::string> by_agent;
  for (const auto& a : *made) by_agent[a.agent_id] = a.claim.task.id;
  EXPECT_EQ(by_agent["r1"], "high");
  EXPECT_EQ(by_agent["e1"], "exec");
  EXPECT_EQ(fleet.view("r1").state, AgentState::assigned);
  EXPECT_EQ(fleet.view("r1").task_id, "high");

  // A busy agent gets nothing more; the low task waits.
  auto again = fleet.sup->assign();
  ASSERT_TRUE(again);
  EXPECT_TRUE(again->empty());

  store::ClaimRef ref;
  for (const auto& a : *made) {
    if (a.agent_id == "r1") ref = a.claim.ref();
  }
  // Out of order: delivering before starting is refused and changes nothing.
  EXPECT_EQ(fleet.sup->delivered("r1", ref).error().code, Errc::failed_precondition);
  ASSERT_TRUE(fleet.sup->started("r1", ref));
  EXPECT_EQ(fleet.view("r1").state, AgentState::working);
  ASSERT_TRUE(fleet.sup->output_ready("r1", ref));
  EXPECT_EQ(fleet.view("r1").state, AgentState::reporting);
  ASSERT_TRUE(fleet.sup->delivered("r1", ref));
  EXPECT_EQ(fleet.view("r1").state, AgentState::idle);
  EXPECT_TRUE(fleet.view("r1").task_id.empty());
  // The same claim delivering again (its reply was lost) is answered as before and changes
  // nothing; another agent's or a forged claim is refused.
  EXPECT_TRUE(fleet.sup->delivered("r1", ref));
  EXPECT_FALSE(fleet.sup->delivered("e1", store::ClaimRef{ref.task_id, "e1", ref.token}));
  EXPECT_FALSE(fleet.sup->delivered("r1", store::ClaimRef{ref.task_id, "r1", ref.token + 100}));
  EXPECT_EQ(fleet.store->queue_length().value(), 2u);  // low and exec remain

  auto next = fleet.sup->assign();
  ASSERT_TRUE(next);
  ASSERT_EQ(next->size(), 1u);
  EXPECT_EQ((*next)[0].claim.task.id, "low");
  EXPECT_EQ(types(fleet.events()),
            (std::vector<FleetEventType>{FleetEventType::registered, FleetEventType::registered, FleetEventType::assigned,
                                         FleetEventType::assigned, FleetEventType::started, FleetEventType::delivered,
                                         FleetEventType::assigned}));
}

TEST(Supervisor, AnAgentIsFailedExactlyPastTheHeartbeatBoundAndItsTaskRunsElsewhere) {
  Fleet fleet;
  ASSERT_TRUE(fleet.sup->register_agent({"r1", "runner", {}}));
  fleet.task("t", 1);
  auto made = fleet.sup->assign();
  ASSERT_TRUE(made);
  ASSERT_EQ(made->size(), 1u);
  ASSERT_TRUE(fleet.sup->register_agent({"r2", "runner", {}}));

  fleet.clock.advance(2100);  // exactly the bound: not yet
  ASSERT_TRUE(fleet.sup->heartbeat("r2"));
  auto none = fleet.sup->detect_failures();
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->empty());
  fleet.clock.advance(1);  // one millisecond past it
  auto failed = fleet.sup->detect_failures();
  ASSERT_TRUE(failed);
  EXPECT_EQ(*failed, std::vector<std::string>{"r1"});
  AgentView r1 = fleet.view("r1");
  EXPECT_TRUE(r1.down);
  EXPECT_EQ(r1.state, AgentState::idle);
  EXPECT_TRUE(r1.task_id.empty());
  // Failed once, not again on the next pass.
  auto twice = fleet.sup->detect_failures();
  ASSERT_TRUE(twice);
  EXPECT_TRUE(twice->empty());

  // The task went back to the queue and goes to the live agent, as a second attempt.
  auto moved = fleet.sup->assign();
  ASSERT_TRUE(moved);
  ASSERT_EQ(moved->size(), 1u);
  EXPECT_EQ((*moved)[0].agent_id, "r2");
  EXPECT_EQ((*moved)[0].claim.task.id, "t");
  EXPECT_EQ((*moved)[0].claim.attempt, 2u);
  // The dead agent's old claim can decide nothing.
  EXPECT_FALSE(fleet.sup->delivered("r1", (*made)[0].claim.ref()));

  // A heartbeat brings r1 back.
  ASSERT_TRUE(fleet.sup->heartbeat("r1"));
  EXPECT_FALSE(fleet.view("r1").down);
  auto events = fleet.events();
  auto failed_event = std::find_if(events.begin(), events.end(), [](const FleetEvent& e) { return e.type == FleetEventType::failed; });
  ASSERT_NE(failed_event, events.end());
  EXPECT_EQ(failed_event->agent_id, "r1");
  EXPECT_EQ(failed_event->task_id, "t");
  EXPECT_NE(failed_event->reason.find("no heartbeat for 2101 ms"), std::string::npos) << failed_event->reason;
}

TEST(Supervisor, BackoffAndTheBreakerHoldAFailingAgentOutAndIntensityGivesUp) {
  Fleet fleet;
  ASSERT_TRUE(fleet.sup->register_agent({"r1", "runner", {}}));
  for (int i = 0; i < 6; ++i) fleet.task("t" + std::to_string(i), 1);

  auto made = fleet.sup->assign();
  ASSERT_TRUE(made);
  ASSERT_EQ(made->size(), 1u);
  auto first = fleet.sup->fail_agent("r1", "crashed");
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_EQ(first->action, RestartAction::restart);
  EXPECT_EQ(first->delay_ms, 100);
  // In its backoff: nothing assigned until 100 ms have passed.
  fleet.clock.advance(99);
  EXPECT_TRUE(fleet.sup->assign()->empty());
  fleet.clock.advance(1);
  ASSERT_EQ(fleet.sup->assign()->size(), 1u);

  // The second failure in a row opens the breaker (threshold 2): held out for its cool-off
  // (5,000 ms), longer than the backoff (200 ms).
  auto second = fleet.sup->fail_agent("r1", "crashed again");
  ASSERT_TRUE(second);
  EXPECT_EQ(second->breaker, BreakerState::open);
  EXPECT_EQ(second->not_before_ms, fleet.clock.now_ms() + 5000);
  EXPECT_EQ(fleet.view("r1").breaker, BreakerState::open);
  fleet.clock.advance(4999);
  EXPECT_TRUE(fleet.sup->assign()->empty());
  fleet.clock.advance(1);
  // Half-open: one probe task, and only one.
  auto probe = fleet.sup->assign();
  ASSERT_TRUE(probe);
  ASSERT_EQ(probe->size(), 1u);
  const store::ClaimRef ref = (*probe)[0].claim.ref();
  ASSERT_TRUE(fleet.sup->started("r1", ref));
  ASSERT_TRUE(fleet.sup->output_ready("r1", ref));
  ASSERT_TRUE(fleet.sup->delivered("r1", ref));
  EXPECT_EQ(fleet.view("r1").breaker, BreakerState::closed);

  // Intensity: at most 3 restarts in 60 s; this is the third and fourth failure in the window.
  ASSERT_EQ(fleet.sup->assign()->size(), 1u);
  auto third = fleet.sup->fail_agent("r1", "crash 3");
  ASSERT_TRUE(third);
  EXPECT_EQ(third->action, RestartAction::restart);
  fleet.clock.advance(10000);
  ASSERT_EQ(fleet.sup->assign()->size(), 1u);
  auto fourth = fleet.sup->fail_agent("r1", "crash 4");
  ASSERT_TRUE(fourth);
  EXPECT_EQ(fourth->action, RestartAction::give_up);
  EXPECT_TRUE(fleet.view("r1").given_up);
  fleet.clock.advance(120000);
  EXPECT_TRUE(fleet.sup->assign()->empty()) << "an agent given up on is never assigned again";
  auto events = types(fleet.events());
  EXPECT_EQ(std::count(events.begin(), events.end(), FleetEventType::given_up), 1);
  EXPECT_EQ(std::count(events.begin(), events.end(), FleetEventType::circuit), 2);  // open, closed
}

TEST(Supervisor, ALiveAgentWhoseClaimRanOutIsFailedUnlessItRenewed) {
  Fleet fleet;  // visibility timeout 10,000 ms
  ASSERT_TRUE(fleet.sup->register_agent({"slow", "runner", {}}));
  ASSERT_TRUE(fleet.sup->register_agent({"long", "runner", {}}));
  fleet.task("a", 2);
  fleet.task("b", 1);
  auto made = fleet.sup->assign();
  ASSERT_TRUE(made);
  ASSERT_EQ(made->size(), 2u);
  std::map<std::string, store::ClaimRef> refs;
  for (const auto& a : *made) refs[a.agent_id] = a.claim.ref();
  ASSERT_TRUE(fleet.sup->started("slow", refs["slow"]));
  ASSERT_TRUE(fleet.sup->started("long", refs["long"]));
  // Both keep heartbeating; only "long" renews its claim.
  for (int step = 0; step < 6; ++step) {
    fleet.clock.advance(2000);
    ASSERT_TRUE(fleet.sup->heartbeat("slow"));
    ASSERT_TRUE(fleet.sup->heartbeat("long"));
    ASSERT_TRUE(fleet.sup->renew("long", refs["long"]));
  }
  auto failed = fleet.sup->detect_failures();
  ASSERT_TRUE(failed);
  EXPECT_EQ(*failed, std::vector<std::string>{"slow"});
  EXPECT_FALSE(fleet.view("slow").down) << "it heartbeats: failed for its claim, not marked down";
  EXPECT_TRUE(fleet.view("slow").task_id.empty());
  EXPECT_EQ(fleet.view("long").state, AgentState::working);
  // The slow agent's late delivery decides nothing.
  EXPECT_FALSE(fleet.sup->output_ready("slow", refs["slow"]));
  EXPECT_FALSE(fleet.sup->delivered("slow", refs["slow"]));
  ASSERT_TRUE(fleet.sup->output_ready("long", refs["long"]));
  ASSERT_TRUE(fleet.sup->delivered("long", refs["long"]));
  auto events = fleet.events();
  auto it = std::find_if(events.begin(), events.end(), [](const FleetEvent& e) { return e.type == FleetEventType::failed; });
  ASSERT_NE(it, events.end());
  EXPECT_NE(it->reason.find("ran out"), std::string::npos) << it->reason;
}

TEST(Supervisor, BytesThatAreNotTextNeitherThrowNorReachTheStore) {
  Fleet fleet;
  ASSERT_TRUE(fleet.sup->register_agent({"r1", "runner", {}}));
  EXPECT_EQ(fleet.store->enqueue(store::Task{"bad\xff", 1, "runner", "x"}).error().code, Errc::invalid_argument);
  EXPECT_EQ(fleet.sup->register_agent({"r\xff", "runner", {}}).error().code, Errc::invalid_argument);
  auto decided = fleet.sup->fail_agent("r1", "crashed: \xff\xfe");
  ASSERT_TRUE(decided) << decided.error().message;
  auto events = fleet.events();
  ASSERT_FALSE(events.empty());
  auto it = std::find_if(events.begin(), events.end(), [](const FleetEvent& e) { return e.type == FleetEventType::failed; });
  ASSERT_NE(it, events.end());
  EXPECT_EQ(it->reason, "crashed: \\xff\\xfe");
}

TEST(Supervisor, HeartbeatsFasterThanAQuarterIntervalWriteNothing) {
  Fleet fleet;  // interval 1,000 ms
  ASSERT_TRUE(fleet.sup->register_agent({"r1", "runner", {}}));
  const uint64_t registered = fleet.view("r1").record.version;
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(fleet.sup->heartbeat("r1"));
  fleet.clock.advance(249);
  ASSERT_TRUE(fleet.sup->heartbeat("r1"));
  EXPECT_EQ(fleet.view("r1").record.version, registered) << "a flood of heartbeats became writes";
  fleet.clock.advance(1);
  ASSERT_TRUE(fleet.sup->heartbeat("r1"));
  EXPECT_EQ(fleet.view("r1").record.version, registered + 1);
  EXPECT_EQ(fleet.view("r1").record.last_heartbeat_ms, fleet.clock.now_ms());
  // Detection still sees every heartbeat that matters: 2,100 ms after the last recorded one.
  fleet.clock.advance(2100);
  EXPECT_TRUE(fleet.sup->detect_failures()->empty());
  fleet.clock.advance(1);
  EXPECT_EQ(fleet.sup->detect_failures().value(), std::vector<std::string>{"r1"});
}

TEST(Supervisor, DrainedAgentsGetNoWorkAndOnlyIdleAgentsAreForgotten) {
  Fleet fleet;
  ASSERT_TRUE(fleet.sup->register_agent({"r1", "runner", {}}));
  fleet.task("t", 1);
  ASSERT_TRUE(fleet.sup->drain("r1"));
  EXPECT_TRUE(fleet.sup->assign()->empty());
  ASSERT_TRUE(fleet.sup->drain("r1", false));
  auto made = fleet.sup->assign();
  ASSERT_EQ(made->size(), 1u);
  EXPECT_EQ(fleet.sup->forget("r1").error().code, Errc::failed_precondition);
  ASSERT_TRUE(fleet.sup->fail_agent("r1", "stopped"));
  ASSERT_TRUE(fleet.sup->forget("r1"));
  auto gone = fleet.sup->agent("r1");
  ASSERT_TRUE(gone);
  EXPECT_FALSE(gone->has_value());
  EXPECT_EQ(fleet.store->queue_length().value(), 1u) << "the forgotten agent's task is still queued";
}

TEST(Supervisor, ARegisteringAgentGivesBackWhatItsPreviousLifeHeld) {
  Fleet fleet;
  ASSERT_TRUE(fleet.sup->register_agent({"r1", "runner", {}}));
  fleet.task("t", 1);
  ASSERT_EQ(fleet.sup->assign()->size(), 1u);
  ASSERT_TRUE(fleet.sup->register_agent({"r1", "runner", {}}));  // the process restarted
  EXPECT_EQ(fleet.view("r1").state, AgentState::idle);
  auto again = fleet.sup->assign();
  ASSERT_EQ(again->size(), 1u);
  EXPECT_EQ((*again)[0].claim.attempt, 2u);
}

TEST(Supervisor, AnAgentIsPinnedToWhoEnrolledItAndWithWhichKeyUntilForgotten) {
  Fleet fleet;
  ASSERT_TRUE(fleet.sup->register_agent({"r1", "runner", {}, "alice", "aa11"}));
  fleet.task("t", 1);
  ASSERT_EQ(fleet.sup->assign()->size(), 1u);
  // Another identity, or the same one with another key, cannot take the agent over, and
  // the refused registration gives back nothing the agent holds.
  for (auto [owner, key] : {std::pair{"mallory", "aa11"}, std::pair{"alice", "bb22"}, std::pair{"", ""}}) {
    auto taken = fleet.sup->register_agent({"r1", "runner", {}, owner, key});
    ASSERT_FALSE(taken) << owner << " " << key;
    EXPECT_EQ(taken.error().code, Errc::verification_failed);
    EXPECT_NE(taken.error().message.find("warden agents forget r1"), std::string::npos) << taken.error().message;
    EXPECT_EQ(fleet.view("r1").state, AgentState::assigned);
    EXPECT_EQ(fleet.view("r1").owner, "alice");
  }
  // The owner's own restart re-registers; once forgotten, anyone may enrol the id afresh.
  ASSERT_TRUE(fleet.sup->register_agent({"r1", "runner", {}, "alice", "aa11"}));
  ASSERT_TRUE(fleet.sup->forget("r1"));
  auto fresh = fleet.sup->register_agent({"r1", "runner", {}, "bob", "cc33"});
  ASSERT_TRUE(fresh) << fresh.error().message;
  EXPECT_EQ(fresh->owner, "bob");
  EXPECT_EQ(fleet.view("r1").key, "cc33");
}

TEST(Supervisor, AnAgentKnownGoneIsFailedOnceNotAgainWhenItsHeartbeatsGoStale) {
  Fleet fleet;
  ASSERT_TRUE(fleet.sup->register_agent({"r1", "runner", {}}));
  ASSERT_TRUE(fleet.sup->fail_agent("r1", "its stream ended", /*gone=*/true));
  EXPECT_TRUE(fleet.view("r1").down);
  fleet.clock.advance(10 * fleet.sup->stale_after_ms());
  EXPECT_TRUE(fleet.sup->detect_failures()->empty()) << "already down: not failed a second time";
  auto events = types(fleet.events());
  EXPECT_EQ(std::count(events.begin(), events.end(), FleetEventType::failed), 1);
  ASSERT_TRUE(fleet.sup->heartbeat("r1"));
  EXPECT_FALSE(fleet.view("r1").down) << "a heartbeat brings it back";
}

TEST(Supervisor, AHeartbeatOrFailureForAnEarlierRegistrationChangesNothing) {
  Fleet fleet;
  auto first = fleet.sup->register_agent({"r1", "runner", {}});
  ASSERT_TRUE(first);
  const uint64_t e1 = first->epoch;
  EXPECT_NE(e1, 0u);
  ASSERT_TRUE(fleet.sup->heartbeat("r1", e1));
  auto second = fleet.sup->register_agent({"r1", "runner", {}});  // re-enrolled, maybe elsewhere
  ASSERT_TRUE(second);
  const uint64_t e2 = second->epoch;
  EXPECT_GT(e2, e1);
  fleet.clock.advance(1000);
  EXPECT_EQ(fleet.sup->heartbeat("r1", e1).error().code, Errc::failed_precondition);
  EXPECT_EQ(fleet.view("r1").record.last_heartbeat_ms, 1000) << "the old stream's heartbeat wrote nothing";
  EXPECT_EQ(fleet.sup->fail_agent("r1", "old stream ended", true, e1).error().code, Errc::failed_precondition);
  EXPECT_FALSE(fleet.view("r1").down);
  ASSERT_TRUE(fleet.sup->heartbeat("r1", e2));
  ASSERT_TRUE(fleet.sup->forget("r1"));
  EXPECT_EQ(fleet.sup->heartbeat("r1", e2).error().code, Errc::not_found);
  auto again = fleet.sup->register_agent({"r1", "runner", {}});
  ASSERT_TRUE(again);
  EXPECT_EQ(fleet.view("r1").epoch, again->epoch) << "the stored record names the registration";
  EXPECT_GT(again->epoch, e2) << "a registration after forget never reuses an earlier one's epoch";
}

// The attack of the review: a stream left at another server from before an operator's forget
// carries the epoch the id's first registration had. Registered again after the forget (by
// anyone), the id must not take that stream's heartbeats or be failed by its end.
TEST(Supervisor, AStreamFromBeforeAForgetCannotPassForTheNextRegistration) {
  Fleet fleet;
  auto old_stream = fleet.sup->register_agent({"r1", "runner", {}, "alice"});
  ASSERT_TRUE(old_stream);
  ASSERT_TRUE(fleet.sup->forget("r1"));
  auto next = fleet.sup->register_agent({"r1", "runner", {}, "bob"});
  ASSERT_TRUE(next);
  EXPECT_NE(next->epoch, old_stream->epoch);
  fleet.clock.advance(1000);
  const uint64_t version = fleet.view("r1").record.version;
  EXPECT_EQ(fleet.sup->heartbeat("r1", old_stream->epoch).error().code, Errc::failed_precondition);
  EXPECT_EQ(fleet.view("r1").record.version, version) << "the stale stream's heartbeat wrote to bob's record";
  EXPECT_EQ(fleet.sup->fail_agent("r1", "old stream ended", true, old_stream->epoch).error().code, Errc::failed_precondition);
  EXPECT_FALSE(fleet.view("r1").down) << "the stale stream's end failed bob's registration";
  EXPECT_EQ(fleet.view("r1").owner, "bob");
  ASSERT_TRUE(fleet.sup->heartbeat("r1", next->epoch));
}

TEST(Supervisor, AnAgentThatComesBackOnItsOwnIsNeverGivenUpForGoodByReconnecting) {
  Fleet fleet;  // intensity: 3 restarts in 60 s
  for (const bool self_restarting : {false, true}) {
    const std::string id = self_restarting ? "runner" : "spawned";
    AgentSpec spec{id, "runner", {}, "", "", self_restarting};
    ASSERT_TRUE(fleet.sup->register_agent(spec));
    for (int i = 0; i < 4; ++i) ASSERT_TRUE(fleet.sup->fail_agent(id, "stream ended", true));
    EXPECT_TRUE(fleet.view(id).given_up) << id;
    auto again = fleet.sup->register_agent(spec);
    ASSERT_TRUE(again);
    EXPECT_EQ(again->given_up, !self_restarting) << id << ": only the supervisor's own restarts are bounded";
    EXPECT_EQ(fleet.view(id).given_up, !self_restarting) << id;
  }
}

TEST(Supervisor, TwoSupervisorsOnOneStoreAssignEachTaskOnce) {
  Fleet fleet;
  auto second = Supervisor::create(*fleet.store, fleet.clock, fleet.random, test_config());
  ASSERT_TRUE(second);
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(fleet.sup->register_agent({"a" + std::to_string(i), "runner", {}}));
  for (int i = 0; i < 200; ++i) fleet.task("t" + std::to_string(i), i % 7);

  std::multiset<std::string> assigned;
  std::mutex mu;
  auto worker = [&](Supervisor& sup) {
    for (int round = 0; round < 200; ++round) {
      auto made = sup.assign();
      ASSERT_TRUE(made) << made.error().message;
      for (const auto& a : *made) {
        {
          std::lock_guard lock(mu);
          assigned.insert(a.claim.task.id);
        }
        // Either supervisor may drive the agent on; only one of them delivers each claim.
        if (!sup.started(a.agent_id, a.claim.ref())) continue;
        if (!sup.output_ready(a.agent_id, a.claim.ref())) continue;
        (void)sup.delivered(a.agent_id, a.claim.ref());
      }
    }
  };
  std::thread t1(worker, std::ref(*fleet.sup));
  std::thread t2(worker, std::ref(**second));
  t1.join();
  t2.join();
  EXPECT_EQ(assigned.size(), 200u);
  for (const auto& id : assigned) EXPECT_EQ(assigned.count(id), 1u) << id << " was assigned twice";
  EXPECT_EQ(fleet.store->queue_length().value(), 0u);
}

// A quorum's member is addressed to one owner ("runner:<owner>"): only that owner's agents
// take it, while tasks of the role go to any.
TEST(Supervisor, ATaskAddressedToAnOwnerGoesOnlyToThatOwnersAgents) {
  Fleet fleet;
  ASSERT_TRUE(fleet.sup->register_agent({"a1", "runner", {}, "alice", "aa11"}));
  ASSERT_TRUE(fleet.sup->register_agent({"b1", "runner", {}, "bob", "bb22"}));
  ASSERT_TRUE(fleet.sup->register_agent({"n1", "runner", {}, "", ""}));
  EXPECT_EQ(owner_kind("runner", "bob"), "runner:bob");
  EXPECT_EQ(owner_kind("runner", ""), "");
  EXPECT_EQ(owner_kind("runner", "not an id"), "") << "a kind that is no valid id is none";
  fleet.task("for-bob", 5, "runner:bob");
  for (int pass = 0; pass < 3; ++pass) {
    auto assigned = fleet.sup->assign();
    ASSERT_TRUE(assigned) << assigned.error().message;
    for (const auto& a : *assigned) {
      EXPECT_EQ(a.agent_id, "b1") << "only bob's agent takes bob's task";
      EXPECT_EQ(a.claim.task.id, "for-bob");
    }
    if (!assigned->empty()) break;
  }
  EXPECT_EQ(fleet.view("b1").task_id, "for-bob");
  EXPECT_EQ(fleet.view("a1").task_id, "");
  fleet.task("any", 1);
  auto assigned = fleet.sup->assign();
  ASSERT_TRUE(assigned);
  ASSERT_EQ(assigned->size(), 1u);
  EXPECT_NE(assigned->front().agent_id, "b1") << "b1 is busy; an idle one of any owner takes the role's task";
}

}  // namespace
}  // namespace warden::supervisor
