// The executor loop in-process: cycles and edge limits (a critic sending the run back), the
// global iteration limit, every bound with its terminal reason, error routing, parallel stages
// and joins, interrupts and resume, checkpoints and rollback, events, determinism.
#include "executor/state_machine.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <stop_token>
#include <thread>

#include "tests/executor/harness.h"

namespace warden::executor {
namespace {

using testing::always;
using testing::Harness;
using testing::moves;
using testing::output;
using testing::reason_of;
using testing::sequence;

// A critic that asks for reintent sends the run back to intent.
std::string reintent_loop(int edge_limit, int max_iterations = 10) {
  return R"({"name": "reintent", "max_iterations": )" + std::to_string(max_iterations) + R"(, "stages": [
    {"name": "intent", "kind": "constant", "params": {"output": {"intent": "x"}}, "default_next": "critic"},
    {"name": "critic", "kind": "constant", "params": {"output": {}},
     "routing": [{"when": {"field": "verdict", "op": "equals", "value": "reintent"}, "next": "intent"}]}],
    "edge_limits": [{"from": "critic", "to": "intent", "max_count": )" +
         std::to_string(edge_limit) + "}]}";
}

TEST(StateMachine, ReintentCyclesBackThenCompletes) {
  Harness h(reintent_loop(3), {{"critic", sequence({{{"verdict", "reintent"}}, {{"verdict", "approved"}}})}});
  RunState run = h.run();
  EXPECT_EQ(reason_of(run), TerminalReason::completed);
  EXPECT_EQ(run.envelope.iteration, 1);
  EXPECT_EQ(moves(run), (std::vector<std::string>{"intent>critic:default", "critic>intent:reintent",
                                                  "intent>critic:default", "critic>end:complete"}));
  // A checkpoint was taken as the cycle began, and the cycle's transition names it.
  ASSERT_EQ(run.checkpoints.size(), 1u);
  EXPECT_EQ(run.transitions[1].checkpoint, run.checkpoints[0].id);
  EXPECT_EQ(run.checkpoints[0].stage, "intent");
  EXPECT_EQ(run.checkpoints[0].iteration, 1);
  EXPECT_EQ(run.checkpoints[0].envelope.current_stage, "intent");
  EXPECT_EQ(run.edge_counts, std::vector<int64_t>{1});
  EXPECT_EQ(run.envelope.current_stage, "end");
  EXPECT_EQ(run.envelope.agent_hop_count, 4);
  EXPECT_EQ(run.envelope.processing_history.size(), 4u);
}

TEST(StateMachine, EdgeLimitRoutesToEndAndRecordsWhy) {
  Harness h(reintent_loop(2), {{"critic", always({{"verdict", "reintent"}})}});
  RunState run = h.run();
  EXPECT_EQ(reason_of(run), TerminalReason::edge_limit_exceeded);
  EXPECT_EQ(run.envelope.iteration, 2);  // two cycles taken, the third refused
  EXPECT_EQ(run.edge_counts, std::vector<int64_t>{2});
  EXPECT_EQ(moves(run), (std::vector<std::string>{"intent>critic:default", "critic>intent:reintent", "intent>critic:default",
                                                  "critic>intent:reintent", "intent>critic:default", "critic>end:complete"}));
  EXPECT_EQ(run.transitions.back().detail, "edge critic -> intent reached its max_count 2");
  EXPECT_EQ(run.envelope.termination_reason, "edge critic -> intent reached its max_count 2");
  EXPECT_TRUE(run.envelope.terminated);
  EXPECT_TRUE(run.envelope.active_stages.empty());
  EXPECT_EQ(run.checkpoints.size(), 2u);
}

TEST(StateMachine, GlobalIterationLimitEndsCyclesWithoutEdgeLimits) {
  Harness h(R"({"name": "g", "max_iterations": 2, "stages": [
    {"name": "a", "kind": "constant", "params": {"output": {}}, "default_next": "b"},
    {"name": "b", "kind": "constant", "params": {"output": {}}, "default_next": "a"}]})");
  RunState run = h.run();
  EXPECT_EQ(reason_of(run), TerminalReason::max_iterations_exceeded);
  EXPECT_EQ(run.envelope.iteration, 2);
  EXPECT_EQ(moves(run).back(), "b>end:complete");
  EXPECT_EQ(run.transitions.back().detail, "cycle b -> a would start iteration 3 of max_iterations 2");
  EXPECT_EQ(run.envelope.agent_hop_count, 6);
}

