// The base-checkout cache under attack: another process running as the sandbox's uid cannot
// reach a cached checkout at all; one tampered with by someone who got in (root here) is
// found by its seal, discarded, rebuilt and reported, so the broken change it would have let
// pass fails; an entry without a seal is rebuilt; cache directories others may write into,
// or owned by another uid, are refused, and ones only too open for reading are repaired.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runner/check/local_runner.h"
#include "runner/workspace/workspace.h"
#include "tests/support/files.h"
#include "tests/support/git_fixture.h"
#include "tests/support/sandbox_support.h"

namespace warden::test {
namespace {

namespace fs = std::filesystem;

constexpr uid_t kNobody = 65534;

// A project whose test reads src/value, and a proposal that breaks it.
class BaseCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    repo_.write("tests/run.sh", "test \"$(cat src/value)\" = 1\n");
    repo_.write("src/value", "1\n");
    std::string base = repo_.commit_all("base");
    repo_.write("src/value", "2\n");
    std::string patch = repo_.staged_patch();
    repo_.reset_hard(base);
    auto diff = Workspace::open(repo_.repo())->diff_from_patch(patch, base, "step-1");
    ASSERT_TRUE(diff) << diff.error().message();
    broken_ = *diff;
    auto git = GitRepo::open(repo_.repo());
    ASSERT_TRUE(git);
    git_.emplace(std::move(*git));
    base_tree_ = *git_->tree_of(*git_->resolve_commit(base));
    // Every directory above the cache lets others through: only the cache's own modes guard it.
    auto root = ScratchDir::create("/tmp", "warden-base-cache-test-", 0755);
    ASSERT_TRUE(root);
    root_.emplace(std::move(*root));
  }

  fs::path cache() const { return root_->path() / "cache"; }
  fs::path entry() const { return cache() / "checkouts" / base_tree_.hex(); }

  Result<LocalRunner> make_runner() {
    RunnerOptions o;
    o.cache_dir = cache();
    o.use_cache = false;
    return LocalRunner::create(test_profile(), o);
  }

  RunOutcome run(LocalRunner& runner, const Diff* diff) {
    RunRequest req;
    req.base_tree = base_tree_;
    req.diff = diff;
    req.checks = {CheckSpec::shell("tests", "sh tests/run.sh")};
    auto out = runner.run(*git_, req);
    if (!out) throw std::runtime_error(out.error().message());
    return std::move(*out);
  }

  GitRepoFixture repo_;
  Diff broken_;
  std::optional<GitRepo> git_;
  ObjectId base_tree_;
  std::optional<ScratchDir> root_;
};

