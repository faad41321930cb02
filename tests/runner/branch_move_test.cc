// GitRepo::move_branch against a real repository whose ref another writer holds locked: the
// compare-and-swap waits out a short lock, reads a lost race back as branch_moved, and names a
// lock that stays (a crashed writer's .lock file) instead of failing with libgit2's bare text.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "runner/workspace/git_repo.h"
#include "tests/support/git_fixture.h"

namespace warden::test {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

struct TwoCommits {
  GitRepoFixture fixture;
  ObjectId first;
  ObjectId second;
  fs::path lock;

  TwoCommits() {
    fixture.write("a.txt", "one\n");
    first = *ObjectId::parse(fixture.commit_all("first"));
    fixture.write("a.txt", "two\n");
    second = *ObjectId::parse(fixture.commit_all("second"));
    fixture.git({"branch", "-f", "work", first.hex()});
    lock = fixture.repo() / ".git/refs/heads/work.lock";
  }
  std::string tip() const { return fixture.git_line({"rev-parse", "refs/heads/work"}); }
};

void write_file(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

TEST(BranchMove, ALockHeldForAMomentIsWaitedOut) {
  TwoCommits repo;
  write_file(repo.lock, "");
  std::thread releaser([&] {
    std::this_thread::sleep_for(200ms);
    fs::remove(repo.lock);
  });
  auto git = GitRepo::open(repo.fixture.repo());
  ASSERT_TRUE(git) << git.error().message();
  auto moved = git->move_branch("work", repo.first, repo.second);
  releaser.join();
  ASSERT_TRUE(moved) << moved.error().message();
  EXPECT_EQ(repo.tip(), repo.second.hex());
}

TEST(BranchMove, AWriterThatMovesTheBranchUnderItsLockWinsAndTheLoserSaysBranchMoved) {
  TwoCommits repo;
  // What libgit2 and git do: write the new tip into the lock file, then rename it over the ref.
  write_file(repo.lock, repo.second.hex() + "\n");
  std::thread winner([&] {
    std::this_thread::sleep_for(200ms);
    fs::rename(repo.lock, repo.fixture.repo() / ".git/refs/heads/work");
  });
  auto git = GitRepo::open(repo.fixture.repo());
  ASSERT_TRUE(git) << git.error().message();
  repo.fixture.write("a.txt", "three\n");
  auto third = ObjectId::parse(repo.fixture.commit_all("third"));
  ASSERT_TRUE(third);
  auto moved = git->move_branch("work", repo.first, *third);
  winner.join();
  ASSERT_FALSE(moved);
  EXPECT_EQ(moved.error().code, RefusalCode::branch_moved) << moved.error().message();
  EXPECT_EQ(repo.tip(), repo.second.hex());
}

TEST(BranchMove, ALockThatStaysIsNamedAndTheBranchIsUntouched) {
  TwoCommits repo;
  write_file(repo.lock, "");
  auto git = GitRepo::open(repo.fixture.repo());
  ASSERT_TRUE(git) << git.error().message();
  auto moved = git->move_branch("work", repo.first, repo.second);
  ASSERT_FALSE(moved);
  EXPECT_EQ(moved.error().code, RefusalCode::repository_error);
  EXPECT_NE(moved.error().message().find("stayed locked"), std::string::npos) << moved.error().message();
  EXPECT_NE(moved.error().message().find(".lock"), std::string::npos) << moved.error().message();
  EXPECT_EQ(repo.tip(), repo.first.hex());
  EXPECT_TRUE(fs::exists(repo.lock)) << "another writer's lock file is never removed";
}

}  // namespace
}  // namespace warden::test