TEST(StateMachine, SelfLoopIsACycle) {
  Harness h(R"({"name": "self", "max_iterations": 3, "stages": [
    {"name": "a", "kind": "constant", "params": {"output": {}}, "default_next": "a"}]})");
  RunState run = h.run();
  EXPECT_EQ(reason_of(run), TerminalReason::max_iterations_exceeded);
  EXPECT_EQ(run.envelope.agent_hop_count, 4);
  EXPECT_EQ(run.checkpoints.size(), 3u);
}

TEST(StateMachine, EveryBoundEndsTheRunWithItsReason) {
  {  // LLM calls: charged after each stage, checked before the next step.
    Harness h(R"({"name": "llm", "max_llm_calls": 7, "max_iterations": 100, "stages": [
      {"name": "a", "kind": "constant", "params": {"output": {}, "llm_calls": 3}, "default_next": "a"}]})");
    RunState run = h.run();
    EXPECT_EQ(reason_of(run), TerminalReason::max_llm_calls_exceeded);
    EXPECT_EQ(run.envelope.llm_call_count, 9);
    EXPECT_EQ(run.envelope.termination_reason, "llm_call_count 9 reached max_llm_calls 7");
  }
  {  // Agent hops: one per stage run.
    Harness h(R"({"name": "hops", "max_agent_hops": 3, "stages": [
      {"name": "a", "kind": "constant", "params": {"output": {}}, "default_next": "b"},
      {"name": "b", "kind": "constant", "params": {"output": {}}, "default_next": "c"},
      {"name": "c", "kind": "constant", "params": {"output": {}}, "default_next": "d"},
      {"name": "d", "kind": "constant", "params": {"output": {}}}]})");
    RunState run = h.run();
    EXPECT_EQ(reason_of(run), TerminalReason::max_agent_hops_exceeded);
    EXPECT_EQ(run.envelope.agent_hop_count, 3);
    EXPECT_FALSE(run.envelope.outputs.contains("d"));
  }
  {  // A parallel batch that would pass the hop budget does not start.
    Harness h(R"({"name": "hops2", "max_agent_hops": 3, "stages": [
      {"name": "s", "kind": "constant", "params": {"output": {}}, "default_next": ["a", "b", "c"]},
      {"name": "a", "kind": "constant", "params": {"output": {}}},
      {"name": "b", "kind": "constant", "params": {"output": {}}},
      {"name": "c", "kind": "constant", "params": {"output": {}}}]})");
    RunState run = h.run();
    EXPECT_EQ(reason_of(run), TerminalReason::max_agent_hops_exceeded);
    EXPECT_EQ(run.envelope.agent_hop_count, 1);
    EXPECT_EQ(run.envelope.termination_reason, "the next step runs 3 stage(s); agent_hop_count 1 of max_agent_hops 3");
  }
  {  // A failure without error_next.
    Harness h(R"({"name": "fail", "stages": [{"name": "a", "kind": "constant", "params": {"output": {}}}]})",
              {{"a", [](const StageContext&) { return StageResult::failure("disk on fire"); }}});
    RunState run = h.run();
    EXPECT_EQ(reason_of(run), TerminalReason::stage_failed);
    EXPECT_EQ(moves(run), std::vector<std::string>{"a>end:error"});
    EXPECT_EQ(run.envelope.termination_reason, "stage a failed: disk on fire");
    EXPECT_EQ(run.envelope.failed_stages.at("a"), "disk on fire");
    EXPECT_EQ(run.envelope.errors.at(0)["error"], "disk on fire");
  }
  {  // A stage waiting for one that is never scheduled.
    Harness h(R"({"name": "dead", "stages": [
      {"name": "a", "kind": "constant", "params": {"output": {}}, "default_next": "j"},
      {"name": "b", "kind": "constant", "params": {"output": {}}},
      {"name": "j", "kind": "constant", "params": {"output": {}}, "requires": ["a", "b"]}]})");
    RunState run = h.run();
    EXPECT_EQ(reason_of(run), TerminalReason::deadlock);
    EXPECT_EQ(run.envelope.termination_reason, "j waits for b (which is not scheduled)");
  }
  {  // Multi-stage execution past max_stages.
    Harness h(R"({"name": "stages", "max_stages": 2, "max_iterations": 10, "stages": [
      {"name": "a", "kind": "constant", "params": {"output": {"more": true}},
       "routing": [{"when": {"field": "more", "op": "equals", "value": true}, "next": "a", "advance_stage": true}]}]})");
    RunState run = h.run();
    EXPECT_EQ(reason_of(run), TerminalReason::max_stages_exceeded);
    EXPECT_EQ(run.envelope.current_stage_number, 2);
    EXPECT_EQ(moves(run), (std::vector<std::string>{"a>a:next_stage", "a>end:complete"}));
    EXPECT_EQ(run.envelope.completed_stages.size(), 1u);
  }
  {  // The caller's stop request.
    Harness h(reintent_loop(5));
    RunState run = h.start();
    std::stop_source stop;
    stop.request_stop();
    ASSERT_TRUE(h.exec.run(run, stop.get_token()));
    EXPECT_EQ(reason_of(run), TerminalReason::cancelled);
    EXPECT_EQ(run.envelope.agent_hop_count, 0);
  }
}

