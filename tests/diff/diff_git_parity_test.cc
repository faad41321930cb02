// `warden diff apply` must give the same tree id as `git apply --cached` +
// `git write-tree` for every patch git accepts without fuzz. Each test builds a real
// repository with the git CLI, makes one kind of change in the work tree, takes git's own
// patch of it, resets to the base and then compares:
//   warden diff parse -> DIFF.json -> warden diff apply      (Warden's tree)
//   git read-tree BASE && git apply --cached && git write-tree  (git's tree)
// and checks that `warden diff check` accepts the diff and `warden diff commit` makes a
// deterministic commit with the right tree, parent and trailers, refusing a moved branch.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "tests/support/files.h"
#include "tests/support/warden_cli.h"
#include "tests/support/git_fixture.h"

namespace warden::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Bytes that do not compress, with NULs, so git treats them as binary and a small edit
// makes a delta much smaller than a literal.
std::string random_bytes(size_t size, uint32_t seed) {
  std::mt19937 gen(seed);
  std::string out(size, '\0');
  for (auto& c : out) c = static_cast<char>(gen() & 0xff);
  out[0] = '\0';
  return out;
}

size_t count_of(std::string_view text, std::string_view needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string_view::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

struct ParityOptions {
  std::vector<std::string> git_apply_flags;  // e.g. --unidiff-zero for -U0 patches
  std::string step = "step-1";
};

class GitParity : public ::testing::Test {
 protected:
  GitRepoFixture repo;
  std::string base;

  void commit_base() { base = repo.commit_all("base"); }

  // git's patch of the work tree against the base, then the work tree back at the base.
  // git diff detects renames by default (diff.renames); tests that want renames or copies
  // ask with -M / -C, the rest get plain additions and deletions.
  std::string take_patch(std::vector<std::string> diff_flags = {}) {
    bool detects = false;
    for (const auto& f : diff_flags) detects |= f.starts_with("-M") || f.starts_with("-C") || f.starts_with("--find-");
    if (!detects) diff_flags.push_back("--no-renames");
    std::string patch = repo.staged_patch(diff_flags);
    repo.reset_hard(base);
    return patch;
  }

  // Commits the work tree, takes `git format-patch -1` of it, and goes back to the base.
  std::string format_patch_of(const std::string& rev) {
    return repo.git({"format-patch", "-1", "--stdout", "--full-index", "--binary", rev});
  }

  // A plain `diff -ruN a b` between two copies of a tree, run from `dir` so the names are
  // a/... and b/... as patch -p1 and git apply expect.
  std::string plain_diff(const fs::path& dir) {
    ProcessResult r = run({find_program("sh"), "-c", "cd \"$1\" && exec diff -ruN a b", "sh", dir.string()});
    EXPECT_TRUE(r.exited_with(1)) << "diff -ruN: " << describe(r);  // 1: the trees differ
    return r.out;
  }

  // Copies the work tree (not .git) to `dest`, symlinks as symlinks.
  void copy_work_tree(const fs::path& dest) {
    fs::create_directories(dest);
    for (const auto& e : fs::directory_iterator(repo.repo())) {
      if (e.path().filename() == ".git") continue;
      fs::copy(e.path(), dest / e.path().filename(), fs::copy_options::recursive | fs::copy_options::copy_symlinks);
    }
  }

  void expect_same_tree_as_git(const std::string& patch, const ParityOptions& options = {}) {
    SCOPED_TRACE("patch:\n" + patch.substr(0, 4000));
    ASSERT_FALSE(base.empty());
    fs::path diff_file = parse_to_diff(repo, base, patch, options.step);
    if (HasFailure()) return;
    json diff = json::parse(read_file(diff_file));
    ASSERT_EQ(diff.value("step_id", ""), options.step);
    std::string diff_sha = diff.value("diff_sha256", "");
    ASSERT_TRUE(diff_sha.starts_with("sha256:")) << diff.dump();

    // parse and check write nothing; apply writes objects but moves no ref.
    RepoSnapshot before = repo.snapshot();
    ProcessResult check = warden_diff("check", diff_file.string(), repo, base);
    EXPECT_TRUE(check.exited_with(0)) << describe(check);
    EXPECT_EQ(repo.snapshot(), before) << describe_difference(before, repo.snapshot());

    ProcessResult applied = warden_diff("apply", diff_file.string(), repo, base);
    ASSERT_TRUE(applied.exited_with(0)) << describe(applied);
    std::string warden_tree = trim_newline(applied.out);
    ASSERT_EQ(warden_tree.size(), 40u) << describe(applied);
    EXPECT_EQ(repo.snapshot().refs, before.refs);

    // The patch itself, given to apply in place of its Diff JSON, gives the same tree.
    fs::path patch_file = repo.scratch("given.patch");
    write_file(patch_file, patch);
    ProcessResult from_patch = warden_diff("apply", patch_file.string(), repo, base, {"--step", options.step});
    ASSERT_TRUE(from_patch.exited_with(0)) << describe(from_patch);
    EXPECT_EQ(trim_newline(from_patch.out), warden_tree);

    std::string git_tree = repo.git_apply_tree(base, patch, options.git_apply_flags);
    EXPECT_EQ(warden_tree, git_tree) << "Warden's tree:\n"
                                     << repo.git({"ls-tree", "-r", warden_tree}) << "git's tree:\n"
                                     << repo.git({"ls-tree", "-r", git_tree});

    expect_commit_behaviour(diff_file, warden_tree, diff_sha, options.step);
    // Every object Warden wrote must be one git accepts.
    repo.git({"fsck", "--strict", "--no-progress", "--no-dangling"});
  }

  void expect_commit_behaviour(const fs::path& diff_file, const std::string& tree, const std::string& diff_sha,
                               const std::string& step) {
    auto commit_to = [&](const std::string& branch) {
      return warden_diff("commit", diff_file.string(), repo, base,
                         {"--branch", branch, "--timestamp", kCommitTimestamp, "--json"});
    };
    ProcessResult first = commit_to("b1");
    ASSERT_TRUE(first.exited_with(0)) << describe(first);
    json out = stdout_json(first);
    std::string commit = out.value("commit", "");
    EXPECT_EQ(out.value("tree", ""), tree);
    EXPECT_EQ(out.value("branch", ""), "b1");
    EXPECT_EQ(repo.git_line({"rev-parse", "refs/heads/b1"}), commit);
    EXPECT_EQ(repo.git_line({"rev-parse", commit + "^{tree}"}), tree);
    EXPECT_EQ(repo.git_line({"rev-list", "--parents", "-n", "1", commit}), commit + " " + base) << "one parent: the base";
    EXPECT_EQ(repo.git_line({"show", "-s", "--format=%at %ct", commit}), std::string(kCommitTimestamp) + " " + kCommitTimestamp);
    // Read back through git's own trailer parser, so they are trailers and not just text.
    EXPECT_EQ(repo.git_line({"show", "-s", "--format=%(trailers:key=Warden-Step,valueonly)", commit}), step);
    EXPECT_EQ(repo.git_line({"show", "-s", "--format=%(trailers:key=Warden-Proposal,valueonly)", commit}), diff_sha);

    // Determinism: the same inputs give the same commit, on the same branch (a no-op) and
    // on a fresh one.
    ProcessResult again = commit_to("b1");
    ASSERT_TRUE(again.exited_with(0)) << describe(again);
    EXPECT_EQ(stdout_json(again).value("commit", ""), commit);
    ProcessResult other = commit_to("b2");
    ASSERT_TRUE(other.exited_with(0)) << describe(other);
    EXPECT_EQ(stdout_json(other).value("commit", ""), commit);

    // A branch that moved on since the base is never overwritten.
    std::string elsewhere = repo.git_line({"commit-tree", base + "^{tree}", "-p", base, "-m", "elsewhere"});
    repo.git({"update-ref", "refs/heads/b1", elsewhere});
    ProcessResult moved = commit_to("b1");
    EXPECT_TRUE(moved.exited_with(kExitRefused)) << describe(moved);
    EXPECT_NE(moved.err.find("branch_moved"), std::string::npos) << describe(moved);
    EXPECT_EQ(repo.git_line({"rev-parse", "refs/heads/b1"}), elsewhere);
  }
};

TEST_F(GitParity, SeveralFilesAndHunks) {
  std::string a = numbered(40, "alpha"), b = numbered(30, "beta");
  repo.write("src/a.txt", a);
  repo.write("src/b.txt", b);
  repo.write("docs/guide.md", "# Guide\n\nintro\n\nmore\n");
  repo.write("top.txt", "top\n");
  commit_base();
  repo.write("src/a.txt", replace_line(replace_line(a, 3, "alpha three"), 35, "alpha thirty-five"));
  std::string b2 = replace_line(b, 10, "beta ten\nbeta ten and a half");
  b2 = replace_line(b2, 25, "beta twenty-four, really");
  repo.write("src/b.txt", b2);
  repo.write("docs/guide.md", "# Guide\n\nintro, revised\n\nmore\nand more\n");
  std::string patch = take_patch();
  EXPECT_EQ(count_of(patch, "diff --git "), 3u);
  EXPECT_GE(count_of(patch, "\n@@ "), 5u);
  expect_same_tree_as_git(patch);
}

// The commit's other inputs: --message and --record, and the same commit id from two
// repositories built the same way (nothing random or clock-derived goes in).
TEST_F(GitParity, CommitMessageRecordTrailerAndDeterminismAcrossRepositories) {
  auto build = [](GitRepoFixture& r) {
    r.write("a.txt", numbered(10));
    std::string b = r.commit_all("base");
    r.write("a.txt", replace_line(numbered(10), 4, "four"));
    std::string patch = r.staged_patch();
    r.reset_hard(b);
    return std::pair{b, patch};
  };
  GitRepoFixture twin;
  auto [b1, patch1] = build(repo);
  auto [b2, patch2] = build(twin);
  ASSERT_EQ(b1, b2) << "pinned dates and identities make the bases identical";
  ASSERT_EQ(patch1, patch2);
  const std::string record = "sha256:" + std::string(64, 'a');
  std::vector<std::string> ids;
  for (GitRepoFixture* r : {&repo, &twin}) {
    fs::path diff_file = parse_to_diff(*r, b1, patch1, "step-7");
    ASSERT_FALSE(HasFailure());
    ProcessResult c = warden_diff("commit", diff_file.string(), *r, b1,
                                  {"--branch", "warden/run-1", "--message", "Add four", "--record", record,
                                   "--timestamp", kCommitTimestamp, "--json"});
    ASSERT_TRUE(c.exited_with(0)) << describe(c);
    std::string id = stdout_json(c).value("commit", "");
    EXPECT_EQ(r->git_line({"show", "-s", "--format=%s", id}), "Add four");
    EXPECT_EQ(r->git_line({"show", "-s", "--format=%(trailers:key=Warden-Record,valueonly)", id}), record);
    EXPECT_EQ(r->git_line({"show", "-s", "--format=%(trailers:key=Warden-Step,valueonly)", id}), "step-7");
    ids.push_back(id);
  }
  EXPECT_EQ(ids[0], ids[1]);
}

TEST_F(GitParity, ZeroContextHunks) {
  repo.write("z.txt", numbered(30));
  commit_base();
  std::string changed = "inserted at the top\n";  // @@ -0,0 +1 @@
  for (int i = 1; i <= 30; ++i) {
    if (i == 10) changed += "line ten, changed\n";  // a change
    else if (i != 20) changed += "line " + std::to_string(i) + "\n";  // line 20: a pure deletion
  }
  changed += "appended at the end\n";  // a pure insertion at the end
  repo.write("z.txt", changed);
  std::string patch = take_patch({"-U0"});
  EXPECT_NE(patch.find("@@ -0,0 +1 @@"), std::string::npos);
  EXPECT_EQ(count_of(patch, "\n@@ "), 4u);
  // git only takes context-free hunks when told to; that is not fuzz.
  expect_same_tree_as_git(patch, {.git_apply_flags = {"--unidiff-zero"}});
}

TEST_F(GitParity, NoNewlineAtEndOnOldSide) {
  repo.write("n.txt", "first\nsecond");
  commit_base();
  repo.write("n.txt", "first\nsecond\nthird\n");
  std::string patch = take_patch();
  EXPECT_EQ(count_of(patch, "\\ No newline at end of file"), 1u);
  expect_same_tree_as_git(patch);
}

TEST_F(GitParity, NoNewlineAtEndOnNewSide) {
  repo.write("n.txt", "first\nsecond\n");
  commit_base();
  repo.write("n.txt", "first\nsecond\nthird");
  std::string patch = take_patch();
  EXPECT_EQ(count_of(patch, "\\ No newline at end of file"), 1u);
  expect_same_tree_as_git(patch);
}

TEST_F(GitParity, NoNewlineAtEndOnBothSides) {
  repo.write("n.txt", numbered(10) + "last");
  commit_base();
  repo.write("n.txt", numbered(10) + "last, changed");
  std::string patch = take_patch();
  EXPECT_EQ(count_of(patch, "\\ No newline at end of file"), 2u);
  expect_same_tree_as_git(patch);
}

TEST_F(GitParity, NewFiles) {
  repo.write("existing.txt", "here\n");
  commit_base();
  repo.write("new.txt", numbered(5, "new"));
  repo.write("deep/new/dir/file.txt", "deep\n");
  repo.write("run.sh", "#!/bin/sh\necho hi\n");
  repo.set_executable("run.sh", true);
  std::string patch = take_patch();
  EXPECT_EQ(count_of(patch, "new file mode 100644"), 2u);
  EXPECT_EQ(count_of(patch, "new file mode 100755"), 1u);
  expect_same_tree_as_git(patch);
}

TEST_F(GitParity, DeletedFiles) {
  repo.write("keep.txt", "keep\n");
  repo.write("gone.txt", numbered(8));
  repo.write("gone-without-eol.txt", "no newline at the end");
  repo.write("lonely/only.txt", "the directory goes with me\n");
  repo.write("tool.sh", "#!/bin/sh\n");
  repo.set_executable("tool.sh", true);
  commit_base();
  repo.remove("gone.txt");
  repo.remove("gone-without-eol.txt");
  repo.remove("lonely");
  repo.remove("tool.sh");
  std::string patch = take_patch();
  EXPECT_EQ(count_of(patch, "deleted file mode"), 4u);
  EXPECT_EQ(count_of(patch, "\\ No newline at end of file"), 1u);
  expect_same_tree_as_git(patch);
}

TEST_F(GitParity, EmptyNewAndDeletedFiles) {
  repo.write("was-empty.txt", "");
  repo.write("becomes-empty.txt", "content\nmore\n");
  repo.write("stops-being-empty.txt", "");
  repo.write("dir/empty-too", "");
  commit_base();
  repo.write("new-empty.txt", "");
  repo.write("sub/new-empty", "");
  repo.remove("was-empty.txt");
  repo.remove("dir/empty-too");
  repo.write("becomes-empty.txt", "");
  repo.write("stops-being-empty.txt", "now something\n");
  std::string patch = take_patch();
  EXPECT_EQ(count_of(patch, "new file mode"), 2u);
  EXPECT_EQ(count_of(patch, "deleted file mode"), 2u);
  expect_same_tree_as_git(patch);
}

TEST_F(GitParity, RenameWithoutContentChange) {
  repo.write("old/name.txt", numbered(20));
  repo.write("other.txt", "x\n");
  commit_base();
  repo.remove("old");
  repo.write("new/place/name.txt", numbered(20));
  std::string patch = take_patch({"-M"});
  EXPECT_NE(patch.find("similarity index 100%"), std::string::npos);
  EXPECT_NE(patch.find("rename from old/name.txt"), std::string::npos);
  expect_same_tree_as_git(patch);
}

TEST_F(GitParity, EmptyFileRenamed) {
  repo.write("empty-before", "");
  repo.write("x.txt", "x\n");
  commit_base();
  repo.remove("empty-before");
  repo.write("moved/empty-after", "");
  std::string patch = take_patch({"-M"});
  EXPECT_NE(patch.find("rename from empty-before"), std::string::npos);
  expect_same_tree_as_git(patch);
}

TEST_F(GitParity, RenameWithContentChange) {
  std::string text = numbered(30);
  repo.write("before.txt", text);
  repo.write("script.sh", numbered(20, "echo"));
  commit_base();
  repo.remove("before.txt");
  repo.write("after.txt", replace_line(text, 15, "line fifteen, edited while moving"));
  // A rename that also changes the mode.
  repo.remove("script.sh");
  repo.write("bin/script", replace_line(numbered(20, "echo"), 2, "echo two"));
  repo.set_executable("bin/script", true);
  std::string patch = take_patch({"-M"});
  EXPECT_EQ(count_of(patch, "rename from"), 2u);
  EXPECT_NE(patch.find("new mode 100755"), std::string::npos);
  expect_same_tree_as_git(patch);
}

TEST_F(GitParity, CaseOnlyRename) {
  repo.write("readme.md", "case matters\n");
  commit_base();
  repo.git({"mv", "readme.md", "README.md"});
  std::string patch = take_patch({"-M"});
  EXPECT_NE(patch.find("rename from readme.md\nrename to README.md"), std::string::npos);
  expect_same_tree_as_git(patch);
}

TEST_F(GitParity, RenameSwap) {
  // Two files trading names: with break detection (-B) git writes two renames whose
  // sources are each other's destinations.
  repo.write("a.txt", numbered(60, "alpha"));
  repo.write("b.txt", numbered(60, "beta"));
  commit_base();
  repo.write("a.txt", numbered(60, "beta"));
  repo.write("b.txt", numbered(60, "alpha"));
  std::string patch = take_patch({"-B", "-M"});
  EXPECT_NE(patch.find("rename from a.txt\nrename to b.txt"), std::string::npos);
  EXPECT_NE(patch.find("rename from b.txt\nrename to a.txt"), std::string::npos);
  expect_same_tree_as_git(patch);
}

TEST_F(GitParity, CopyWithoutContentChange) {
  repo.write("src.txt", numbered(25));
  commit_base();
  repo.write("copies/dst.txt", numbered(25));
  // The source is unchanged, so only --find-copies-harder (-C -C) finds the copy.
  std::string patch = take_patch({"-C", "-C"});
  EXPECT_NE(patch.find("copy from src.txt"), std::string::npos);
  EXPECT_NE(patch.find("similarity index 100%"), std::string::npos);
  expect_same_tree_as_git(patch);
}

TEST_F(GitParity, CopyWithContentChange) {
  std::string text = numbered(25);
  repo.write("src.txt", text);
  commit_base();
  repo.write("dst.txt", replace_line(text, 12, "line twelve in the copy"));
  repo.write("src.txt", replace_line(text, 3, "line three in the source"));  // the source changes too
  std::string patch = take_patch({"-C", "-C"});
  EXPECT_NE(patch.find("copy from src.txt"), std::string::npos);
  EXPECT_EQ(patch.find("similarity index 100%"), std::string::npos);
  expect_same_tree_as_git(patch);
}

TEST_F(GitParity, ModeChangeWithoutContentChange) {
  repo.write("to-exec.sh", "#!/bin/sh\n");
  repo.write("from-exec.sh", "#!/bin/sh\n");
  repo.set_executable("from-exec.sh", true);
  commit_base();
  repo.set_executable("to-exec.sh", true);
  repo.set_executable("from-exec.sh", false);
  std::string patch = take_patch();
  EXPECT_NE(patch.find("old mode 100644\nnew mode 100755"), std::string::npos);
  EXPECT_NE(patch.find("old mode 100755\nnew mode 100644"), std::string::npos);
  EXPECT_EQ(patch.find("@@"), std::string::npos);
  expect_same_tree_as_git(patch);
}

TEST_F(GitParity, ModeChangeWithContentChange) {
  repo.write("a.sh", "#!/bin/sh\necho a\n");
  repo.write("b.sh", "#!/bin/sh\necho b\n");
  repo.set_executable("b.sh", true);
  commit_base();
  repo.write("a.sh", "#!/bin/sh\necho A\n");
  repo.set_executable("a.sh", true);
  repo.write("b.sh", "#!/bin/sh\necho B\n");
  repo.set_executable("b.sh", false);
  std::string patch = take_patch();
  EXPECT_EQ(count_of(patch, "old mode"), 2u);
  EXPECT_EQ(count_of(patch, "\n@@ "), 2u);
  expect_same_tree_as_git(patch);
}

TEST_F(GitParity, QuotedPaths) {
  repo.write("with space.txt", "one\ntwo\n");
  repo.write("quo\"te.txt", "q\n");
  repo.write("back\\slash.txt", "b\n");
  repo.write("old name.txt", numbered(20));
  repo.write("dir with space/caf\xc3\xa9 menu.txt", "espresso\n");
  commit_base();
  repo.write("with space.txt", "one\nTWO\n");
  repo.write("tab\there.txt", "tab\n");
  repo.write("caf\xc3\xa9.txt", "accent\n");
  repo.write("quo\"te.txt", "Q\n");
  repo.write("back\\slash.txt", "B\n");
  repo.write("dir with space/caf\xc3\xa9 menu.txt", "espresso\nlatte\n");
  repo.remove("old name.txt");
  repo.write("new \xc3\xa9 name.txt", numbered(20));
  std::string patch = take_patch({"-M"});
  // core.quotePath is at its default, so git writes octal escapes and C quotes.
  EXPECT_NE(patch.find("\"b/caf\\303\\251.txt\""), std::string::npos);
  EXPECT_NE(patch.find("\"b/tab\\there.txt\""), std::string::npos);
  EXPECT_NE(patch.find("\"a/quo\\\"te.txt\""), std::string::npos);
  EXPECT_NE(patch.find("\"a/back\\\\slash.txt\""), std::string::npos);
  EXPECT_NE(patch.find("+++ b/with space.txt\t"), std::string::npos);
  EXPECT_NE(patch.find("rename to \"new \\303\\251 name.txt\""), std::string::npos);
  expect_same_tree_as_git(patch);
}

TEST_F(GitParity, CrlfContents) {
  repo.write("dos.txt", "one\r\ntwo\r\nthree\r\nfour\r\n");
  repo.write("mixed.txt", "unix\ndos\r\nunix again\nend\r");
  commit_base();
  repo.write("dos.txt", "one\r\nTWO\r\nthree\r\nfour\r\nfive\r\n");
  repo.write("mixed.txt", "unix\ndos, edited\r\nunix again\nend, edited\r");
  repo.write("new-dos.txt", "a\r\nb\r\n");
  std::string patch = take_patch();
  EXPECT_NE(patch.find("+TWO\r\n"), std::string::npos);
  expect_same_tree_as_git(patch);
}

TEST_F(GitParity, NonUtf8TextContent) {
  repo.write("latin1.txt", "caf\xe9\nna\xefve\nplain\n");
  commit_base();
  repo.write("latin1.txt", "caf\xe9 cr\xe8me\nna\xefve\nplain\n");
  std::string patch = take_patch();
  ASSERT_EQ(patch.find("GIT binary patch"), std::string::npos) << "git should treat this as text";
  expect_same_tree_as_git(patch);
}

TEST_F(GitParity, BinaryLiteralNewFile) {
  repo.write("readme.txt", "r\n");
  commit_base();
  repo.write("assets/blob.bin", random_bytes(3000, 1));
  std::string patch = take_patch();
  EXPECT_NE(patch.find("GIT binary patch\nliteral 3000\n"), std::string::npos);
  expect_same_tree_as_git(patch);
}

TEST_F(GitParity, BinaryLiteralModification) {
  repo.write("small.bin", random_bytes(200, 2));
  commit_base();
  repo.write("small.bin", random_bytes(180, 3));
  std::string patch = take_patch();
  EXPECT_NE(patch.find("GIT binary patch\nliteral 180\n"), std::string::npos);
  expect_same_tree_as_git(patch);
}

TEST_F(GitParity, BinaryDelta) {
  std::string big = random_bytes(96 * 1024, 4);
  repo.write("big.bin", big);
  commit_base();
  for (size_t at : {1000u, 50000u, 90000u}) big.replace(at, 8, "CHANGED!");
  big += "tail";
  repo.write("big.bin", big);
  std::string patch = take_patch();
  EXPECT_NE(patch.find("GIT binary patch\ndelta "), std::string::npos) << "git chose a literal, not a delta";
  expect_same_tree_as_git(patch);
}

TEST_F(GitParity, BinaryRenamedWithDelta) {
  std::string big = random_bytes(64 * 1024, 9);
  repo.write("old.bin", big);
  commit_base();
  repo.remove("old.bin");
  big.replace(20000, 4, "EDIT");
  repo.write("assets/new.bin", big);
  repo.set_executable("assets/new.bin", true);
  std::string patch = take_patch({"-M"});
  EXPECT_NE(patch.find("rename from old.bin"), std::string::npos);
  EXPECT_NE(patch.find("GIT binary patch\ndelta "), std::string::npos);
  expect_same_tree_as_git(patch);
}

TEST_F(GitParity, BinaryDeletion) {
  repo.write("doomed.bin", random_bytes(1500, 5));
  repo.write("text.txt", "t\n");
  commit_base();
  repo.remove("doomed.bin");
  std::string patch = take_patch();
  EXPECT_NE(patch.find("deleted file mode 100644"), std::string::npos);
  EXPECT_NE(patch.find("GIT binary patch"), std::string::npos);
  expect_same_tree_as_git(patch);
}

TEST_F(GitParity, SymlinkAdded) {
  repo.write("src/file.txt", "target\n");
  commit_base();
  repo.symlink("links/to-file", "../src/file.txt");
  repo.symlink("src-link", "src");
  repo.symlink("dangling", "not/there/yet");
  std::string patch = take_patch();
  EXPECT_EQ(count_of(patch, "new file mode 120000"), 3u);
  expect_same_tree_as_git(patch);
}

TEST_F(GitParity, SymlinkRetargetedAndRemoved) {
  repo.write("a.txt", "a\n");
  repo.write("b.txt", "b\n");
  repo.symlink("current", "a.txt");
  repo.symlink("old-link", "b.txt");
  commit_base();
  repo.remove("current");
  repo.symlink("current", "b.txt");
  repo.remove("old-link");
  std::string patch = take_patch();
  EXPECT_NE(patch.find("deleted file mode 120000"), std::string::npos);
  expect_same_tree_as_git(patch);
}

TEST_F(GitParity, FileReplacedByDirectory) {
  repo.write("thing", "a file for now\n");
  repo.write("other.txt", "o\n");
  commit_base();
  repo.remove("thing");
  repo.write("thing/inside.txt", "now a directory\n");
  repo.write("thing/deeper/more.txt", "and deeper\n");
  std::string patch = take_patch();
  expect_same_tree_as_git(patch);
}

TEST_F(GitParity, SymlinkReplacedByDirectory) {
  repo.write("real/file.txt", "r\n");
  repo.symlink("alias", "real");
  commit_base();
  repo.remove("alias");
  repo.write("alias/own.txt", "a directory of its own\n");
  std::string patch = take_patch();
  expect_same_tree_as_git(patch);
}

TEST_F(GitParity, DirectoryReplacedByFile) {
  repo.write("thing/a.txt", "a\n");
  repo.write("thing/sub/b.txt", "b\n");
  repo.write("other.txt", "o\n");
  commit_base();
  repo.remove("thing");
  repo.write("thing", "a file now\n");
  std::string patch = take_patch();
  // git lists the new file "thing" and the deletions under "thing/" as separate sections.
  EXPECT_NE(patch.find("diff --git a/thing b/thing\nnew file mode"), std::string::npos);
  expect_same_tree_as_git(patch);
}

TEST_F(GitParity, FileReplacedBySymlink) {
  repo.write("config", "inline settings\n");
  repo.write("shared/config", "shared settings\n");
  commit_base();
  repo.remove("config");
  repo.symlink("config", "shared/config");
  std::string patch = take_patch();
  // A type change: git writes a deletion and a creation of the same path.
  EXPECT_EQ(count_of(patch, "diff --git a/config b/config"), 2u);
  expect_same_tree_as_git(patch);
}

TEST_F(GitParity, FormatPatchSingleCommit) {
  std::string text = numbered(20);
  repo.write("notes.md", "# Notes\n- \n- item\n");
  repo.write("a.txt", text);
  repo.write("pic.bin", random_bytes(500, 6));
  commit_base();
  // A removed "- " line is written "-- ", the same bytes as the mail signature separator.
  repo.write("notes.md", "# Notes\n- item\n");
  repo.write("a.txt", replace_line(text, 10, "line ten via mail"));
  repo.remove("pic.bin");
  repo.write("img/pic.bin", random_bytes(500, 6));
  repo.write("added.txt", "from a mail\n");
  repo.commit_all("Change several things\n\nA body line.\n---\nNot the diffstat separator, just text.");
  std::string patch = format_patch_of("HEAD");
  repo.reset_hard(base);
  EXPECT_TRUE(patch.starts_with("From ")) << patch.substr(0, 200);
  EXPECT_NE(patch.find("\nSubject: [PATCH] Change several things\n"), std::string::npos);
  EXPECT_NE(patch.find("\n-- \n2."), std::string::npos) << "format-patch signature";
  EXPECT_NE(patch.find("\n-- \n - item"), std::string::npos) << "the removed \"- \" line";
  expect_same_tree_as_git(patch);
}

TEST_F(GitParity, FormatPatchTwoCommitsOnDifferentFiles) {
  repo.write("a.txt", numbered(10, "a"));
  repo.write("b.txt", numbered(10, "b"));
  commit_base();
  repo.write("a.txt", replace_line(numbered(10, "a"), 5, "a five, first commit"));
  repo.commit_all("first");
  repo.write("b.txt", replace_line(numbered(10, "b"), 7, "b seven, second commit"));
  repo.write("c.txt", "new in the second commit\n");
  repo.commit_all("second");
  std::string patch = format_patch_of("HEAD~1") + format_patch_of("HEAD");
  repo.reset_hard(base);
  EXPECT_EQ(count_of(patch, "\nSubject: [PATCH] "), 2u);
  expect_same_tree_as_git(patch);
}

TEST_F(GitParity, FormatPatchTwoCommitsOnTheSameFile) {
  std::string text = numbered(20);
  repo.write("a.txt", text);
  commit_base();
  text = replace_line(text, 3, "line three, first commit");
  repo.write("a.txt", text);
  repo.commit_all("first");
  repo.write("a.txt", replace_line(text, 15, "line fifteen, second commit"));
  repo.commit_all("second");
  // git applies the second mail's hunk to the first one's result.
  std::string patch = format_patch_of("HEAD~1") + format_patch_of("HEAD");
  repo.reset_hard(base);
  expect_same_tree_as_git(patch);
}

TEST_F(GitParity, PlainUnifiedDiffOfModifications) {
  std::string text = numbered(30);
  repo.write("x.txt", text);
  repo.write("dir/y.txt", numbered(12, "y"));
  repo.write("with space.txt", "s\n");
  commit_base();
  copy_work_tree(repo.scratch("a"));
  copy_work_tree(repo.scratch("b"));
  write_file(repo.scratch("b/x.txt"), replace_line(replace_line(text, 2, "two"), 28, "twenty-eight"));
  write_file(repo.scratch("b/dir/y.txt"), numbered(12, "y") + "y 13\n");
  write_file(repo.scratch("b/with space.txt"), "S\n");
  std::string patch = plain_diff(repo.dir());
  EXPECT_NE(patch.find("diff -ruN a/x.txt b/x.txt\n--- a/x.txt\t"), std::string::npos);
  expect_same_tree_as_git(patch);
}

TEST_F(GitParity, PlainUnifiedDiffWithNewAndDeletedFiles) {
  repo.write("x.txt", numbered(5));
  repo.write("doomed.txt", "bye\n");
  commit_base();
  copy_work_tree(repo.scratch("a"));
  copy_work_tree(repo.scratch("b"));
  write_file(repo.scratch("b/x.txt"), numbered(6));
  fs::remove(repo.scratch("b/doomed.txt"));
  fs::create_directories(repo.scratch("b/fresh"));
  write_file(repo.scratch("b/fresh/new.txt"), "hello\n");
  std::string patch = plain_diff(repo.dir());
  // diff -N writes absent files as empty ones dated at the epoch (no /dev/null); git
  // apply reads that date as "created" / "deleted".
  EXPECT_NE(patch.find("--- a/fresh/new.txt\t1970-01-01 00:00:00"), std::string::npos);
  expect_same_tree_as_git(patch);
}

TEST_F(GitParity, PlainUnifiedDiffDeletingAFile) {
  // The epoch-dated "+++" side alone marks the deletion; read as a modification it would
  // leave an empty file where git removes it, a different tree rather than a refusal.
  repo.write("x.txt", numbered(5));
  repo.write("doomed.txt", "bye\n");
  commit_base();
  copy_work_tree(repo.scratch("a"));
  copy_work_tree(repo.scratch("b"));
  fs::remove(repo.scratch("b/doomed.txt"));
  std::string patch = plain_diff(repo.dir());
  EXPECT_NE(patch.find("+++ b/doomed.txt\t1970-01-01 00:00:00"), std::string::npos);
  expect_same_tree_as_git(patch);
}

}  // namespace
}  // namespace warden::test
