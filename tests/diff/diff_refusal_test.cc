// The refusing side of diff application: what `warden diff parse|check|apply|commit` does with patches
// and diffs it must not apply. Each refusal must carry the documented exit code and its
// reason code (on stderr, and in the --json output), and must leave the repository exactly
// as it was: no new object files, no ref moved.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "common/sha256.h"
#include "tests/support/files.h"
#include "tests/support/warden_cli.h"
#include "tests/support/git_fixture.h"

namespace warden::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string random_bytes(size_t size, uint32_t seed) {
  std::mt19937 gen(seed);
  std::string out(size, '\0');
  for (auto& c : out) c = static_cast<char>(gen() & 0xff);
  return out;
}

std::string replace_first(std::string text, std::string_view what, std::string_view with) {
  auto at = text.find(what);
  if (at == std::string::npos) throw std::runtime_error("replace_first: \"" + std::string(what) + "\" not found");
  return text.replace(at, what.size(), with);
}

// A path as git writes it in a header: C-quoted when it holds bytes that need escaping.
std::string git_quoted(const std::string& prefixed) {
  bool plain = true;
  std::string q = "\"";
  for (unsigned char c : prefixed) {
    if (c == '"' || c == '\\') q += '\\', q += static_cast<char>(c), plain = false;
    else if (c < 0x20 || c >= 0x7f) {
      char buf[5];
      std::snprintf(buf, sizeof buf, "\\%03o", c);
      q += buf;
      plain = false;
    } else {
      q += static_cast<char>(c);
    }
  }
  return plain ? prefixed : q + "\"";
}

// A git patch creating one file (or symlink) at `path`, written by hand because git
// itself will not produce patches for unsafe paths.
std::string new_file_patch(const std::string& path, const std::string& content, const std::string& mode = "100644") {
  std::string a = git_quoted("a/" + path), b = git_quoted("b/" + path);
  bool has_newline = !content.empty() && content.back() == '\n';
  std::string body = has_newline ? content.substr(0, content.size() - 1) : content;
  return "diff --git " + a + " " + b + "\nnew file mode " + mode + "\n--- /dev/null\n+++ " + b + "\n@@ -0,0 +1 @@\n+" +
         body + "\n" + (has_newline ? "" : "\\ No newline at end of file\n");
}

json add_file(const std::string& path, const std::string& content, const std::string& mode = "100644") {
  return {{"op", "add"}, {"path", path}, {"new_mode", mode}, {"after_sha256", sha256(content).str()}, {"after_content", content}};
}

json sealed(std::vector<json> files) { return reseal({{"step_id", "s1"}, {"files", std::move(files)}}); }

// Snapshots the repository on construction and expects it unchanged on destruction.
class ExpectNothingWritten {
 public:
  explicit ExpectNothingWritten(const GitRepoFixture& repo, bool refs_only = false)
      : repo_(repo), refs_only_(refs_only), before_(repo.snapshot()) {}
  ~ExpectNothingWritten() {
    RepoSnapshot after = repo_.snapshot();
    if (refs_only_) after.objects = before_.objects;
    EXPECT_EQ(before_, after) << "a refusal wrote to the repository:\n" << describe_difference(before_, after);
  }
  ExpectNothingWritten(const ExpectNothingWritten&) = delete;
  ExpectNothingWritten& operator=(const ExpectNothingWritten&) = delete;

 private:
  const GitRepoFixture& repo_;
  bool refs_only_;
  RepoSnapshot before_;
};

// The exit code, the reason code on stderr, and with --json the same code on stdout.
void expect_refusal(const ProcessResult& r, int exit_code, const std::string& code) {
  EXPECT_TRUE(r.exited_with(exit_code)) << "expected exit " << exit_code << " (" << code << ")\n" << describe(r);
  EXPECT_NE(r.err.find(code), std::string::npos) << "stderr does not name " << code << "\n" << describe(r);
  if (r.out.empty()) return;
  json out = json::parse(r.out, nullptr, false);
  ASSERT_FALSE(out.is_discarded()) << describe(r);
  // A refusal is a result that says not ok; anything else is the error line.
  EXPECT_TRUE(out.value("type", "") == "error" || (out.value("type", "") == "result" && out.value("ok", true) == false))
      << describe(r);
  if (out.contains("refusal")) {
    EXPECT_EQ(out["refusal"].value("code", ""), code) << describe(r);
  }
}

class DiffRefusal : public ::testing::Test {
 protected:
  GitRepoFixture repo;
  std::string base;