TEST(StateMachine, FailuresRouteThroughErrorNext) {
  Harness h(R"({"name": "err", "stages": [
    {"name": "build", "kind": "constant", "params": {"output": {}}, "error_next": "fix", "default_next": "end"},
    {"name": "fix", "kind": "constant", "params": {"output": {"fixed": true}}, "default_next": "build"}]})",
            {{"build", [calls = std::make_shared<int>(0)](const StageContext&) {
                return ++*calls == 1 ? StageResult::failure("compile error", 2) : output({{"ok", true}});
              }}});
  RunState run = h.run();
  EXPECT_EQ(reason_of(run), TerminalReason::completed);
  EXPECT_EQ(moves(run), (std::vector<std::string>{"build>fix:error", "fix>build:reintent", "build>end:complete"}));
  EXPECT_EQ(run.transitions[0].detail, "compile error");
  EXPECT_EQ(run.envelope.llm_call_count, 2);  // a failing stage's calls still count
  EXPECT_TRUE(run.envelope.failed_stages.empty());  // cleared when build succeeded
  EXPECT_EQ(run.envelope.errors.size(), 1u);
  EXPECT_EQ(run.envelope.processing_history[0].status, "error");
  EXPECT_EQ(run.envelope.processing_history[0].error, "compile error");
}

TEST(StateMachine, ThrowingAndInvalidStagesAreFailures) {
  Harness h(R"({"name": "bad", "stages": [
    {"name": "a", "kind": "constant", "params": {"output": {}}, "error_next": "b", "default_next": "b"},
    {"name": "b", "kind": "constant", "params": {"output": {}}}]})",
            {{"a", [](const StageContext&) -> StageResult { throw std::runtime_error("bug"); }},
             {"b", [](const StageContext&) { return output({{"score", 0.5}}); }}});
  RunState run = h.run();
  EXPECT_EQ(run.transitions[0].detail, "stage a threw: bug");
  EXPECT_EQ(reason_of(run), TerminalReason::stage_failed);
  EXPECT_NE(run.envelope.termination_reason->find("stage b answered an invalid result: stage output: floating-point "
                                                  "number at /score"),
            std::string::npos);
}

// Three stages that each wait until all three have started: they can only finish if they
// really run at the same time.
struct Rendezvous {
  std::mutex mu;
  std::condition_variable cv;
  int arrived = 0, running = 0, max_running = 0;

  StageResult arrive(const std::string& name, int expected) {
    std::unique_lock lock(mu);
    ++arrived;
    max_running = std::max(max_running, ++running);
    cv.notify_all();
    bool all = cv.wait_for(lock, std::chrono::seconds(10), [&] { return arrived >= expected; });
    --running;
    return output({{"from", name}, {"met_all", all}});
  }
};

constexpr const char* kFanOut = R"({"name": "fan", "max_parallel": %d, "stages": [
  {"name": "split", "kind": "constant", "params": {"output": {"n": 3}}, "default_next": ["a", "b", "c"]},
  {"name": "a", "kind": "constant", "params": {"output": {}}, "default_next": "join"},
  {"name": "b", "kind": "constant", "params": {"output": {}}, "default_next": "join"},
  {"name": "c", "kind": "constant", "params": {"output": {}}, "default_next": "join"},
  {"name": "join", "kind": "join", "requires": ["a", "b", "c"]}]})";

std::string fan_out(int max_parallel) {
  char buf[1024];
  std::snprintf(buf, sizeof buf, kFanOut, max_parallel);
  return buf;
}

