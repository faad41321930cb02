// The Envelope: clone() shares nothing with the original, the JSON round trip is lossless
// (a property test over random envelopes), strict parsing names bad fields, goal helpers and
// bounds behave as documented in executor/envelope.h.
#include "executor/envelope.h"

#include <gtest/gtest.h>

#include <random>

#include "executor/stage_result.h"

namespace warden::executor {
namespace {

Envelope sample() {
  Envelope e;
  e.envelope_id = "env-1";
  e.raw_input = "hello";
  e.outputs["planner"] = Json{{"plan", {{"steps", {"a", "b"}}}}, {"n", 1}};
  e.stage_order = {"planner", "critic"};
  e.active_stages["critic"] = true;
  e.completed_stage_set["planner"] = true;
  e.failed_stages["x"] = "boom";
  e.terminal_reason = TerminalReason::edge_limit_exceeded;
  e.termination_reason = "why";
  e.interrupt = FlowInterrupt{"int-1", "approval", "critic", "ok?", Json{{"diff", "x"}}, 5, std::nullopt, std::nullopt};
  e.completed_stages.push_back(Json{{"stage_number", 1}});
  e.initialize_goals({"g1", "g2"});
  e.prior_plans.push_back(Json{{"plan", "old"}});
  e.loop_feedback = {"add tests"};
  e.processing_history.push_back(ProcessingRecord{"planner", 0, 10, 12, 2, "success", std::nullopt, 1});
  e.errors.push_back(Json{{"stage", "x"}, {"error", "boom"}});
  e.created_at = 10;
  e.completed_at = 99;
  e.metadata = Json{{"capability", {{"name", "code"}}}};
  return e;
}

TEST(Envelope, CloneIsADeepCopy) {
  const Envelope original = sample();
  Envelope clone = original.clone();
  ASSERT_EQ(clone, original);

  // Change every kind of member of the clone, nested JSON included.
  clone.outputs["planner"]["plan"]["steps"][0] = "modified";
  clone.outputs["new"] = Json::object();
  clone.stage_order.push_back("z");
  clone.active_stages["critic"] = false;
  clone.completed_stage_set.clear();
  clone.failed_stages["x"] = "other";
  *clone.termination_reason += "!";
  clone.interrupt->payload["diff"] = "y";
  clone.interrupt->response = "yes";
  clone.completed_stages[0]["stage_number"] = 2;
  clone.mark_goal_complete("g1");
  clone.prior_plans[0]["plan"] = "new";
  clone.loop_feedback[0] += "?";
  clone.processing_history[0].status = "error";
  clone.errors[0]["error"] = "changed";
  *clone.completed_at += 1;
  clone.metadata["capability"]["name"] = "other";
  clone.iteration = 7;

  const Envelope fresh = sample();
  EXPECT_EQ(original, fresh);  // the original saw none of it
  EXPECT_EQ(original.outputs.at("planner")["plan"]["steps"][0], "a");
  EXPECT_EQ(original.interrupt->payload["diff"], "x");
  EXPECT_EQ(original.metadata["capability"]["name"], "code");
  EXPECT_EQ(original.remaining_goals.size(), 2u);
  EXPECT_NE(clone, original);
}

// ---------------------------------------------------------------- random envelopes

class Gen {
 public:
  explicit Gen(uint64_t seed) : rng_(seed) {}

  int64_t integer() {
    switch (pick(4)) {
      case 0: return pick(10);
      case 1: return -static_cast<int64_t>(pick(1000));
      case 2: return kMaxCanonicalInteger - static_cast<int64_t>(pick(5));
      default: return std::uniform_int_distribution<int64_t>(-kMaxCanonicalInteger, kMaxCanonicalInteger)(rng_);
    }
  }
  std::string text() {
    static const char* const kPieces[] = {"a", "Z", " ", "\"", "\\", "\n", "\t", "\x01", "é", "€", "😀", "/", "end", "{"};
    std::string s;
    for (size_t n = pick(8); n > 0; --n) s += kPieces[pick(std::size(kPieces))];
    return s;
  }
  Json value(int depth) {
    switch (pick(depth > 2 ? 4 : 6)) {
      case 0: return nullptr;
      case 1: return pick(2) == 1;
      case 2: return integer();
      case 3: return text();
      case 4: {
        Json a = Json::array();
        for (size_t n = pick(4); n > 0; --n) a.push_back(value(depth + 1));
        return a;
      }
      default: return object(depth + 1);
    }
  }
  Json object(int depth = 0) {
    Json o = Json::object();
    for (size_t n = pick(4); n > 0; --n) o[text()] = value(depth);
    return o;
  }
  template <typename T, typename F>
  std::optional<T> maybe(F make) {
    if (pick(2) == 0) return std::nullopt;
    return make();
  }
  std::vector<std::string> texts() {
    std::vector<std::string> v;
    for (size_t n = pick(4); n > 0; --n) v.push_back(text());
    return v;
  }
  std::vector<Json> objects() {
    std::vector<Json> v;
    for (size_t n = pick(3); n > 0; --n) v.push_back(object());
    return v;
  }
  template <typename V, typename F>
  std::map<std::string, V> map(F make) {
    std::map<std::string, V> m;
    for (size_t n = pick(4); n > 0; --n) m[text()] = make();
    return m;
  }
  size_t pick(size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng_); }
  int64_t count() { return static_cast<int64_t>(pick(1000)); }

