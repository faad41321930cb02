// Base checkouts, one per git tree id, materialized once (objects read with libgit2, see
// write_full_tree) and shared by every run on that base: the bottom layer of each overlay
// workspace. They are trusted on reuse, so they are kept where only Warden can reach them
// and sealed, and an entry made by an earlier process is verified before it is used.
//
// Layout, under `dir` (<cache>/checkouts, a private directory: private_dir.h, 0700, Warden's
// uid; older versions kept unsealed checkouts in <cache>/base, which this never reads):
//   <tree>/           0700, Warden's uid
//     checkout/       the files, owned by the sandbox's host uid (the sandboxed user owns
//                     the files it sees through the overlay and may change them there)
//     seal            0600, Warden's uid: the tree id and a stat snapshot of checkout/
//                     (stat_snapshot.h: every entry's path, type, mode, owner, size, inode,
//                     mtime and ctime)
// Nobody but Warden can reach checkout/: the sandbox's child opens it while still privileged
// and hands it to overlayfs as a descriptor (sandbox_process.h), so other processes running
// as the sandbox's uid can neither write nor read an entry. An entry is written into a private
// temporary sibling (checkout, then its seal) and renamed into place whole, so a directory
// named by a tree id always holds a sealed checkout.
//
// Verification: an entry this process made or verified is used as it is; one made before is
// re-walked and its snapshot compared with its seal (and its ownership and modes checked).
// Any difference, a missing seal (an entry left half-made), or an entry
// that is not a private directory discards the entry (renamed aside, then removed) and
// rebuilds it; get() says so (Got::discarded), for the caller to record. A snapshot matches
// only an untouched tree: writing a file, replacing it, or resetting its times moves ctime.
//
// Ownership: BaseCheckouts owns its directory path, host identity and the set of trees it has
// made or verified; the checkouts on disk outlive it. get() borrows `repo` for the call and
// returns a path the caller reads but must not write. Threads and processes: get() is safe
// from several threads at once (each with its own GitRepo; the set is locked) and several
// processes may share one directory: entries are made under random temporary names, and if
// two make the same checkout, the first rename wins and the other's copy is discarded.
// Errors: a "workspace_error" Refusal is a filesystem failure in `dir` or a directory that
// fails private_dir.h's rule; refusals from reading the tree (repository_error) pass
// through. Either way no directory named by the tree id is left behind by this call.
// Durability: nothing is fsynced; the name promises completeness against crashes of this
// process, not against a power loss (an entry torn by one fails its seal and is rebuilt).
#pragma once

#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "runner/workspace/git_repo.h"
#include "runner/sandbox/sandbox.h"

namespace warden {

class BaseCheckouts {
 public:
  BaseCheckouts(std::filesystem::path dir, SandboxHost host);

  struct Got {
    std::filesystem::path path;  // the checkout directory
    bool made = false;           // made by this call
    // Set when an entry made earlier was discarded: why (it failed its verification).
    std::optional<std::string> discarded;
  };
  // The checkout of `tree`: the verified entry, or one made now.
  Checked<Got> get(GitRepo& repo, const ObjectId& tree);

  std::filesystem::path entry_of(const ObjectId& tree) const { return dir_ / tree.hex(); }
  std::filesystem::path path_of(const ObjectId& tree) const { return entry_of(tree) / "checkout"; }

 private:
  struct Trusted {
    std::mutex mu;
    std::set<std::string> trees;  // guarded by mu
  };
  // Why the entry of `tree` cannot be used as it is; nullopt when it verifies.
  std::optional<std::string> verify(const ObjectId& tree) const;
  Checked<void> make(GitRepo& repo, const ObjectId& tree, bool& made);
  bool trusted(const ObjectId& tree) const;
  void trust(const ObjectId& tree);

  std::filesystem::path dir_;
  SandboxHost host_;
  std::unique_ptr<Trusted> trusted_;
};

}  // namespace warden
