// What crosses between the kernel and a runner on another machine, and how what comes back
// is held to what was asked. The kernel's side is runner/check/channel_runner.h, the server's
// service/remote_runners.h, the runner's runner/agent/. What a runner signs and what a quorum
// is: runner/model/quorum.h.
//
// A remote runner is a LocalRunner on someone else's host: nothing it says is trusted beyond
// what it signed and what the kernel re-derives. check_remote_result() re-derives the tree
// hash from the kernel's own repository and compares every digest the request fixes (tree,
// base, diff, profile, each check's spec, every body's bytes); the verdicts themselves are
// the runner's word, which is what a quorum of runners (k of n, counted by owner) is for.
//
// Plain values; the functions are thread-safe.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/canonical_json.h"
#include "common/sha256.h"
#include "runner/model/check_spec.h"
#include "runner/model/quorum.h"
#include "runner/workspace/git_repo.h"
#include "runner/model/run_result.h"
#include "runner/workspace/tree_hash.h"

namespace warden {

// The most object ids a runner asks for in one fetch (the server refuses more).
inline constexpr size_t kMaxFetchObjects = 4096;

// A RunRequest as it travels: the base tree, the tree under test (always given: the kernel
// built it), the Diff that made it (if any), the checks and the sandbox profile to run them in.
struct RemoteRunRequest {
  std::string base_tree;      // 40 hex
  std::string tree;           // 40 hex
  std::optional<Json> diff;   // Diff::to_json()
  std::vector<CheckSpec> checks;
  Json profile = Json::object();  // SandboxProfile::to_json()
  bool reuse = false;             // RunRequest::reuse
  bool host_independent = false;  // the toolchain leaves out the kernel release (golden runs)
  // The environment the checks run in (runner/environment), fetched from the server when the
  // runner's store lacks it; none: the runner's /usr. In JSON only when set.
  std::optional<Digest> environment;

  Json to_json() const;
  // invalid_argument naming the first bad field (ids, the diff, a check, the profile).
  static Result<RemoteRunRequest> from_json(const Json& json);
};

// verification_failed naming the first thing in `result` or `bodies` that is not what
// `request` asked for or what `repo` holds. `memo` caches tree hashes across calls.
Status check_remote_result(GitRepo& repo, const RemoteRunRequest& request, const RunResult& result,
                           const RunBodies& bodies, HashMemo& memo);

}  // namespace warden
