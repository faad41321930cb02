// commit_order(): the order a merge queue's commits land in is a function of the plan alone —
// its dependencies, and plan order among the steps they leave free.
#include "kernel/plan/commit_order.h"

#include <gtest/gtest.h>

namespace warden::kernel {
namespace {

BuildPlan plan_of(std::vector<std::pair<std::string, std::vector<std::string>>> steps) {
  BuildPlan p;
  for (auto& [id, deps] : steps) {
    BuildStep s;
    s.id = id;
    s.dependencies = deps;
    p.steps.push_back(s);
  }
  return p;
}

std::vector<std::string> ids(const BuildPlan& p) {
  std::vector<std::string> out;
  for (size_t i : commit_order(p)) out.push_back(p.steps[i].id);
  return out;
}

TEST(CommitOrder, IndependentStepsKeepPlanOrder) {
  EXPECT_EQ(ids(plan_of({{"a", {}}, {"b", {}}, {"c", {}}})), (std::vector<std::string>{"a", "b", "c"}));
}

TEST(CommitOrder, ADiamondListedBackwardsLandsInDependencyOrder) {
  auto p = plan_of({{"d", {"b", "c"}}, {"c", {"a"}}, {"b", {"a"}}, {"a", {}}});
  EXPECT_EQ(ids(p), (std::vector<std::string>{"a", "c", "b", "d"}));
}

TEST(CommitOrder, AmongReadyStepsTheFirstInThePlanGoesFirst) {
  // x becomes ready only after a; y is ready at once but comes later in the plan than x.
  auto p = plan_of({{"a", {}}, {"x", {"a"}}, {"y", {}}});
  EXPECT_EQ(ids(p), (std::vector<std::string>{"a", "x", "y"}));
}

TEST(CommitOrder, UnknownDependenciesAndCyclesNeverLoseAStep) {
  auto p = plan_of({{"a", {"ghost"}}, {"b", {"c"}}, {"c", {"b"}}, {"d", {"d"}}});
  EXPECT_EQ(ids(p), (std::vector<std::string>{"a", "d", "b", "c"}));
}

}  // namespace
}  // namespace warden::kernel