  void SetUp() override {
    repo.write("README.txt", numbered(20));
    repo.write("readme.md", "lower case\n");
    repo.write("dir/file.txt", "in dir\n");
    repo.write("Docs/x.txt", "x\n");
    repo.write("data.bin", random_bytes(300, 7));
    repo.symlink("lnk", "dir");
    base = repo.commit_all("base");
  }

  fs::path write_scratch(const std::string& name, std::string_view bytes) {
    fs::path p = repo.scratch(name);
    write_file(p, bytes);
    return p;
  }
  fs::path write_diff(const json& diff, const std::string& name = "DIFF.json") { return write_scratch(name, diff.dump()); }

  ProcessResult parse(const fs::path& patch, const std::string& on = "") {
    return warden_diff("parse", patch.string(), repo, on.empty() ? base : on, {"--json"});
  }

  // check, apply and commit must each refuse the diff the same way.
  void expect_every_command_refuses(const fs::path& diff_file, int exit_code, const std::string& code) {
    for (std::string sub : {"check", "apply", "commit"}) {
      SCOPED_TRACE("warden diff " + sub);
      std::vector<std::string> extra{"--json"};
      if (sub == "commit") extra.insert(extra.end(), {"--branch", "b1", "--timestamp", kCommitTimestamp});
      expect_refusal(warden_diff(sub, diff_file.string(), repo, base, extra), exit_code, code);
    }
  }

  // A patch must be refused somewhere on parse -> check/apply/commit, with `code`; when
  // parse lets it through (path rules are the applier's), every later command refuses it.
  void expect_patch_refused(const std::string& patch, int exit_code, const std::string& code) {
    SCOPED_TRACE("patch:\n" + patch.substr(0, 2000));
    fs::path patch_file = write_scratch("bad.patch", patch);
    ProcessResult parsed = parse(patch_file);
    // check, apply and commit given the patch itself parse it the same way.
    expect_every_command_refuses(patch_file, exit_code, code);
    if (!parsed.exited_with(0)) {
      expect_refusal(parsed, exit_code, code);
      return;
    }
    expect_every_command_refuses(write_diff(json::parse(parsed.out).at("diff"), "bad-from-patch.json"), exit_code, code);
  }

  // The canonical diff of a real one-line change to README.txt, parsed by Warden.
  json readme_change(const std::string& text = "line ten, changed") {
    repo.write("README.txt", replace_line(numbered(20), 10, text));
    std::string patch = repo.staged_patch();
    repo.reset_hard(base);
    ProcessResult parsed = parse(write_scratch("good.patch", patch));
    EXPECT_TRUE(parsed.exited_with(0)) << describe(parsed);
    return json::parse(parsed.out).at("diff");
  }

  std::string readme_patch() {
    repo.write("README.txt", replace_line(numbered(20), 10, "line ten, changed"));
    std::string patch = repo.staged_patch();
    repo.reset_hard(base);
    return patch;
  }
};

// --- Offsets: git searches, Warden does not -------------------------------------------------

class OffsetPatch : public DiffRefusal {
 protected:
  std::string patch, moved_base;

  void SetUp() override {
    DiffRefusal::SetUp();
    patch = readme_patch();
    // The patch's base plus three lines above the hunk: git finds the hunk 3 lines lower.
    repo.write("README.txt", "extra 1\nextra 2\nextra 3\n" + numbered(20));
    moved_base = repo.commit_all("lines inserted above the hunk");
  }

  // git accepts it only by moving the hunk, and says so.
  void expect_git_applies_with_offset(const std::string& p) {
    fs::path f = write_scratch("offset.patch", p);
    repo.git({"read-tree", moved_base});
    ProcessResult applied = repo.try_git({"apply", "--cached", "-v", f.string()});
    repo.git({"read-tree", moved_base});
    EXPECT_TRUE(applied.exited_with(0)) << describe(applied);
    EXPECT_NE(applied.err.find("offset 3 lines"), std::string::npos) << describe(applied);
  }
};

TEST_F(OffsetPatch, GitDiffWithIndexLineIsRefusedByItsPreImage) {
  expect_git_applies_with_offset(patch);
  ExpectNothingWritten guard(repo);
  // The index line names the old blob: Warden refuses before looking at lines at all.
  expect_refusal(parse(write_scratch("p.patch", patch), moved_base), kExitRefused, "hash_mismatch");
}

