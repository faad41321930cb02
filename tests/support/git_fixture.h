// Real git repositories for the runner's integration tests: each GitRepoFixture is a fresh
// `git init` in its own temp dir, driven through the git CLI (never libgit2, so the
// reference side of every comparison is git itself), plus helpers that run the real
// `warden diff` commands against it.
#pragma once

#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace warden::test {

// Documented exit codes (tools/warden/cli.h).
inline constexpr int kExitRefused = 1, kExitInvalidInput = 3, kExitNotFound = 4;

// The fixed commit time the tests pass to `warden diff commit --timestamp`.
inline constexpr const char* kCommitTimestamp = "1700000000";

// What a refusal must leave untouched: every file under .git/objects (by name) and every
// ref (by name and content).
struct RepoSnapshot {
  std::set<std::string> objects;
  std::map<std::string, std::string> refs;
  bool operator==(const RepoSnapshot&) const = default;
};
std::string describe_difference(const RepoSnapshot& before, const RepoSnapshot& after);

class GitRepoFixture {
 public:
  GitRepoFixture();  // git init with user.name/email set and core.autocrlf=false

  const std::filesystem::path& dir() const { return tmp_.path(); }  // scratch space beside the repo
  const std::filesystem::path& repo() const { return repo_; }
  std::filesystem::path scratch(std::string_view name) const { return tmp_.path() / name; }

  // `git -C <repo> args...`; throws with git's output when it exits non-zero.
  std::string git(const std::vector<std::string>& args) const;
  // The same, returning the whole result whatever the exit status.
  ProcessResult try_git(const std::vector<std::string>& args) const;
  // git's output without the trailing newline (ids, single values).
  std::string git_line(const std::vector<std::string>& args) const;

  // Work-tree edits; parents are created as needed.
  void write(std::string_view path, std::string_view bytes) const;
  std::string read(std::string_view path) const;
  void remove(std::string_view path) const;  // a file, a symlink or a whole directory
  void symlink(std::string_view path, std::string_view target) const;
  void set_executable(std::string_view path, bool executable) const;

  // git add -A and commit; returns the new commit id.
  std::string commit_all(const std::string& message);
  // git add -A, then `git diff --cached --full-index --binary <flags>`: the patch of the
  // work tree against HEAD.
  std::string staged_patch(const std::vector<std::string>& flags = {});
  // Back to `rev` in HEAD, index and work tree, dropping untracked files.
  void reset_hard(const std::string& rev);
  // `files` written over `base`, their staged patch saved as scratch(name), and the work
  // tree put back to `base`: a patch file for `warden propose`.
  std::filesystem::path patch_file(const std::string& base, const std::string& name,
                                   const std::map<std::string, std::string>& files);

  // What git makes of `patch` on `base`: read-tree, apply --cached, write-tree. The index
  // is put back to `base` afterwards. Throws when git refuses the patch.
  std::string git_apply_tree(const std::string& base, const std::string& patch,
                             const std::vector<std::string>& apply_flags = {});

  RepoSnapshot snapshot() const;

 private:
  TempDir tmp_;
  std::filesystem::path repo_;
  int patch_counter_ = 0;
};

// "<tag> 1\n<tag> 2\n..." : distinct lines, so hunks land where a test puts them.
std::string numbered(int count, std::string_view tag = "line");
// Replaces 1-based line `n` (without its newline) of `text`.
std::string replace_line(std::string text, int n, std::string_view with);

// The path of an executable found on PATH (the process helper execs without a search).
std::string find_program(std::string_view name);
std::string trim_newline(std::string text);

// `warden diff <args>` with --repo/--base filled in.
ProcessResult warden_diff(const std::string& sub, const std::string& input, const GitRepoFixture& repo,
                          const std::string& base, const std::vector<std::string>& extra = {});

// Wraps `warden diff parse` writing DIFF.json next to the repo; returns the file path.
// Fails the test (gtest) if parse refuses.
std::filesystem::path parse_to_diff(GitRepoFixture& repo, const std::string& base, const std::string& patch,
                                    const std::string& step = "step-1");

// Recomputes diff_sha256 for an edited diff so that what gets refused is the edit itself,
// not the seal. Throws if the JSON is not a well-formed Diff.
nlohmann::json reseal(nlohmann::json diff);

}  // namespace warden::test
