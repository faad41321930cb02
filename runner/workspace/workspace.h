// The git workspace the kernel works in: turns patches into canonical Diffs against a base
// revision, verifies and applies Diffs to produce trees (no working directory involved),
// commits accepted changes with Warden's trailers, and checks trees out for runners.
//
// A Workspace owns its GitRepo and inherits its rules: not thread-safe (libgit2 handles), so
// one Workspace per thread; repo() lends the GitRepo, which lives as long as the Workspace.
// Errors are Refusals: a diff that does not apply (hash_mismatch, path_*, ...) is the
// proposal's fault; repository_error is the repository's; branch_moved means another writer
// moved the branch. check() writes nothing; apply() writes only unreferenced objects, so a
// refusal after it leaves no visible change; write_commit() writes the commit object only,
// and a branch moves only through repo().move_branch() (the kernel records its intent
// first; see git_repo.h on durability).
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "common/clock.h"
#include "diff/diff.h"
#include "runner/workspace/git_repo.h"

namespace warden {

struct AppliedDiff {
  ObjectId base_commit, base_tree, tree;
  size_t files = 0;
};

struct CommitOptions {
  // The default is filled in by the caller: Workspace::write_commit() refuses an empty branch.
  std::string branch;                   // default: warden/<run id>
  std::string message;                  // default: "warden: step <id>"
  std::optional<Digest> record;         // the ledger record that accepted it, if any
  Identity author;
};

class Workspace {
 public:
  // Opens an existing repository; `init_if_missing` creates a bare one.
  static Checked<Workspace> open(const std::filesystem::path& path, bool init_if_missing = false);

  Checked<Diff> diff_from_patch(std::string_view patch_text, std::string_view base_rev, std::string step_id);
  // Verifies everything and writes nothing.
  Checked<void> check(const Diff& diff, std::string_view base_rev);
  // Verifies, then writes blobs and trees (objects only; no reference moves).
  Checked<AppliedDiff> apply(const Diff& diff, std::string_view base_rev);
  // apply() onto a tree that no commit holds (yet): a merge queue's speculative base.
  Checked<ObjectId> apply_to_tree(const Diff& diff, const ObjectId& base_tree);
  // Whether a commit on `base_rev` could move `branch`: a valid name, and new or still at
  // the base. Moving it checks again atomically; this lets callers refuse before writing.
  Checked<void> check_branch(const std::string& branch, std::string_view base_rev);
  // Writes the commit of an applied diff (no reference moves); the commit time comes from
  // `clock`, so the id is reproducible and can be recorded before the branch moves.
  Checked<ObjectId> write_commit(const Diff& diff, const AppliedDiff& applied, const CommitOptions& options, Clock& clock);
  Checked<void> checkout(const ObjectId& tree, const std::filesystem::path& dir) { return repo_.checkout(tree, dir); }

  GitRepo& repo() { return repo_; }

 private:
  explicit Workspace(GitRepo repo) : repo_(std::move(repo)) {}
  Checked<std::vector<ResolvedFile>> resolve(const Diff& diff, std::string_view base_rev, ObjectId& commit, ObjectId& tree);
  GitRepo repo_;
};

// The commit message: the summary, a blank line, then the trailers auditors grep for.
std::string commit_message(const Diff& diff, const CommitOptions& options);

}  // namespace warden
