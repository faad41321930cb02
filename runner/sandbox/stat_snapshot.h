// A digest of a directory tree's metadata as the file system keeps it: for every entry
// (the directory itself included), its path relative to the root, type, mode, uid, gid,
// size, inode, mtime and ctime in nanoseconds, in sorted path order. Content is not read:
// a writer cannot change a file's bytes, or put another file in its place, without moving
// its ctime (or inode), and nobody but the kernel sets ctime. This is the cheap re-check of a
// sealed base checkout (base_checkout.h); the same tree, untouched, gives the same digest.
//
// Symlinks are recorded, never followed; the walk holds one descriptor per directory level.
// A pure reader of the file system: safe from any thread. An error names the entry and errno.
#pragma once

#include <cstdint>

#include "common/error.h"
#include "common/sha256.h"

namespace warden {

struct StatSnapshot {
  Digest sha256;
  uint64_t entries = 0;
};

// Walks the tree below the open directory `dirfd` (which it does not close).
Result<StatSnapshot> stat_snapshot(int dirfd);

}  // namespace warden