// What a process running as nobody gets trying `path`: 0 when it could open it for writing
// (or, for a directory, open it), else the errno.
int errno_as_nobody(const fs::path& path, bool directory) {
  pid_t pid = ::fork();
  if (pid == 0) {
    if (::setresgid(kNobody, kNobody, kNobody) != 0 || ::setresuid(kNobody, kNobody, kNobody) != 0) ::_exit(250);
    int fd = ::open(path.c_str(), directory ? (O_RDONLY | O_DIRECTORY) : (O_WRONLY | O_TRUNC));
    ::_exit(fd >= 0 ? 0 : errno);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST_F(BaseCacheTest, AnotherProcessOfTheSandboxUidCannotReachAnEntry) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root: the sandbox's uid differs from Warden's only then";
  auto runner = make_runner();
  ASSERT_TRUE(runner) << runner.error().message;
  RunOutcome first = run(*runner, nullptr);
  ASSERT_EQ(first.result.checks.at(0).verdict, kPassed) << first.result.checks.at(0).runs.at(0).err.head;

  // The files are the sandbox's (the check owns its workspace through the overlay) ...
  struct stat st;
  ASSERT_EQ(::stat((entry() / "checkout" / "tests" / "run.sh").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, kNobody);
  // ... but no path reaches them: checkouts/ is Warden's alone.
  ASSERT_EQ(::stat((cache() / "checkouts").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 0u);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  // Even with the cache directory open to others (as an older Warden made it), checkouts/ stops the poisoner.
  ASSERT_EQ(::chmod(cache().c_str(), 0755), 0);
  EXPECT_EQ(errno_as_nobody(entry() / "checkout" / "tests" / "run.sh", false), EACCES);
  EXPECT_EQ(errno_as_nobody(entry() / "checkout", true), EACCES);
  EXPECT_EQ(errno_as_nobody(cache() / "checkouts", true), EACCES);
  EXPECT_EQ(read_file(entry() / "checkout" / "tests" / "run.sh"), "test \"$(cat src/value)\" = 1\n");

  // And the sandbox still works on it: a check may write its files (into its own layer).
  auto again = make_runner();
  ASSERT_TRUE(again) << again.error().message;
  RunRequest req;
  req.base_tree = base_tree_;
  req.checks = {CheckSpec::shell("write", "echo changed > tests/run.sh && mkdir src/new && echo x > src/new/f && id -u")};
  auto out = again->run(*git_, req);
  ASSERT_TRUE(out) << out.error().message();
  EXPECT_EQ(out->result.checks.at(0).verdict, kPassed) << out->result.checks.at(0).runs.at(0).err.head;
  EXPECT_TRUE(out->discarded_checkouts.empty());
  EXPECT_EQ(read_file(entry() / "checkout" / "tests" / "run.sh"), "test \"$(cat src/value)\" = 1\n");
}

TEST_F(BaseCacheTest, TamperedEntryIsFoundRebuiltAndReportedAndTheBrokenChangeFails) {
  {
    auto runner = make_runner();
    ASSERT_TRUE(runner) << runner.error().message;
    RunOutcome broken = run(*runner, &broken_);
    ASSERT_EQ(broken.result.checks.at(0).verdict, kFailed);
  }
  // Someone who got in rewrites the test to pass, and puts the file's times back.
  const fs::path script = entry() / "checkout" / "tests" / "run.sh";
  struct stat before;
  ASSERT_EQ(::stat(script.c_str(), &before), 0);
  {
    int fd = ::open(script.c_str(), O_WRONLY | O_TRUNC);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::write(fd, "exit 0\n", 7), 7);
    ::close(fd);
    struct timespec times[2] = {before.st_atim, before.st_mtim};
    ASSERT_EQ(::utimensat(AT_FDCWD, script.c_str(), times, 0), 0);
  }
  // The next process (a new runner) would have reused it; it finds the seal broken instead.
  auto runner = make_runner();
  ASSERT_TRUE(runner) << runner.error().message;
  RunOutcome after = run(*runner, &broken_);
  EXPECT_EQ(after.result.checks.at(0).verdict, kFailed) << "the poisoned test let the broken change pass";
  ASSERT_EQ(after.discarded_checkouts.size(), 1u);
  EXPECT_EQ(after.discarded_checkouts[0].tree, base_tree_.hex());
  EXPECT_NE(after.discarded_checkouts[0].reason.find("no longer matches its seal"), std::string::npos)
      << after.discarded_checkouts[0].reason;
  EXPECT_EQ(read_file(script), "test \"$(cat src/value)\" = 1\n");
  // Rebuilt and sealed: the next process reuses it without a word.
  auto third = make_runner();
  ASSERT_TRUE(third) << third.error().message;
  EXPECT_TRUE(run(*third, &broken_).discarded_checkouts.empty());
  // Nothing is left beside the entries.
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(cache() / "checkouts")) names.push_back(e.path().filename().string());
  EXPECT_EQ(names, std::vector<std::string>{base_tree_.hex()});
}

TEST_F(BaseCacheTest, AReplacedFileOrAnAddedOneIsFoundToo) {
  for (const auto& tamper : std::vector<std::function<void()>>{
           [&] {
             fs::remove(entry() / "checkout" / "tests" / "run.sh");
             write_file(entry() / "checkout" / "tests" / "run.sh", "test \"$(cat src/value)\" = 1\n");
           },
           [&] { write_file(entry() / "checkout" / "tests" / "extra.sh", "exit 0\n"); },
           [&] { fs::permissions(entry() / "checkout" / "src", fs::perms::all); },
       }) {
    {
      auto runner = make_runner();
      ASSERT_TRUE(runner) << runner.error().message;
      ASSERT_TRUE(run(*runner, nullptr).discarded_checkouts.empty());
    }
    tamper();
    auto runner = make_runner();
    ASSERT_TRUE(runner) << runner.error().message;
    EXPECT_EQ(run(*runner, nullptr).discarded_checkouts.size(), 1u);
  }
}

TEST_F(BaseCacheTest, AnEntryWithoutASealIsRebuilt) {
  // Files right in the entry, with no seal: half made, or not made by Warden.
  fs::create_directories(entry() / "tests");
  write_file(entry() / "tests" / "run.sh", "exit 0\n");
  ASSERT_EQ(::chmod(cache().c_str(), 0700), 0);
  ASSERT_EQ(::chmod((cache() / "checkouts").c_str(), 0700), 0);
  auto runner = make_runner();
  ASSERT_TRUE(runner) << runner.error().message;
  RunOutcome out = run(*runner, &broken_);
  EXPECT_EQ(out.result.checks.at(0).verdict, kFailed);
  ASSERT_EQ(out.discarded_checkouts.size(), 1u);
  EXPECT_NE(out.discarded_checkouts[0].reason.find("no seal"), std::string::npos) << out.discarded_checkouts[0].reason;
  EXPECT_FALSE(fs::exists(entry() / "tests"));
  EXPECT_TRUE(fs::exists(entry() / "seal"));
}

TEST_F(BaseCacheTest, CacheDirectoriesOthersMayWriteOrOwnAreRefused) {
  {
    auto runner = make_runner();
    ASSERT_TRUE(runner) << runner.error().message;
    run(*runner, nullptr);
  }
  auto refused = [&](const fs::path& path, std::string_view expect) {
    auto runner = make_runner();
    if (runner) {
      ADD_FAILURE() << path << " was accepted";
      return;
    }
    EXPECT_NE(runner.error().message.find(path.string()), std::string::npos) << runner.error().message;
    EXPECT_NE(runner.error().message.find(expect), std::string::npos) << runner.error().message;
  };
  // Writable by others: refused, whoever owns it.
  ASSERT_EQ(::chmod(cache().c_str(), 0777), 0);
  refused(cache(), "mode 0777");
  ASSERT_EQ(::chmod(cache().c_str(), 0700), 0);
  ASSERT_EQ(::chmod((cache() / "store").c_str(), 0770), 0);
  refused(cache() / "store", "its group or others may write");
  ASSERT_EQ(::chmod((cache() / "store").c_str(), 0700), 0);
  ASSERT_EQ(::chmod((cache() / "store" / "data.mdb").c_str(), 0666), 0);
  refused(cache() / "store" / "data.mdb", "chmod go-w");
  ASSERT_EQ(::chmod((cache() / "store" / "data.mdb").c_str(), 0644), 0);
  if (::geteuid() == 0) {
    // Owned by another uid: refused, naming the owner.
    ASSERT_EQ(::chown(cache().c_str(), kNobody, kNobody), 0);
    refused(cache(), "owned by uid 65534");
    ASSERT_EQ(::chown(cache().c_str(), 0, 0), 0);
  }
  // Only readable by others: repaired to 0700 on use.
  ASSERT_EQ(::chmod((cache() / "checkouts").c_str(), 0711), 0);
  auto runner = make_runner();
  ASSERT_TRUE(runner) << runner.error().message;
  RunOutcome out = run(*runner, nullptr);
  EXPECT_TRUE(out.discarded_checkouts.empty());
  struct stat st;
  ASSERT_EQ(::stat((cache() / "checkouts").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  // A checkouts/ others may write into fails the run, naming it.
  ASSERT_EQ(::chmod((cache() / "checkouts").c_str(), 0733), 0);
  RunRequest req;
  req.base_tree = base_tree_;
  req.checks = {CheckSpec::shell("tests", "sh tests/run.sh")};
  auto failed = runner->run(*git_, req);
  ASSERT_FALSE(failed);
  EXPECT_NE(failed.error().message().find((cache() / "checkouts").string()), std::string::npos) << failed.error().message();
}

}  // namespace
}  // namespace warden::test