TEST_F(OffsetPatch, PatchWithoutIndexLineIsRefusedAsHunkMismatch) {
  std::string bare = patch;
  bare.erase(bare.find("index "), bare.find('\n', bare.find("index ")) - bare.find("index ") + 1);
  ASSERT_EQ(bare.find("index "), std::string::npos);
  expect_git_applies_with_offset(bare);
  ExpectNothingWritten guard(repo);
  expect_refusal(parse(write_scratch("p.patch", bare), moved_base), kExitRefused, "hunk_mismatch");
}

TEST_F(OffsetPatch, DiffJsonAnchoredToTheNewPreImageStillRefusesTheShiftedHunk) {
  // A diff whose hashes are right for the moved base (git's own result as the post-image)
  // but whose hunk still sits 3 lines too high: the applier must not search for it.
  ProcessResult parsed = parse(write_scratch("p.patch", patch));
  ASSERT_TRUE(parsed.exited_with(0)) << describe(parsed);
  json diff = json::parse(parsed.out).at("diff");
  std::string git_tree = repo.git_apply_tree(moved_base, patch);
  std::string post = repo.git({"cat-file", "blob", git_tree + ":README.txt"});
  diff["files"][0]["before_sha256"] = sha256(repo.git({"cat-file", "blob", moved_base + ":README.txt"})).str();
  diff["files"][0]["after_sha256"] = sha256(post).str();
  fs::path diff_file = write_diff(reseal(diff));
  ExpectNothingWritten guard(repo);
  for (std::string sub : {"check", "apply"}) {
    expect_refusal(warden_diff(sub, diff_file.string(), repo, moved_base, {"--json"}), kExitRefused, "hunk_mismatch");
  }
}

// --- Malformed patches ------------------------------------------------------------------

TEST_F(DiffRefusal, TruncatedPatchCutMidHunk) {
  std::string patch = readme_patch();
  size_t hunk = patch.find("\n@@ ");
  size_t cut = hunk;
  for (int i = 0; i < 4; ++i) cut = patch.find('\n', cut + 1);  // the header and 3 of its 7 lines
  std::string truncated = patch.substr(0, cut + 1);
  EXPECT_FALSE(repo.try_git({"apply", "--check", "--cached", write_scratch("t.patch", truncated).string()}).exited_with(0));
  ExpectNothingWritten guard(repo);
  expect_patch_refused(truncated, kExitInvalidInput, "hunk_count_mismatch");
}

TEST_F(DiffRefusal, TruncatedPatchCutMidLine) {
  std::string patch = readme_patch();
  std::string truncated = patch.substr(0, patch.find("+line ten, changed") + 8);
  ExpectNothingWritten guard(repo);
  expect_patch_refused(truncated, kExitInvalidInput, "malformed_patch");
}

TEST_F(DiffRefusal, HunkHeaderCountsTooHigh) {
  repo.write("README.txt", replace_line(numbered(20), 10, "line ten, changed"));
  repo.write("dir/file.txt", "in dir, changed\n");
  std::string two_files = repo.staged_patch();  // README.txt's hunk is followed by another file
  repo.reset_hard(base);
  std::string bad = replace_first(two_files, "@@ -7,7 +7,7 @@", "@@ -7,8 +7,7 @@");
  EXPECT_FALSE(repo.try_git({"apply", "--check", "--cached", write_scratch("t.patch", bad).string()}).exited_with(0));
  ExpectNothingWritten guard(repo);
  expect_patch_refused(bad, kExitInvalidInput, "hunk_count_mismatch");
}

TEST_F(DiffRefusal, HunkHeaderCountsTooLow) {
  std::string bad = replace_first(readme_patch(), "@@ -7,7 +7,7 @@", "@@ -7,5 +7,5 @@");
  ExpectNothingWritten guard(repo);
  expect_patch_refused(bad, kExitInvalidInput, "hunk_count_mismatch");
}

TEST_F(DiffRefusal, HunkContextDoesNotMatch) {
  std::string bad = replace_first(readme_patch(), "\n line 8\n", "\n line eight\n");
  EXPECT_FALSE(repo.try_git({"apply", "--check", "--cached", write_scratch("t.patch", bad).string()}).exited_with(0));
  ExpectNothingWritten guard(repo);
  expect_patch_refused(bad, kExitRefused, "hunk_mismatch");
}

