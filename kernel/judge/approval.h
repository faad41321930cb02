// An approval: a person's signed leave for one proposal to change named base tests. Some real
// changes rewrite what a test asserts on purpose (a spec change); the structural comparison
// refuses them as test_modified, naming each test, and a person the policy names as an
// approver may admit exactly those tests for exactly that proposal:
//   {"format": "warden.approval/v1", "approver": "alice",
//    "diff_sha256": "sha256:<the proposal's Diff digest, as the refusal names it>",
//    "tests": ["tests/test_ops.py::OpsTest.test_eq", ...],   // as test_modified names them
//    "signature": "<base64 of the Ed25519 signature>"}
// The signature is over the canonical JSON (RFC 8785) of the document without "signature",
// made with the approver's note signer key (`warden key generate`); the policy's "approvers"
// list holds the verifier keys. An approval travels in the plan step it is for (BuildStep::
// approvals), so the ledger holds it, in the committed plan, before any decision, and
// decide() and replay verify it from there.
//
// Plain values and pure functions; safe from any thread. from_json() and sign() return
// invalid_argument naming the field.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "common/canonical_json.h"
#include "common/error.h"
#include "common/sha256.h"
#include "common/note_key.h"

namespace warden::kernel {

inline constexpr const char* kApprovalFormat = "warden.approval/v1";

struct Approval {
  std::string approver;  // the verifier key's name
  Digest diff_sha256;
  std::vector<std::string> tests;  // "path::unit", sorted, no duplicates
  std::string signature;           // base64

  Json body() const;  // the signed document: every field but the signature
  Json to_json() const;
  static Result<Approval> from_json(const Json& json);
  static Result<Approval> sign(const NoteSigner& signer, const Digest& diff_sha256, std::vector<std::string> tests);
};

// What a step's approvals admit for the diff `diff_sha256`: the tests of every approval that
// parses, names this diff and is signed by the key `approvers` (verifier keys) gives its
// approver; and, for every other approval, why it admits nothing.
struct AdmittedTests {
  std::set<std::string> tests;        // "path::unit"
  std::vector<std::string> ignored;   // "the approval by bob: not signed by a key the policy names"
};
AdmittedTests admitted_tests(const std::vector<Json>& approvals, const Digest& diff_sha256,
                             const std::vector<std::string>& approvers);

}  // namespace warden::kernel
