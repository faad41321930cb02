// Directories only Warden may reach: the runner's cache directory, its result store and its
// base checkouts. What they hold is trusted on reuse (a cached result is not re-run, a base
// checkout is the bottom of every workspace), so nobody but the uid Warden runs as may write
// into them, and the base checkouts may not even be reached by anyone else (their files are
// owned by the sandbox's uid, which other host processes may share).
//
// The rule, for a directory: it is a directory (not a symlink), owned by the effective uid,
// and not writable by its group or others. One that others could read or search (0755, or
// 0711 as older Warden versions made them) is repaired to 0700: nobody else could have
// written into it. One writable by others, or owned by another uid, is refused: what it
// holds may have been replaced, and only a person can say whether to trust it. The error
// names the path, its owner and mode, and the fix. For a file in such a directory (the
// result store's LMDB files): owned by the effective uid and not writable by group or others.
//
// Free functions over the file system; errors are Errc::io_error (the OS refused) or
// Errc::verification_failed (ownership or modes refused as above).
#pragma once

#include <filesystem>

#include "common/error.h"

namespace warden {

// Creates `dir` (0700; missing parents as create_directories makes them) or checks and
// repairs it as above.
Status ensure_private_dir(const std::filesystem::path& dir);

// The same for a directory that holds private ones (the cache directory itself), except that
// one others may read or search is left so: an older Warden sharing the directory keeps its
// own base/ in it, which that version's sandbox must pass through. What this one keeps there
// is private by its own directories' modes.
Status ensure_owned_dir(const std::filesystem::path& dir);

// Checks an existing file as above; a missing one is fine.
Status check_private_file(const std::filesystem::path& file);

}  // namespace warden
