// Workspace::checkout in-process against a real repository: the materialized directory
// holds exactly the tree's files, modes and symlinks, and the repository's index, HEAD and
// work tree are untouched.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>

#include "diff/diff_builder.h"
#include "runner/workspace/workspace.h"
#include "tests/support/files.h"
#include "tests/support/git_fixture.h"

namespace warden::test {
namespace {

namespace fs = std::filesystem;

TEST(WorkspaceCheckout, MaterializesAnAppliedTreeWithoutTouchingTheRepository) {
  GitRepoFixture repo;
  repo.write("src/main.c", "int main(void) { return 0; }\n");
  repo.write("run.sh", "#!/bin/sh\necho hi\n");
  repo.set_executable("run.sh", true);
  repo.symlink("link", "src/main.c");
  std::string base = repo.commit_all("base");
  repo.write("src/main.c", "int main(void) { return 1; }\n");
  repo.write("docs/new.md", "# new\n");
  std::string patch = repo.staged_patch();
  repo.reset_hard(base);
  auto before = repo.snapshot();
  std::string index_before = repo.git_line({"ls-files", "--stage"});

  auto ws = Workspace::open(repo.repo());
  ASSERT_TRUE(ws) << ws.error().message();
  auto diff = ws->diff_from_patch(patch, base, "s1");
  ASSERT_TRUE(diff) << diff.error().message();
  auto applied = ws->apply(*diff, base);
  ASSERT_TRUE(applied) << applied.error().message();
  fs::path out = repo.scratch("checkout");
  ASSERT_TRUE(ws->checkout(applied->tree, out));

  EXPECT_EQ(read_file(out / "src/main.c"), "int main(void) { return 1; }\n");
  EXPECT_EQ(read_file(out / "docs/new.md"), "# new\n");
  struct stat st {};
  ASSERT_EQ(::stat((out / "run.sh").c_str(), &st), 0);
  EXPECT_TRUE(st.st_mode & S_IXUSR);
  EXPECT_TRUE(fs::is_symlink(out / "link"));
  EXPECT_EQ(fs::read_symlink(out / "link"), "src/main.c");
  EXPECT_FALSE(fs::exists(out / ".git"));

  // The repository's refs, index and work tree are as they were; only new objects exist.
  auto after = repo.snapshot();
  EXPECT_EQ(after.refs, before.refs);
  EXPECT_EQ(repo.git_line({"ls-files", "--stage"}), index_before);
  EXPECT_EQ(repo.read("src/main.c"), "int main(void) { return 0; }\n");
  EXPECT_EQ(repo.git_line({"status", "--porcelain"}), "");
}

}  // namespace
}  // namespace warden::test