TEST(StateMachine, IndependentStagesRunInParallelAndJoin) {
  auto rv = std::make_shared<Rendezvous>();
  testing::StageFns fns;
  for (const char* s : {"a", "b", "c"}) fns[s] = [rv, s](const StageContext&) { return rv->arrive(s, 3); };
  Harness h(fan_out(3), fns);
  RunState run = h.run();
  EXPECT_EQ(reason_of(run), TerminalReason::completed);
  EXPECT_EQ(rv->max_running, 3);
  const Json& joined = run.envelope.outputs.at("join")["joined"];
  for (const char* s : {"a", "b", "c"}) {
    EXPECT_EQ(joined[s]["from"], s);
    EXPECT_EQ(joined[s]["met_all"], true);
  }
  EXPECT_EQ(moves(run), (std::vector<std::string>{"split>a:default", "split>b:default", "split>c:default", "a>join:default",
                                                  "b>join:default", "c>join:default", "join>end:complete"}));
  EXPECT_EQ(run.step, 3u);  // split, {a, b, c}, join
  // Events of a parallel batch come in config order, from the driving thread.
  auto types = h.event_types();
  std::vector<std::string> batch(types.begin() + 5, types.begin() + 11);
  EXPECT_EQ(batch, (std::vector<std::string>{"stage_started:a", "stage_started:b", "stage_started:c",
                                             "stage_completed:a", "stage_completed:b", "stage_completed:c"}));
}

TEST(StateMachine, MaxParallelBoundsTheWorkers) {
  auto rv = std::make_shared<Rendezvous>();
  testing::StageFns fns;
  for (const char* s : {"a", "b", "c"}) fns[s] = [rv, s](const StageContext&) { return rv->arrive(s, 1); };
  Harness h(fan_out(1), fns);
  RunState run = h.run();
  EXPECT_EQ(reason_of(run), TerminalReason::completed);
  EXPECT_EQ(rv->max_running, 1);
  EXPECT_EQ(run.envelope.outputs.at("join")["joined"].size(), 3u);
}

TEST(StateMachine, JoinWaitsForTheSlowerBranch) {
  Harness h(R"({"name": "uneven", "stages": [
    {"name": "split", "kind": "constant", "params": {"output": {}}, "default_next": ["fast", "slow"]},
    {"name": "fast", "kind": "constant", "params": {"output": {"v": 1}}, "default_next": "join"},
    {"name": "slow", "kind": "constant", "params": {"output": {}}, "default_next": "slow2"},
    {"name": "slow2", "kind": "constant", "params": {"output": {"v": 2}}, "default_next": "join"},
    {"name": "join", "kind": "join", "requires": ["fast", "slow2"]}]})");
  RunState run = h.run();
  EXPECT_EQ(reason_of(run), TerminalReason::completed);
  EXPECT_EQ(run.step, 4u);  // split, {fast, slow}, slow2 (join not ready), join
  EXPECT_EQ(run.envelope.processing_history.back().agent, "join");
  EXPECT_EQ(run.envelope.outputs.at("join")["joined"]["slow2"]["v"], 2);
  size_t join_runs = 0;
  for (const auto& r : run.envelope.processing_history) join_runs += r.agent == "join";
  EXPECT_EQ(join_runs, 1u);
}

TEST(StateMachine, CyclesReopenJoins) {
  // The whole fan-out repeats: join must wait for the new a and b, not last pass's.
  Harness h(R"({"name": "again", "max_iterations": 5, "stages": [
    {"name": "split", "kind": "constant", "params": {"output": {}}, "default_next": ["a", "b"]},
    {"name": "a", "kind": "constant", "params": {"output": {}}, "default_next": "join"},
    {"name": "b", "kind": "constant", "params": {"output": {}}, "default_next": "b2"},
    {"name": "b2", "kind": "constant", "params": {"output": {}}, "default_next": "join"},
    {"name": "join", "kind": "join", "requires": ["a", "b2"],
     "routing": [{"when": {"field": "again", "op": "equals", "value": true}, "next": "split"}]}]})",
            {{"join", sequence({{{"again", true}}, {{"again", false}}})}});
  RunState run = h.run();
  EXPECT_EQ(reason_of(run), TerminalReason::completed);
  EXPECT_EQ(run.step, 8u);  // two passes of split, {a, b}, b2, join
  std::vector<std::string> order;
  for (const auto& r : run.envelope.processing_history) order.push_back(r.agent);
  EXPECT_EQ(order, (std::vector<std::string>{"split", "a", "b", "b2", "join", "split", "a", "b", "b2", "join"}));
}

