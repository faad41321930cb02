// The toolchain's identity covers what a check can read on the host besides the named
// files: a directory the profile names in toolchain_dirs (/usr/local, the interpreters'
// site-packages) by its whole content, so a host that gained a .pth hook is another toolchain
// and a result cached before it is not reused. Real files, a real git repository, the real
// runner and its cache.
#include <gtest/gtest.h>

#include <algorithm>

#include "runner/check/local_runner.h"
#include "runner/environment/toolchain.h"
#include "tests/support/files.h"
#include "tests/support/runner_tree.h"
#include "tests/support/sandbox_support.h"
#include "tests/support/temp_dir.h"

namespace warden::test {
namespace {

namespace fs = std::filesystem;

// The default profile with `dir` standing for /usr/local as its only toolchain directory.
SandboxProfile profile_with_toolchain_dir(const fs::path& dir) {
  SandboxProfile p = test_profile();
  p.toolchain_dirs = {dir.string()};
  return p;
}

Json identity(const SandboxProfile& profile) {
  FileDigestMemo memo;
  return toolchain_identity(profile, SandboxHost::detect(), memo);
}

TEST(ToolchainIdentity, TheDefaultProfileNamesUsrLocalAndPythonsLibraries) {
  auto p = SandboxProfile::load("default");
  ASSERT_TRUE(p) << p.error().message;
  const auto& dirs = p->toolchain_dirs;
  EXPECT_NE(std::find(dirs.begin(), dirs.end(), "/usr/local"), dirs.end());
  EXPECT_TRUE(std::any_of(dirs.begin(), dirs.end(), [](const std::string& d) { return d.starts_with("/usr/lib/python3") && d.ends_with('*'); }))
      << "toolchain_dirs: " << Json(dirs).dump();
}

TEST(ToolchainIdentity, APthFileInAToolchainDirectoryChangesTheIdentity) {
  TempDir local;
  fs::create_directories(local / "lib/python3.11/site-packages/pkg");
  write_file(local / "lib/python3.11/site-packages/pkg/__init__.py", "x = 1\n");
  const SandboxProfile p = profile_with_toolchain_dir(local.path());
  const Json before = identity(p);
  ASSERT_TRUE(before.contains("dirs")) << before.dump();
  ASSERT_TRUE(before["dirs"].contains(local.path().string())) << before.dump();
  EXPECT_NE(before["dirs"][local.path().string()], "absent");
  EXPECT_EQ(identity(p), before) << "nothing changed";

  write_file(local / "lib/python3.11/site-packages/x.pth", "import os; os.environ['HOOKED'] = '1'\n");
  const Json after = identity(p);
  EXPECT_NE(after["dirs"][local.path().string()], before["dirs"][local.path().string()]);
  EXPECT_NE(sha256(canonicalize(after).value()), sha256(canonicalize(before).value()));
  // The rest of the host is what it was.
  Json rest_before = before, rest_after = after;
  rest_before.erase("dirs");
  rest_after.erase("dirs");
  EXPECT_EQ(rest_after, rest_before);
}

TEST(ToolchainIdentity, APatternNamesEverySiblingItMatches) {
  TempDir lib;
  for (const char* d : {"python3.11", "python3.12", "python2.7", "perl5"}) fs::create_directories(lib / d);
  write_file(lib / "python3.13", "a file, not a directory\n");
  const std::string pattern = (lib / "python3*").string();
  EXPECT_EQ(expand_toolchain_dirs({pattern, "/nonexistent/plain"}),
            (std::vector<std::string>{"/nonexistent/plain", (lib / "python3.11").string(), (lib / "python3.12").string()}));
  SandboxProfile p = test_profile();
  p.toolchain_dirs = {pattern, "/nonexistent/plain"};
  const Json id = identity(p);
  EXPECT_EQ(id["dirs"]["/nonexistent/plain"], "absent");
  EXPECT_TRUE(id["dirs"].contains((lib / "python3.12").string())) << id.dump();
}

// A cached result is reused only by the toolchain that made it.
class ToolchainCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(local_ / "lib");
    write_file(local_ / "lib/site.py", "# the interpreter's hooks\n");
  }

  // A fresh runner (a new process would make one): it computes the toolchain's identity anew.
  RunOutcome run_once() {
    RunnerOptions o;
    o.cache_dir = tree_.cache_dir();
    auto runner = LocalRunner::create(profile_with_toolchain_dir(local_.path()), o, SandboxHost::detect());
    if (!runner) throw std::runtime_error(runner.error().message);
    return tree_.run(*runner, {CheckSpec::shell("read", "cat a.txt")});
  }

  RunnerTestTree tree_{{{"a.txt", "alpha\n"}}};
  TempDir local_;
};

TEST_F(ToolchainCacheTest, AResultCachedBeforeAPthFileWasAddedIsNotReused) {
  RunOutcome first = run_once();
  ASSERT_EQ(first.result.checks.at(0).verdict, kPassed) << first.result.checks.at(0).runs.at(0).err.head;
  EXPECT_FALSE(first.cache_hit);
  RunOutcome same = run_once();
  EXPECT_TRUE(same.cache_hit) << "nothing changed: the cached result holds";
  EXPECT_EQ(same.result.toolchain_sha256, first.result.toolchain_sha256);

  write_file(local_ / "lib/x.pth", "import sys\n");
  RunOutcome hooked = run_once();
  EXPECT_FALSE(hooked.cache_hit) << "a result from before the .pth file was reused";
  EXPECT_NE(hooked.cache_key, first.cache_key);
  EXPECT_NE(hooked.result.toolchain_sha256, first.result.toolchain_sha256);
  EXPECT_TRUE(run_once().cache_hit) << "the new toolchain's own result holds";
}

}  // namespace
}  // namespace warden::test
