// What a remote runner keeps between starts, in its state directory: its Ed25519 key
// (runner.key, the runner's identity: a key others could read is refused, not used), its
// agent id (runner.id, made once from the host name unless given), its object store and its
// caches. The directory is private by runner/sandbox/private_dir.h's rule; one runner holds
// it at a time (runner.lock).
//
// Free functions over the file system. Errors: invalid_argument for a key or id that is not
// one (or a key others may read), already_exists when another runner holds the directory,
// verification_failed for a directory others may write, io_error when the OS refuses.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "common/ed25519.h"
#include "common/error.h"
#include "common/file.h"

namespace warden::agent {

struct RunnerIdentity {
  std::string agent_id;
  std::optional<Ed25519PrivateKey> key;
};

// $XDG_STATE_HOME/warden/runner, else ~/.local/state/warden/runner; empty without either.
std::string default_state_dir();

// Creates `dir` private (or checks and repairs it), then locks it for this process's life
// (held by the returned descriptor): two runners sharing a key and an id would take the
// agent from each other on every reconnect.
Result<UniqueFd> claim_state_dir(const std::filesystem::path& dir);

// The runner's identity from `dir`, made on first start: a new key, and `given_id` or an id
// from the host name and 32 random bits (so runners sharing a host name stay apart).
Result<RunnerIdentity> load_identity(const std::filesystem::path& dir, const std::string& given_id);

}  // namespace warden::agent
