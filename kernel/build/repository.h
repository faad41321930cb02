// The repository a build works on: an existing git repository, or — when the directory is
// not one yet and a seed is given — a new one whose first commit holds the seed's files (on
// branch main, HEAD pointing at it, the files checked out), or no file at all for a plan built
// without its blueprint. The first commit is deterministic: same seed, same clock, same
// commit id.
//
// The returned Workspace is the caller's (one thread at a time, see runner/workspace/workspace.h); the
// clock is borrowed for the call. Errors: not_found (no repository and no seed, or no seed
// directory), already_exists (a non-empty directory that is not a repository: Warden will not
// write into it), invalid_argument (a symlink in the seed, and every git refusal, I/O
// failures included). Seeding is not atomic: a failure after the repository was initialized
// leaves an empty repository behind, which a later call opens as is — remove `dir` first.
#pragma once

#include <filesystem>
#include <optional>

#include "common/clock.h"
#include "common/error.h"
#include "runner/workspace/workspace.h"

namespace warden::kernel {

struct OpenedRepository {
  Workspace workspace;
  bool seeded = false;  // created here from the seed
};

// What a new repository's first commit holds.
struct RepositorySeed {
  std::optional<std::filesystem::path> dir;  // the files of this directory; none: no file
};

// `seed` none: the repository must exist.
Result<OpenedRepository> open_or_seed_repository(const std::filesystem::path& dir, const std::optional<RepositorySeed>& seed,
                                                 Clock& clock);

}  // namespace warden::kernel