  Envelope envelope() {
    Envelope e;
    e.envelope_id = text();
    e.request_id = text();
    e.user_id = text();
    e.session_id = text();
    e.raw_input = text();
    e.received_at = maybe<int64_t>([&] { return integer(); });
    e.outputs = map<Json>([&] { return object(); });
    e.current_stage = text();
    e.stage_order = texts();
    e.iteration = count();
    e.max_iterations = count();
    e.llm_call_count = count();
    e.max_llm_calls = count();
    e.agent_hop_count = count();
    e.max_agent_hops = count();
    e.terminal_reason = maybe<TerminalReason>([&] { return static_cast<TerminalReason>(pick(9)); });
    e.terminated = pick(2) == 1;
    e.termination_reason = maybe<std::string>([&] { return text(); });
    e.interrupt_pending = pick(2) == 1;
    e.interrupt = maybe<FlowInterrupt>([&] {
      return FlowInterrupt{text(), text(), text(), maybe<std::string>([&] { return text(); }),
                           pick(2) ? object() : Json(nullptr), integer(), maybe<std::string>([&] { return text(); }),
                           maybe<int64_t>([&] { return integer(); })};
    });
    e.active_stages = map<bool>([&] { return pick(2) == 1; });
    e.completed_stage_set = map<bool>([&] { return pick(2) == 1; });
    e.failed_stages = map<std::string>([&] { return text(); });
    e.parallel_mode = pick(2) == 1;
    e.completed_stages = objects();
    e.current_stage_number = count();
    e.max_stages = count();
    e.all_goals = texts();
    e.remaining_goals = texts();
    e.goal_completion_status = map<std::string>([&] { return text(); });
    e.prior_plans = objects();
    e.loop_feedback = texts();
    for (size_t n = pick(4); n > 0; --n) {
      e.processing_history.push_back(ProcessingRecord{text(), count(), integer(), maybe<int64_t>([&] { return integer(); }),
                                                      count(), text(), maybe<std::string>([&] { return text(); }), count()});
    }
    e.errors = objects();
    e.created_at = maybe<int64_t>([&] { return integer(); });
    e.completed_at = maybe<int64_t>([&] { return integer(); });
    e.metadata = object();
    return e;
  }

