// What names an environment on the command line, shared by `warden env` and `warden sandbox
// exec`: the store it is in (--env-store, default EnvironmentStore::default_dir()) and its
// digest, written in full (sha256:<hex>) or as a hex prefix of at least 8 characters that
// `warden env list` shows.
//
// Plain functions. Errors: the store's own (io_error, verification_failed when the sandbox's
// uid could not reach it), invalid_argument for a malformed or ambiguous digest, not_found
// for one the store does not hold.
#pragma once

#include <sys/types.h>

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "runner/environment/environment_store.h"
#include "runner/sandbox/sandbox.h"

namespace warden::cli {

inline constexpr size_t kMinDigestPrefix = 8;

// The help of --environment and --env-store where a run's checks take them (build, propose,
// run): one text for each.
inline constexpr std::string_view kEnvironmentFlagHelp =
    "Run the checks in this environment instead of on the host's /usr: a digest (sha256:<64 hex>; see "
    "warden env list) or a recipe file, built first when the store does not hold it (docs/environments.md)";
inline constexpr std::string_view kEnvStoreFlagHelp =
    "Where environments are kept (default $WARDEN_ENV_STORE, else /var/cache/warden-environments as root, else "
    "~/.cache/warden/environments)";

// The store at `dir` ("" : the default); `sandbox_uid` as EnvironmentStore::open takes it.
Result<EnvironmentStore> open_env_store(const std::string& dir, std::optional<uid_t> sandbox_uid = std::nullopt);
// The stored environment `text` names, without recording a use (list() does not touch it).
Result<Environment> find_stored_environment(const EnvironmentStore& store, std::string_view text);
// The environment `text` names in the store at `dir`, for a run on it by `host`'s sandbox: the
// store must be reachable by the sandbox's uid, the environment is held against removal for
// as long as `use` lives, and the tree is scanned again against its digest
// (EnvironmentStore::open_verified: corrupt when it changed since it was stored).
struct EnvironmentForRun {
  Environment environment;
  StoreHold use;
};
Result<EnvironmentForRun> open_environment_for_run(const std::string& dir, std::string_view text, const SandboxHost& host);
// --env NAME=VALUE flags as a map; invalid_argument for a word without '=' or a name given
// twice.
Result<std::map<std::string, std::string>> parse_env_assignments(const std::vector<std::string>& words);

}  // namespace warden::cli
