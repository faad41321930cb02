// Routing conditions on stage outputs, and first-match-wins rule selection.
#include "executor/routing.h"

#include <gtest/gtest.h>

#include "tests/executor/harness.h"

namespace warden::executor {
namespace {

Condition cond(std::string field, ConditionOp op, Json value = nullptr, bool exists = true) {
  Condition c;
  c.field = field;
  for (size_t start = 0;;) {
    size_t dot = field.find('.', start);
    c.path.push_back(field.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  c.op = op;
  c.value = std::move(value);
  c.exists = exists;
  return c;
}

TEST(Routing, ConditionsOnOutputFields) {
  Json out{{"verdict", "reintent"}, {"score", 7}, {"big", uint64_t{9}}, {"flag", true},
           {"review", {{"level", 2}, {"tags", {"a", "b"}}}}};
  EXPECT_TRUE(condition_holds(cond("verdict", ConditionOp::equals, "reintent"), out));
  EXPECT_FALSE(condition_holds(cond("verdict", ConditionOp::equals, "approved"), out));
  EXPECT_FALSE(condition_holds(cond("flag", ConditionOp::equals, 1), out));  // JSON types differ
  EXPECT_TRUE(condition_holds(cond("flag", ConditionOp::equals, true), out));
  EXPECT_TRUE(condition_holds(cond("review.tags", ConditionOp::equals, Json{"a", "b"}), out));
  EXPECT_TRUE(condition_holds(cond("verdict", ConditionOp::not_equals, "approved"), out));
  EXPECT_FALSE(condition_holds(cond("verdict", ConditionOp::not_equals, "reintent"), out));
  EXPECT_TRUE(condition_holds(cond("missing", ConditionOp::not_equals, "x"), out));  // absent differs
  EXPECT_TRUE(condition_holds(cond("verdict", ConditionOp::in, Json{"approved", "reintent"}), out));
  EXPECT_FALSE(condition_holds(cond("verdict", ConditionOp::in, Json{"approved"}), out));
  EXPECT_FALSE(condition_holds(cond("missing", ConditionOp::in, Json{nullptr}), out));
  EXPECT_TRUE(condition_holds(cond("review.level", ConditionOp::exists), out));
  EXPECT_FALSE(condition_holds(cond("review.nope", ConditionOp::exists), out));
  EXPECT_TRUE(condition_holds(cond("review.nope", ConditionOp::exists, nullptr, false), out));
  EXPECT_FALSE(condition_holds(cond("verdict.deeper", ConditionOp::exists), out));  // not an object
  EXPECT_TRUE(condition_holds(cond("score", ConditionOp::gte, 7), out));
  EXPECT_FALSE(condition_holds(cond("score", ConditionOp::gt, 7), out));
  EXPECT_TRUE(condition_holds(cond("score", ConditionOp::lt, 8), out));
  EXPECT_TRUE(condition_holds(cond("score", ConditionOp::lte, 7), out));
  EXPECT_TRUE(condition_holds(cond("big", ConditionOp::gt, 8), out));  // unsigned JSON numbers compare too
  EXPECT_FALSE(condition_holds(cond("verdict", ConditionOp::gt, 1), out));  // not an integer: no match
  EXPECT_FALSE(condition_holds(cond("missing", ConditionOp::lt, 100), out));
}

TEST(Routing, FirstMatchingRuleWins) {
  auto config = testing::parse_config(R"({"name": "r", "stages": [
    {"name": "s", "kind": "k", "default_next": "c",
     "routing": [{"when": {"field": "n", "op": "gt", "value": 5}, "next": "a"},
                 {"when": {"field": "n", "op": "gt", "value": 1}, "next": "b"}]},
    {"name": "a", "kind": "k"}, {"name": "b", "kind": "k"}, {"name": "c", "kind": "k"}]})");
  const StageSpec& s = config.stages[0];
  EXPECT_EQ(first_matching_rule(s, Json{{"n", 9}})->next, std::vector<StageId>{1});  // both hold: the first wins
  EXPECT_EQ(first_matching_rule(s, Json{{"n", 3}})->next, std::vector<StageId>{2});
  EXPECT_EQ(first_matching_rule(s, Json{{"n", 0}}), nullptr);  // default_next applies
  EXPECT_EQ(first_matching_rule(s, Json::object()), nullptr);
}

}  // namespace
}  // namespace warden::executor