TEST_F(DiffRefusal, HunkContextDoesNotMatchInDiffJson) {
  json diff = readme_change();
  auto& lines = diff["files"][0]["hunks"][0]["lines"];
  ASSERT_EQ(lines[0], " line 7\n") << diff.dump();
  lines[0] = " line seven\n";
  fs::path f = write_diff(reseal(diff));
  ExpectNothingWritten guard(repo);
  expect_every_command_refuses(f, kExitRefused, "hunk_mismatch");
}

TEST_F(DiffRefusal, BinaryGarbage) {
  ExpectNothingWritten guard(repo);
  expect_patch_refused(random_bytes(64 * 1024, 99), kExitInvalidInput, "malformed_patch");
}

TEST_F(DiffRefusal, EmptyPatch) {
  ExpectNothingWritten guard(repo);
  expect_patch_refused("", kExitInvalidInput, "malformed_patch");
}

TEST_F(DiffRefusal, BinaryFilesDifferWithoutData) {
  repo.write("data.bin", random_bytes(300, 8));
  repo.git({"add", "-A"});
  std::string patch = repo.git({"diff", "--cached", "--full-index"});  // no --binary
  repo.reset_hard(base);
  ASSERT_NE(patch.find("Binary files a/data.bin and b/data.bin differ"), std::string::npos) << patch;
  ExpectNothingWritten guard(repo);
  expect_patch_refused(patch, kExitRefused, "binary_without_data");
}

TEST_F(DiffRefusal, SubmoduleIsUnsupported) {
  std::string patch =
      "diff --git a/sub b/sub\nnew file mode 160000\nindex 0000000000000000000000000000000000000000.."
      "1111111111111111111111111111111111111111\n--- /dev/null\n+++ b/sub\n@@ -0,0 +1 @@\n"
      "+Subproject commit 1111111111111111111111111111111111111111\n";
  ExpectNothingWritten guard(repo);
  expect_patch_refused(patch, kExitRefused, "unsupported_change");
}

// 100 MB: over the 64 MiB patch limit, refused up front as malformed input.
TEST_F(DiffRefusal, HundredMegabytePatch) {
  constexpr uint64_t kTarget = uint64_t{100} << 20;
  const std::string line = "+" + std::string(62, 'x') + "\n";
  const uint64_t lines = kTarget / line.size();
  fs::path patch_file = repo.scratch("huge.patch");
  {
    std::ofstream out(patch_file, std::ios::binary);
    out << "diff --git a/huge.txt b/huge.txt\nnew file mode 100644\n--- /dev/null\n+++ b/huge.txt\n@@ -0,0 +1,"
        << lines << " @@\n";
    std::string chunk;
    for (int i = 0; i < 16384; ++i) chunk += line;
    for (uint64_t written = 0; written < lines; written += 16384) {
      out.write(chunk.data(), static_cast<std::streamsize>(std::min<uint64_t>(16384, lines - written) * line.size()));
    }
    ASSERT_TRUE(out.good());
  }
  ASSERT_GE(fs::file_size(patch_file), kTarget - line.size());
  ExpectNothingWritten guard(repo);
  ProcessResult parsed = parse(patch_file);
  EXPECT_TRUE(parsed.exited_with(kExitInvalidInput)) << describe(parsed);
  EXPECT_NE(parsed.err.find("limit"), std::string::npos) << describe(parsed);
  // The documented reason code for this, as the parser itself reports it.
  EXPECT_NE(parsed.err.find("patch_too_large"), std::string::npos) << describe(parsed);
}

// --- Diffs whose anchors do not hold ---------------------------------------------------------

TEST_F(DiffRefusal, PreImageHashMismatch) {
  json diff = readme_change();
  diff["files"][0]["before_sha256"] = sha256("some other content\n").str();
  fs::path f = write_diff(reseal(diff));
  ExpectNothingWritten guard(repo);
  expect_every_command_refuses(f, kExitRefused, "hash_mismatch");
}

TEST_F(DiffRefusal, DiffMadeForAnotherBase) {
  json diff = readme_change();
  fs::path f = write_diff(diff);
  repo.write("README.txt", numbered(21));
  repo.commit_all("README moved on");
  ExpectNothingWritten guard(repo);
  for (std::string sub : {"check", "apply"}) {
    expect_refusal(warden_diff(sub, f.string(), repo, "HEAD", {"--json"}), kExitRefused, "hash_mismatch");
  }
}

TEST_F(DiffRefusal, WrongAfterSha256) {
  json diff = readme_change();
  diff["files"][0]["after_sha256"] = sha256("not what the hunks produce\n").str();
  fs::path f = write_diff(reseal(diff));
  ExpectNothingWritten guard(repo);
  expect_every_command_refuses(f, kExitRefused, "after_hash_mismatch");
}

