// The repository a build works on: an existing git repository, or — when the directory is
// not one yet and the blueprint names a seed — a new one whose first commit holds the seed's
// files (on branch main, HEAD pointing at it, the files checked out). The first commit is
// deterministic: same seed, same clock, same commit id.
#pragma once

#include <filesystem>
#include <optional>

#include "common/clock.h"
#include "common/error.h"
#include "runner/workspace.h"

namespace warden::kernel {

struct OpenedRepository {
  Workspace workspace;
  bool seeded = false;  // created here from the seed
};

Result<OpenedRepository> open_or_seed_repository(const std::filesystem::path& dir,
                                                 const std::optional<std::filesystem::path>& seed, Clock& clock);

}  // namespace warden::kernel