constexpr const char* kApproval = R"({"name": "approval", "stages": [
  {"name": "draft", "kind": "constant", "params": {"output": {"text": "notes"}}, "default_next": "approve"},
  {"name": "approve", "kind": "approval", "params": {"question": "Publish?"},
   "routing": [{"when": {"field": "approved", "op": "equals", "value": true}, "next": "publish"}]},
  {"name": "publish", "kind": "constant", "params": {"output": {"published": true}}}]})";

TEST(StateMachine, InterruptStopsTheRunAndResumeContinuesFromIt) {
  Harness h(kApproval);
  RunState run = h.run();
  EXPECT_TRUE(run.waiting());
  EXPECT_FALSE(run.ended());
  const auto& interrupt = run.envelope.interrupt;
  ASSERT_TRUE(interrupt);
  EXPECT_EQ(interrupt->kind, "approval");
  EXPECT_EQ(interrupt->stage, "approve");
  EXPECT_EQ(interrupt->question, "Publish?");
  EXPECT_EQ(interrupt->id, "int-2");
  EXPECT_EQ(run.envelope.active_stages.count("approve"), 1u);
  EXPECT_EQ(run.envelope.processing_history.back().status, "interrupted");
  EXPECT_EQ(h.event_types().back(), "interrupt_raised:approve");
  // run() again does nothing while the interrupt is pending.
  ASSERT_TRUE(h.exec.run(run));
  EXPECT_EQ(run.step, 2u);

  ASSERT_TRUE(h.exec.resume(run, "Yes"));
  EXPECT_FALSE(run.waiting());
  EXPECT_EQ(run.envelope.interrupt->response, "Yes");
  ASSERT_TRUE(h.exec.run(run));
  EXPECT_EQ(reason_of(run), TerminalReason::completed);
  EXPECT_EQ(run.envelope.outputs.at("approve")["approved"], true);
  EXPECT_EQ(run.envelope.outputs.at("publish")["published"], true);
  EXPECT_FALSE(run.envelope.interrupt);  // answered and consumed
  EXPECT_EQ(moves(run), (std::vector<std::string>{"draft>approve:default", "approve>publish:routing", "publish>end:complete"}));

  auto again = h.exec.resume(run, "yes");
  ASSERT_FALSE(again);
  EXPECT_NE(again.error().message.find("is not waiting for a response"), std::string::npos);
}

TEST(StateMachine, RefusedApprovalTakesTheDefaultRoute) {
  Harness h(kApproval);
  RunState run = h.run();
  ASSERT_TRUE(h.exec.resume(run, "no"));
  ASSERT_TRUE(h.exec.run(run));
  EXPECT_EQ(reason_of(run), TerminalReason::completed);
  EXPECT_FALSE(run.envelope.outputs.contains("publish"));
  EXPECT_EQ(moves(run).back(), "approve>end:complete");
}

TEST(StateMachine, RollbackRestoresACheckpointAndRunsTheCycleAgain) {
  Harness h(reintent_loop(2), {{"critic", always({{"verdict", "reintent"}})}});
  RunState run = h.run();
  ASSERT_EQ(reason_of(run), TerminalReason::edge_limit_exceeded);
  ASSERT_EQ(run.checkpoints.size(), 2u);
  const Checkpoint first = run.checkpoints[0];
  size_t transitions_before = run.transitions.size();

  ASSERT_TRUE(h.exec.rollback(run, first.id));
  EXPECT_EQ(run.envelope, first.envelope);
  EXPECT_EQ(run.edge_counts, std::vector<int64_t>{1});
  EXPECT_FALSE(run.ended());
  EXPECT_EQ(run.envelope.iteration, 1);
  ASSERT_TRUE(h.exec.run(run));
  // From the first cycle on, the loop runs again: one more cycle, then the limit.
  EXPECT_EQ(reason_of(run), TerminalReason::edge_limit_exceeded);
  std::vector<std::string> all = moves(run);
  std::vector<std::string> after(all.begin() + static_cast<long>(transitions_before), all.end());
  EXPECT_EQ(after, (std::vector<std::string>{"intent>critic:default", "critic>intent:reintent", "intent>critic:default",
                                             "critic>end:complete"}));
  EXPECT_EQ(run.checkpoints.back().id, "cp-" + std::to_string(run.step - 2));  // ids keep counting: no reuse

  auto missing = h.exec.rollback(run, "cp-999");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, Errc::not_found);
  EXPECT_TRUE(run.latest_checkpoint_for("intent"));
  EXPECT_FALSE(run.latest_checkpoint_for("critic"));
}

