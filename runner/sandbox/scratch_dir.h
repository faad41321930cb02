// Directories Warden makes for sandboxes (per-run overlay layers, a sandbox's generated
// files, preflight workspaces) and removes with everything in them, whatever a sandboxed
// program left there: read-only or 0000 directories (overlayfs makes one) are opened up
// first, and symlinks are removed, never followed.
//
// A ScratchDir owns its directory: the destructor (and move-assignment over it) removes the
// tree (first detaching the tmpfs create_tmpfs() mounted there); moving transfers the
// ownership. A process that dies never runs the destructor, so the
// directory's name carries its owner (<prefix>p<pid>.<start time>-XXXXXX, ProcessIdentity)
// and reclaim_orphaned_scratch() removes the ones whose owner is gone. It holds no lock; different ScratchDirs may be used
// from different threads. Removal is best effort and reports nothing: a tree that cannot be
// removed is left behind silently. An Error from create() or make_owned_dir() names the path
// and errno; nothing was left behind by create().
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <string_view>

#include "common/error.h"

namespace warden {

class ScratchDir {
 public:
  // mkdtemp(<parent>/<prefix>p<pid>.<start time>-XXXXXX) with `mode` (0711: the sandbox's
  // host uid may pass through it to the directories inside, but not list it).
  static Result<ScratchDir> create(const std::filesystem::path& parent, std::string_view prefix, unsigned mode = 0711);
  // create(), then a tmpfs of its own mounted on it (size=, nr_inodes=): what is written
  // below is bounded in bytes and inodes whatever the parent's file system holds. Needs
  // CAP_SYS_ADMIN (Warden as root); the mount is in the caller's mount namespace.
  static Result<ScratchDir> create_tmpfs(const std::filesystem::path& parent, std::string_view prefix, unsigned mode,
                                         uint64_t size_bytes, uint64_t inodes);
  ScratchDir(ScratchDir&& other) noexcept
      : path_(std::exchange(other.path_, {})), mounted_(std::exchange(other.mounted_, false)) {}
  ScratchDir& operator=(ScratchDir&& other) noexcept;
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  ~ScratchDir();

  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(std::string_view name) const { return path_ / name; }

 private:
  explicit ScratchDir(std::filesystem::path p) : path_(std::move(p)) {}
  void remove();
  std::filesystem::path path_;
  bool mounted_ = false;
};

// mkdir (mode exactly, whatever the umask) and chown to uid:gid when those differ from ours.
Status make_owned_dir(const std::filesystem::path& path, uid_t uid, gid_t gid, unsigned mode = 0755);
// Removes a tree, giving directories owner rwx first; symlinks are never followed, not even one
// swapped in for a directory while the tree is being removed (each entry is opened relative to
// its parent's descriptor). `path`'s parent directories are trusted.
void remove_tree(const std::filesystem::path& path);
// Removes the directories under `parent` named "warden-...p<pid>.<start time>-XXXXXX" by
// ScratchDir::create whose owning process is gone (detaching a tmpfs mounted on one first);
// returns how many. Directories of live
// processes, directories another uid owns, and every other name, are left alone.
size_t reclaim_orphaned_scratch(const std::filesystem::path& parent);

}  // namespace warden
