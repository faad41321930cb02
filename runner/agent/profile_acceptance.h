// The server picks each task's sandbox profile; a remote runner keeps its own secrets out of
// it: no network unless the runner was started with --allow-network, and no host path that
// is, holds or lies in the runner's state directory (its key) bound into the sandbox or read
// for the toolchain.
//
// A pure function of its arguments and the file system's paths; thread-safe.
#pragma once

#include <filesystem>

#include "common/error.h"
#include "runner/model/sandbox_profile.h"

namespace warden::agent {

// failed_precondition naming what the profile asks that the runner does not give.
Status acceptable_profile(const SandboxProfile& profile, const std::filesystem::path& state_dir, bool allow_network);

}  // namespace warden::agent
