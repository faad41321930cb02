// Read-only base checkouts, one per git tree id, materialized once (objects read with
// libgit2, see write_full_tree) and shared by every run on that base: the bottom layer of
// each overlay workspace. A checkout is written into a temporary sibling, owned by the
// sandbox's host uid (so the sandboxed user owns the files it sees and may change them
// through the overlay), and renamed into place, so a directory named by a tree id is always
// complete. Nothing ever writes into one afterwards:
// overlayfs sends every write to the run's upper layer.
//
// Ownership: BaseCheckouts owns only its directory path and host identity; the checkouts on
// disk outlive it and are never removed by it. get() borrows `repo` for the call and returns
// a path the caller reads but must not write. Threads and processes: get() changes no member
// state and makes each checkout under a random temporary name, so several threads (each with
// its own GitRepo) and several processes may share one directory; if two make the same
// checkout, the first rename wins and the other's copy is discarded.
// Errors: a "workspace_error" Refusal is a filesystem failure in `dir`; refusals from reading
// the tree (repository_error) pass through. Either way no directory named by the tree id is
// left behind, and a retry starts over. Durability: nothing is fsynced; the name promises
// completeness against crashes of this process, not against a power loss.
#pragma once

#include <filesystem>

#include "runner/git_repo.h"
#include "runner/sandbox.h"

namespace warden {

class BaseCheckouts {
 public:
  // `dir` is created (0711) if needed; it must be reachable by the sandbox's host uid.
  BaseCheckouts(std::filesystem::path dir, SandboxHost host) : dir_(std::move(dir)), host_(std::move(host)) {}

  // The checkout of `tree`, made now if missing; `made` says whether it was.
  Checked<std::filesystem::path> get(GitRepo& repo, const ObjectId& tree, bool* made = nullptr);
  std::filesystem::path path_of(const ObjectId& tree) const { return dir_ / tree.hex(); }

 private:
  std::filesystem::path dir_;
  SandboxHost host_;
};

}  // namespace warden
