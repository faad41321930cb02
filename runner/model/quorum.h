// What a quorum of remote runners is and what each runner signs: the values the policy, the
// judge and the ledger's records name. The runner that signs is tools' `warden runner`; the
// kernel's check of a result against its request is runner/check/remote_run.h.
//
// A result is signed by the runner's enrolled Ed25519 key over
//   "warden-runner-result-v1\n" agent_id "\n" task_id "\n" nonce "\n" deterministic digest
// where the nonce is fresh per claim (the server's), so a signature over one task's result
// never stands for another task's or another claim's. The attestation is recorded with the
// result, so an auditor checks it offline against the key the runner enrolled with.
//
// Plain values; the functions are thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/canonical_json.h"
#include "common/error.h"
#include "common/sha256.h"

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

// What an enrolling runner signs over the server's challenge (proto/fleet.proto, EnrolProof):
//   "warden-runner-enrol-v1\n" agent_id "\n" identity "\n" nonce
std::string enrol_message(std::string_view agent_id, std::string_view identity, std::string_view nonce);

std::string attestation_message(std::string_view agent_id, std::string_view task_id, std::string_view nonce,
                                 const Digest& result_digest);
// verification_failed unless `a.signature` is `a.key`'s over the message for `result_digest`
// (RunResult::deterministic_digest()).
Status verify_attestation(const ResultAttestation& a, const Digest& result_digest);

}  // namespace warden
