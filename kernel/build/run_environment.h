// Which environment a run's checks use (runner/environment), settled into its policy before
// anything is recorded: the policy's own, or one a blueprint or command names — a digest, or
// a recipe file built (or found built in the store) here. The policy then carries the digest
// and the recipe (policy.h), so the ledger's policy record says where every check ran and
// holds what replay needs to build it again.
//
// Errors: invalid_argument when a name is neither a digest nor a readable recipe, or when it
// names another environment than the policy pins; a recipe's build errors (mmdebstrap, a
// prepare command), with what failed.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <string_view>

#include "common/error.h"
#include "kernel/judge/policy.h"

namespace warden::kernel {

// `named`: "sha256:<hex>" or a recipe path, relative to `relative_to`; empty leaves the
// policy as it is. `progress` hears a build's steps.
Status settle_environment(Policy& policy, const std::string& named, const std::filesystem::path& relative_to,
                          const std::filesystem::path& env_store, const std::function<void(std::string_view)>& progress = {});

}  // namespace warden::kernel
