// PrefetchingRunner: a prefetched run is run once and taken by the identical request; any
// other request runs on its own; what nobody took is handed back in the order prefetched.
// A fake Runner stands in for the sandbox (the seam Ninja's tests use for CommandRunner).
#include "runner/check/prefetching_runner.h"

#include <gtest/gtest.h>

#include <atomic>

#include "tests/support/git_fixture.h"

namespace warden {
namespace {

class CountingRunner final : public Runner {
 public:
  std::atomic<int> runs{0};
  Checked<RunOutcome> run(GitRepo&, const RunRequest& request) override {
    ++runs;
    RunOutcome out;
    out.result.tree = request.tree ? request.tree->hex() : request.base_tree.hex();
    out.result.base_tree = request.base_tree.hex();
    if (request.diff) out.result.diff_sha256 = request.diff->digest();
    return out;
  }
};

class PrefetchingRunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto opened = GitRepo::open(repo_.repo());
    ASSERT_TRUE(opened);
    trees_ = {ObjectId::parse(std::string(40, 'a')).value(), ObjectId::parse(std::string(40, 'b')).value(),
              ObjectId::parse(std::string(40, 'c')).value()};
  }
  std::unique_ptr<PrefetchingRunner> pool(int workers) {
    std::vector<PrefetchingRunner::Worker> w;
    for (int i = 0; i < workers; ++i) w.push_back({.runner = &runner_, .owned = nullptr, .repo = GitRepo::open(repo_.repo()).value()});
    return std::make_unique<PrefetchingRunner>(std::move(w));
  }
  RunRequest request(size_t tree) {
    RunRequest r;
    r.base_tree = trees_[0];
    r.tree = trees_[tree];
    return r;
  }

  test::GitRepoFixture repo_;
  CountingRunner runner_;
  std::vector<ObjectId> trees_;
};

TEST_F(PrefetchingRunnerTest, TheIdenticalRequestTakesThePrefetchedRun) {
  auto p = pool(2);
  p->prefetch(request(1), std::nullopt, PrefetchLabel{"s1", 1, "checks", trees_[0].hex(), std::nullopt});
  p->prefetch(request(1), std::nullopt, PrefetchLabel{"s1", 1, "checks", trees_[0].hex(), std::nullopt});  // not twice
  GitRepo unused = GitRepo::open(repo_.repo()).value();
  auto got = p->run(unused, request(1));
  ASSERT_TRUE(got);
  EXPECT_EQ(got->result.tree, trees_[1].hex());
  EXPECT_EQ(runner_.runs.load(), 1);
  EXPECT_TRUE(p->drop_unused().empty());
}

TEST_F(PrefetchingRunnerTest, AnotherRequestRunsOnItsOwnAndTheUnusedComeBackInOrder) {
  auto p = pool(1);
  p->prefetch(request(1), std::nullopt, PrefetchLabel{"s1", 1, "checks", trees_[0].hex(), std::nullopt});
  p->prefetch(request(2), std::nullopt, PrefetchLabel{"s2", 1, "checks", trees_[1].hex(), std::nullopt});
  RunRequest other = request(2);
  other.reuse = true;  // not the same request
  GitRepo unused = GitRepo::open(repo_.repo()).value();
  auto got = p->run(unused, other);
  ASSERT_TRUE(got);
  auto dropped = p->drop_unused();
  ASSERT_EQ(dropped.size(), 2u);
  EXPECT_EQ(dropped[0].label.step_id, "s1");
  EXPECT_EQ(dropped[0].tree, trees_[1].hex());
  EXPECT_EQ(dropped[1].label.step_id, "s2");
  EXPECT_TRUE(p->drop_unused().empty());
}

TEST_F(PrefetchingRunnerTest, DestroyingThePoolWithRunsQueuedReturns) {
  auto p = pool(1);
  for (int i = 0; i < 50; ++i) {
    RunRequest r = request(1);
    CheckSpec check;
    check.name = "c" + std::to_string(i);
    r.checks.push_back(check);
    p->prefetch(std::move(r), std::nullopt, PrefetchLabel{"s", 1, "checks", trees_[0].hex(), std::nullopt});
  }
  p.reset();
  EXPECT_LE(runner_.runs.load(), 50);
}

}  // namespace
}  // namespace warden