TEST_F(DiffRefusal, TamperedDiffSha256) {
  json diff = readme_change();
  std::string seal = diff["diff_sha256"];
  seal.back() = seal.back() == '0' ? '1' : '0';
  diff["diff_sha256"] = seal;
  fs::path f = write_diff(diff);
  ExpectNothingWritten guard(repo);
  for (std::string sub : {"check", "apply", "commit"}) {
    std::vector<std::string> extra;
    if (sub == "commit") extra = {"--branch", "b1"};
    ProcessResult r = warden_diff(sub, f.string(), repo, base, extra);
    EXPECT_TRUE(r.exited_with(kExitInvalidInput)) << describe(r);
    EXPECT_NE(r.err.find("hash_mismatch"), std::string::npos) << describe(r);
    EXPECT_NE(r.err.find("diff_sha256"), std::string::npos) << describe(r);
  }
}

TEST_F(DiffRefusal, ContentEditedUnderAnOldSeal) {
  json diff = readme_change();
  diff["files"][0]["hunks"][0]["lines"][4] = "+line ten, changed by someone else\n";
  fs::path f = write_diff(diff);  // diff_sha256 left as it was
  ExpectNothingWritten guard(repo);
  ProcessResult r = warden_diff("apply", f.string(), repo, base);
  EXPECT_TRUE(r.exited_with(kExitInvalidInput)) << describe(r);
  EXPECT_NE(r.err.find("hash_mismatch"), std::string::npos) << describe(r);
}

TEST_F(DiffRefusal, ModeMismatch) {
  json diff = readme_change();
  diff["files"][0]["old_mode"] = "100755";
  fs::path f = write_diff(reseal(diff));
  ExpectNothingWritten guard(repo);
  expect_every_command_refuses(f, kExitRefused, "mode_mismatch");
}

TEST_F(DiffRefusal, DuplicatePath) {
  fs::path f = write_diff(sealed({add_file("twice.txt", "1\n"), add_file("twice.txt", "2\n")}));
  ExpectNothingWritten guard(repo);
  expect_every_command_refuses(f, kExitRefused, "duplicate_path");
}

TEST_F(DiffRefusal, PathConflictWithAFile) {
  fs::path f = write_diff(sealed({add_file("README.txt/inner.txt", "under a file\n")}));
  ExpectNothingWritten guard(repo);
  expect_every_command_refuses(f, kExitRefused, "path_conflict");
}

TEST_F(DiffRefusal, MalformedDiffJson) {
  fs::path f = write_scratch("DIFF.json", R"({"step_id": "s1", "files": [{"op": "explode", "path": "x"}]})");
  ExpectNothingWritten guard(repo);
  ProcessResult r = warden_diff("apply", f.string(), repo, base);
  EXPECT_TRUE(r.exited_with(kExitInvalidInput)) << describe(r);
  EXPECT_NE(r.err.find("malformed_diff"), std::string::npos) << describe(r);
}

TEST_F(DiffRefusal, DeleteOfAFileNotInTheBase) {
  std::string patch =
      "diff --git a/ghost.txt b/ghost.txt\ndeleted file mode 100644\n--- a/ghost.txt\n+++ /dev/null\n"
      "@@ -1 +0,0 @@\n-boo\n";
  ExpectNothingWritten guard(repo);
  expect_patch_refused(patch, kExitRefused, "path_not_found");
  json del = {{"op", "delete"}, {"path", "ghost.txt"}, {"old_mode", "100644"}, {"before_sha256", sha256("boo\n").str()}};
  expect_every_command_refuses(write_diff(sealed({del})), kExitRefused, "path_not_found");
}

TEST_F(DiffRefusal, AddOfAPathThatExists) {
  ExpectNothingWritten guard(repo);
  expect_patch_refused(new_file_patch("dir/file.txt", "again\n"), kExitRefused, "path_exists");
  expect_every_command_refuses(write_diff(sealed({add_file("README.txt", "again\n")})), kExitRefused, "path_exists");
}

TEST_F(DiffRefusal, UnknownRevisionAndRepository) {
  fs::path f = write_diff(readme_change());
  ExpectNothingWritten guard(repo);
  expect_refusal(warden_diff("apply", f.string(), repo, "no-such-branch", {"--json"}), kExitNotFound, "revision_not_found");
  ProcessResult r = warden({"diff", "apply", f.string(), "--repo", repo.scratch("nowhere").string(), "--base", "HEAD"});
  expect_refusal(r, kExitNotFound, "repository_not_found");
}