 private:
  std::mt19937_64 rng_;
};

TEST(Envelope, JsonRoundTripIsLosslessForRandomEnvelopes) {
  Gen gen(20260106);
  for (int i = 0; i < 400; ++i) {
    Envelope e = gen.envelope();
    auto canonical = canonicalize(envelope_to_json(e));
    ASSERT_TRUE(canonical) << canonical.error().message;
    // Through the bytes a ledger stores: canonical text, parsed back, checked canonical.
    auto parsed = parse_canonical_json(*canonical);
    ASSERT_TRUE(parsed) << parsed.error().message;
    auto back = envelope_from_json(*parsed);
    ASSERT_TRUE(back) << back.error().message;
    ASSERT_EQ(*back, e) << "envelope " << i << ": " << *canonical;
    EXPECT_EQ(*canonicalize(envelope_to_json(*back)), *canonical);
    EXPECT_EQ(back->clone(), e);
  }
}

TEST(Envelope, ToJsonCarriesEveryField) {
  Json j = envelope_to_json(Envelope{});
  for (const char* key :
       {"envelope_id", "request_id", "user_id", "session_id", "raw_input", "received_at", "outputs", "current_stage",
        "stage_order", "iteration", "max_iterations", "llm_call_count", "max_llm_calls", "agent_hop_count",
        "max_agent_hops", "terminal_reason", "terminated", "termination_reason", "interrupt_pending", "interrupt",
        "active_stages", "completed_stage_set", "failed_stages", "parallel_mode", "completed_stages",
        "current_stage_number", "max_stages", "all_goals", "remaining_goals", "goal_completion_status", "prior_plans",
        "loop_feedback", "processing_history", "errors", "created_at", "completed_at", "metadata"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j.size(), 37u);
}

TEST(Envelope, FromJsonRefusesBadFieldsByName) {
  auto error = [](Json j) {
    auto e = envelope_from_json(j);
    return e ? std::string("(parsed)") : e.error().message;
  };
  EXPECT_EQ(error(Json{{"iteration", "3"}}), "envelope.iteration: must be an integer");
  EXPECT_EQ(error(Json{{"outputs", {{"a", 1}}}}), "envelope.outputs.a: must be a JSON object");
  EXPECT_EQ(error(Json{{"terminal_reason", "bored"}}), "envelope.terminal_reason: unknown terminal reason \"bored\"");
  EXPECT_EQ(error(Json{{"processing_history", {{{"agent", "a"}}}}}), "envelope.processing_history[0].stage_order: is required");
  EXPECT_EQ(error(Json{{"interrupt", {{"id", "i"}, {"kind", "k"}, {"stage", "s"}}}}), "envelope.interrupt.created_at: is required");
  EXPECT_EQ(error(Json{{"colour", "red"}}), "envelope.colour: unknown field");
  EXPECT_EQ(error(Json::array()), "envelope: must be a JSON object");
  EXPECT_EQ(error(Json{{"active_stages", {{"a", 1}}}}), "envelope.active_stages.a: must be true or false");
}

TEST(Envelope, GoalHelpers) {
  Envelope e;
  e.initialize_goals({"find entry", "trace login", "audit"});
  EXPECT_EQ(e.remaining_goals.size(), 3u);
  EXPECT_EQ(e.goal_completion_status.at("audit"), "pending");
  EXPECT_TRUE(e.mark_goal_complete("find entry"));
  EXPECT_FALSE(e.mark_goal_complete("unknown goal"));
  EXPECT_EQ(e.remaining_goals, (std::vector<std::string>{"trace login", "audit"}));
  EXPECT_EQ(e.goal_completion_status.at("find entry"), "complete");
  EXPECT_FALSE(e.is_stuck());  // no stage closed yet

  e.advance_stage();  // stage 1 closes with 1 goal done
  EXPECT_EQ(e.current_stage_number, 2);
  Json ctx = e.stage_context();
  EXPECT_EQ(ctx["current_stage_number"], 2);
  EXPECT_EQ(ctx["remaining_goals"].size(), 2u);
  EXPECT_EQ(ctx["completed_stages"][0]["goals_completed"], 1);
  EXPECT_FALSE(e.is_stuck());  // one closed stage is not enough to judge

  e.advance_stage();  // stage 2: no progress
  EXPECT_FALSE(e.is_stuck(2));  // over stages 1-2 one goal was completed
  e.advance_stage();  // stage 3: no progress
  EXPECT_TRUE(e.is_stuck(2));  // stages 2 and 3 completed nothing
  EXPECT_FALSE(e.is_stuck(3));
  e.mark_goal_complete("audit");
  e.advance_stage();
  EXPECT_FALSE(e.is_stuck(2));
}

TEST(Envelope, BoundsExceeded) {
  Envelope e;
  e.max_iterations = 2;
  e.max_llm_calls = 5;
  e.max_agent_hops = 4;
  EXPECT_FALSE(e.bounds_exceeded());
  e.agent_hop_count = 3;
  EXPECT_FALSE(e.bounds_exceeded(1));
  EXPECT_EQ(e.bounds_exceeded(2), TerminalReason::max_agent_hops_exceeded);
  e.llm_call_count = 5;
  EXPECT_EQ(e.bounds_exceeded(), TerminalReason::max_llm_calls_exceeded);
  e.iteration = 3;
  EXPECT_EQ(e.bounds_exceeded(), TerminalReason::max_iterations_exceeded);
}

TEST(StageResult, AnswerJsonRoundTripAndStrictness) {
  StageResult r;
  r.output = Json{{"verdict", "ok"}};
  r.llm_calls = 3;
  r.interrupt = InterruptRequest{"approval", "ship it?", Json{{"diff", "x"}}};
  r.effects.feedback = {"more tests"};
  r.effects.goals = {"g"};
  r.effects.completed_goals = {"g"};
  r.effects.prior_plan = Json{{"plan", 1}};
  r.effects.metadata = Json{{"k", "v"}};
  auto back = stage_result_from_json(stage_result_to_json(r), "answer");
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(*back, r);
  EXPECT_EQ(stage_result_to_json(StageResult{}), Json::object());

  auto error = [](const char* text) {
    auto r = stage_result_from_json(Json::parse(text), "answer");
    return r ? std::string("(parsed)") : r.error().message;
  };
  EXPECT_EQ(error(R"({"output": [1]})"), "answer.output: must be a JSON object");
  EXPECT_EQ(error(R"({"output": {}, "llm_calls": -1})"), "answer.llm_calls: must be between 0 and 1000000000");
  EXPECT_EQ(error(R"({"outputs": {}})"), "answer.outputs: unknown field");
  EXPECT_NE(error(R"({"output": {"score": 0.5}})").find("floating-point number at /output/score"), std::string::npos);
  EXPECT_EQ(error(R"({"interrupt": {"question": "?"}})"), "answer.interrupt.kind: is required");
  EXPECT_EQ(error(R"({"interrupt": {"kind": "Ask Me"}})"), "answer.interrupt.kind: \"Ask Me\" is not a kind (1-64 of a-z 0-9 _)");
}

}  // namespace
}  // namespace warden::executor