TEST(StateMachine, EventsArriveInOrder) {
  Harness h(R"({"name": "two", "max_iterations": 1, "stages": [
    {"name": "a", "kind": "constant", "params": {"output": {}}, "default_next": "b"},
    {"name": "b", "kind": "constant", "params": {"output": {"again": true}},
     "routing": [{"when": {"field": "again", "op": "equals", "value": true}, "next": "a"}]}]})");
  RunState run = h.run();
  EXPECT_EQ(h.event_types(),
            (std::vector<std::string>{"stage_started:a", "stage_completed:a", "transition:a", "stage_started:b",
                                      "stage_completed:b", "transition:b", "checkpoint_created:a", "stage_started:a",
                                      "stage_completed:a", "transition:a", "stage_started:b", "stage_completed:b",
                                      "transition:b", "pipeline_completed"}));
  EXPECT_EQ(h.events.back().payload["terminal_reason"], "max_iterations_exceeded");
  EXPECT_EQ(h.events[1].payload["output"], Json::object());
  for (const auto& e : h.events) EXPECT_EQ(e.run_id, run.run_id);
}

TEST(StateMachine, SameInputsGiveTheSameRun) {
  auto once = [] {
    auto rv = std::make_shared<Rendezvous>();
    testing::StageFns fns;
    for (const char* s : {"a", "b", "c"}) fns[s] = [rv, s](const StageContext&) { return rv->arrive(s, 3); };
    Harness h(fan_out(3), fns);
    RunState run = h.run("same input");
    Json events = Json::array();
    for (const auto& e : h.events) {
      events.push_back({{"type", event_type_name(e.type)}, {"run_id", e.run_id}, {"stage", e.stage},
                        {"timestamp_ms", e.timestamp_ms}, {"step", e.step}, {"data", e.payload}});
    }
    Json transitions = Json::array();
    for (const auto& t : run.transitions) transitions.push_back(transition_to_json(t));
    return Json{{"envelope", envelope_to_json(run.envelope)}, {"events", events}, {"transitions", transitions}};
  };
  Json first = once();
  EXPECT_EQ(*canonicalize(first), *canonicalize(once()));
  EXPECT_EQ(first["envelope"]["envelope_id"], "env-000002");
}

TEST(StateMachine, StagesSeeTheEnvelopeAndApplyEffects) {
  Harness h(R"({"name": "fx", "stages": [
    {"name": "plan", "kind": "constant", "params": {"output": {}}, "default_next": "work"},
    {"name": "work", "kind": "constant", "params": {"output": {}}}]})",
            {{"plan",
              [](const StageContext& ctx) {
                StageResult r = output({{"saw", ctx.envelope.raw_input}, {"stage", ctx.spec.name}, {"run", ctx.run_id}});
                r.effects.goals = {"g1", "g2"};
                r.effects.feedback = {"be careful"};
                r.effects.metadata = Json{{"k", 1}};
                r.effects.prior_plan = Json{{"v", 1}};
                return r;
              }},
             {"work", [](const StageContext& ctx) {
                StageResult r = output({{"plan_saw", ctx.envelope.outputs.at("plan")["saw"]},
                                        {"timeout_ms", ctx.timeout.count()}});
                r.effects.completed_goals = {"g1", "nope"};
                return r;
              }}});
  RunState run = h.run("the input");
  const Envelope& e = run.envelope;
  EXPECT_EQ(e.outputs.at("plan")["saw"], "the input");
  EXPECT_EQ(e.outputs.at("plan")["run"], run.run_id);
  EXPECT_EQ(e.outputs.at("work")["plan_saw"], "the input");
  EXPECT_EQ(e.outputs.at("work")["timeout_ms"], 30000);
  EXPECT_EQ(e.remaining_goals, std::vector<std::string>{"g2"});
  EXPECT_EQ(e.loop_feedback, std::vector<std::string>{"be careful"});
  EXPECT_EQ(e.metadata["k"], 1);
  EXPECT_EQ(e.prior_plans.size(), 1u);
  ASSERT_EQ(e.errors.size(), 1u);  // the unknown goal is recorded
  EXPECT_EQ(e.errors[0]["error"], "unknown goal \"nope\"");
}

}  // namespace
}  // namespace warden::executor