TEST_F(DiffRefusal, InvalidBranchName) {
  fs::path f = write_diff(readme_change());
  // The tree's objects may be written before the branch name is looked at; refs must not move.
  ExpectNothingWritten guard(repo, /*refs_only=*/true);
  expect_refusal(warden_diff("commit", f.string(), repo, base, {"--branch", "bad..name", "--json"}), kExitInvalidInput,
                 "invalid_branch");
}

// --- Unsafe paths, as hand-written DIFF.json and as hand-written patches -----------------------

struct UnsafePath {
  const char* name;
  std::string path;
  std::string content;  // a symlink's target when mode is 120000
  std::string mode;
  std::string code;
};

std::ostream& operator<<(std::ostream& os, const UnsafePath& u) { return os << u.name; }

class UnsafePathRefusal : public DiffRefusal, public ::testing::WithParamInterface<UnsafePath> {};

TEST_P(UnsafePathRefusal, InDiffJson) {
  const UnsafePath& u = GetParam();
  fs::path f = write_diff(sealed({add_file(u.path, u.content, u.mode)}));
  ExpectNothingWritten guard(repo);
  expect_every_command_refuses(f, kExitRefused, u.code);
}

TEST_P(UnsafePathRefusal, InPatch) {
  const UnsafePath& u = GetParam();
  ExpectNothingWritten guard(repo);
  expect_patch_refused(new_file_patch(u.path, u.content, u.mode), kExitRefused, u.code);
}

TEST_F(DiffRefusal, RenameOntoAnUnsafePath) {
  json rename = {{"op", "rename"},
                 {"path", "../stolen.txt"},
                 {"old_path", "dir/file.txt"},
                 {"old_mode", "100644"},
                 {"new_mode", "100644"},
                 {"before_sha256", sha256("in dir\n").str()},
                 {"after_sha256", sha256("in dir\n").str()}};
  fs::path f = write_diff(sealed({rename}));
  ExpectNothingWritten guard(repo);
  expect_every_command_refuses(f, kExitRefused, "path_traversal");
}

const std::string kSym = "120000", kFile = "100644";

INSTANTIATE_TEST_SUITE_P(
    Paths, UnsafePathRefusal,
    ::testing::Values(
        UnsafePath{"Absolute", "/etc/passwd", "pwned\n", kFile, "path_absolute"},
        UnsafePath{"DotDot", "../x", "escape\n", kFile, "path_traversal"},
        UnsafePath{"DotDotDeeper", "sub/../../x", "escape\n", kFile, "path_traversal"},
        UnsafePath{"GitConfig", ".git/config", "[core]\n", kFile, "path_in_git_dir"},
        UnsafePath{"GitUpperCaseHooks", ".GIT/hooks/x", "#!/bin/sh\n", kFile, "path_in_git_dir"},
        UnsafePath{"NestedGitDir", "nested/.Git/hooks/pre-commit", "#!/bin/sh\n", kFile, "path_in_git_dir"},
        UnsafePath{"DotComponent", "a/./b", "dot\n", kFile, "path_malformed"},
        UnsafePath{"EmptyComponent", "a//b", "empty\n", kFile, "path_malformed"},
        UnsafePath{"NulByte", std::string("x\0y", 3), "nul\n", kFile, "path_nul_byte"},
        UnsafePath{"ThroughBaseSymlink", "lnk/evil.txt", "via a symlink\n", kFile, "path_through_symlink"},
        UnsafePath{"SymlinkUpAndOut", "evil", "../../etc", kSym, "symlink_escapes_tree"},
        UnsafePath{"NestedSymlinkOut", "dir/up", "../../outside", kSym, "symlink_escapes_tree"},
        UnsafePath{"SymlinkAbsolute", "abs", "/etc/passwd", kSym, "symlink_escapes_tree"},
        UnsafePath{"SymlinkIntoGitDir", "hooks", ".git/hooks", kSym, "path_in_git_dir"},
        UnsafePath{"CaseCollisionFile", "README.md", "upper case\n", kFile, "path_case_collision"},
        UnsafePath{"CaseCollisionDirectory", "docs/new.txt", "beside Docs/\n", kFile, "path_case_collision"}),
    [](const ::testing::TestParamInfo<UnsafePath>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace warden::test
