// open_or_seed_repository: a repository seeded from a directory is one git itself sees as
// clean — one commit, the seed's files checked out and in the index — and opening an
// existing repository leaves it as it was.
#include "kernel/build/repository.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "tests/support/files.h"
#include "tests/support/temp_dir.h"
#include "tests/kernel/build_fixture.h"

namespace warden::kernel {
namespace {

class SeededRepository : public ::testing::Test {
 protected:
  void SetUp() override {
    std::filesystem::create_directories(seed / "src/calc");
    std::filesystem::create_directories(seed / "bin");
    test::write_file(seed / "README.md", "# calc\n");
    test::write_file(seed / "src/calc/__init__.py", "");
    test::write_file(seed / "bin/run", "#!/bin/sh\nexec python3 -m calc\n");
    std::filesystem::permissions(seed / "bin/run", std::filesystem::perms::owner_exec, std::filesystem::perm_options::add);
  }

  std::string git(const std::vector<std::string>& args) { return test::git_in(repo, args); }

  test::TempDir tmp;
  std::filesystem::path seed = tmp / "seed";
  std::filesystem::path repo = tmp / "repo";
  LogicalClock clock{1'700'000'000'000, 1};
};

TEST_F(SeededRepository, IsCleanWithOneCommit) {
  auto opened = open_or_seed_repository(repo, RepositorySeed{seed}, clock);
  ASSERT_TRUE(opened) << opened.error().message;
  EXPECT_TRUE(opened->seeded);

  EXPECT_EQ(git({"status", "--porcelain"}), "");
  EXPECT_EQ(git({"log", "--format=%s"}), "seed: seed\n");
  std::string files = git({"ls-files", "--stage"});
  EXPECT_NE(files.find("100755 "), std::string::npos) << files;
  EXPECT_NE(files.find("\tbin/run\n"), std::string::npos) << files;
  EXPECT_NE(files.find("\tsrc/calc/__init__.py\n"), std::string::npos) << files;
}

TEST_F(SeededRepository, OpeningItAgainChangesNothing) {
  ASSERT_TRUE(open_or_seed_repository(repo, RepositorySeed{seed}, clock));
  std::string head = git({"rev-parse", "HEAD"});
  auto again = open_or_seed_repository(repo, RepositorySeed{seed}, clock);
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_FALSE(again->seeded);
  EXPECT_EQ(git({"rev-parse", "HEAD"}), head);
  EXPECT_EQ(git({"status", "--porcelain"}), "");
}

// A plan built without its blueprint has no seed: its repository starts at one empty commit,
// and a directory that is not empty is still left alone.
TEST_F(SeededRepository, NoSeedFilesIsOneEmptyCommit) {
  auto opened = open_or_seed_repository(repo, RepositorySeed{}, clock);
  ASSERT_TRUE(opened) << opened.error().message;
  EXPECT_TRUE(opened->seeded);
  EXPECT_EQ(git({"log", "--format=%s"}), "seed: (no files)\n");
  EXPECT_EQ(git({"ls-files"}), "");

  auto refused = open_or_seed_repository(seed, RepositorySeed{}, clock);  // full of files
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, Errc::already_exists);
  auto missing = open_or_seed_repository(tmp / "nothing", std::nullopt, clock);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, Errc::not_found);
}

}  // namespace
}  // namespace warden::kernel
