// What crosses between the kernel and a runner on another machine (issue 16), and how what
// comes back is held to what was asked. The kernel's side is runner/channel_runner.h, the
// server's service/remote_runners.h, the runner's tools/warden_grpc/runner_command.cc.
//
// A remote runner is a LocalRunner on someone else's host: nothing it says is trusted beyond
// what it signed and what the kernel re-derives. check_remote_result() re-derives the tree
// hash from the kernel's own repository and compares every digest the request fixes (tree,
// base, diff, profile, each check's spec, every body's bytes); the verdicts themselves are
// the runner's word, which is what a quorum of runners (k of n, counted by owner) is for.
//
// A result is signed by the runner's enrolled Ed25519 key over
//   "warden-runner-result-v1\n" agent_id "\n" task_id "\n" nonce "\n" deterministic digest
// where the nonce is fresh per claim (the server's), so a signature over one task's result
// never stands for another task's or another claim's. The attestation is recorded with the
// result, so an auditor checks it offline against the key the runner enrolled with.
//
// Plain values; the functions are thread-safe.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/canonical_json.h"
#include "common/sha256.h"
#include "runner/check_spec.h"
#include "runner/git_repo.h"
#include "runner/run_result.h"
#include "runner/tree_hash.h"

namespace warden {

// k of n runners, each of another identity (the token that enrolled it), must return the
// same deterministic result (RunResult::deterministic_digest) before it counts: one
// compromised runner, or one identity's, then cannot pass a change. 1 <= k <= n <= 9 and
// 2k > n, so no two different results can both have k.
struct RunnerQuorum {
  uint32_t k = 1;
  uint32_t n = 1;

  bool single() const { return n == 1; }
  Json to_json() const { return {{"k", k}, {"n", n}}; }
  // invalid_argument naming the bound broken.
  static Result<RunnerQuorum> make(uint32_t k, uint32_t n);
  static Result<RunnerQuorum> from_json(const Json& json);
  static Result<RunnerQuorum> parse(std::string_view text);  // "K/N"
  bool operator==(const RunnerQuorum&) const = default;
};

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

  Json to_json() const;
  // invalid_argument naming the first bad field (ids, the diff, a check, the profile).
  static Result<RemoteRunRequest> from_json(const Json& json);
};

struct ResultAttestation {
  std::string agent_id;   // the runner that ran it
  std::string owner;      // the token identity that enrolled the runner
  std::string key;        // its Ed25519 public key, 64 hex, as pinned at enrolment
  std::string task_id;
  std::string nonce;      // 64 hex: the claim's
  std::string signature;  // 128 hex

  Json to_json() const;
  static Result<ResultAttestation> from_json(const Json& json);
};

std::string attestation_message(std::string_view agent_id, std::string_view task_id, std::string_view nonce,
                                 const Digest& result_digest);
// verification_failed unless `a.signature` is `a.key`'s over the message for `result_digest`
// (RunResult::deterministic_digest()).
Status verify_attestation(const ResultAttestation& a, const Digest& result_digest);

// verification_failed naming the first thing in `result` or `bodies` that is not what
// `request` asked for or what `repo` holds. `memo` caches tree hashes across calls.
Status check_remote_result(GitRepo& repo, const RemoteRunRequest& request, const RunResult& result,
                           const RunBodies& bodies, HashMemo& memo);

}  // namespace warden
