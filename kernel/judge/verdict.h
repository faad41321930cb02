// What decide() answers and what executors learn from. Reason codes are stable strings
// (the ledger and executors depend on them); several can apply at once, and all are given.
#pragma once

#include <string>
#include <vector>

#include "common/canonical_json.h"
#include "common/error.h"
#include "common/sha256.h"

namespace warden::kernel {

namespace reason {
inline constexpr std::string_view step_not_in_plan = "step_not_in_plan";
inline constexpr std::string_view step_already_completed = "step_already_completed";
inline constexpr std::string_view dependency_not_satisfied = "dependency_not_satisfied";  // ":<step id>"
inline constexpr std::string_view malformed_diff = "malformed_diff";
inline constexpr std::string_view hash_mismatch = "hash_mismatch";
inline constexpr std::string_view content_mismatch = "content_mismatch";
inline constexpr std::string_view path_not_allowed = "path_not_allowed";
inline constexpr std::string_view protected_path = "protected_path";
inline constexpr std::string_view approval_required = "approval_required";
inline constexpr std::string_view diff_too_large = "diff_too_large";
inline constexpr std::string_view required_checks_failed = "required_checks_failed";
// A test that passed on the step's base is missing or not passing on the proposal.
inline constexpr std::string_view pass_to_pass_failed = "pass_to_pass_failed";
// A proposal changes, removes or redefines a test the base ran, or something such a test uses
// (a helper, a fixture, setUp, an import, a name it reads), in an existing test file.
inline constexpr std::string_view test_modified = "test_modified";
// A test the proposal adds (absent from the base's run) does not pass.
inline constexpr std::string_view new_test_failed = "new_test_failed";
// Tests the executor never sees (held_out.h) did not pass on the proposal; only how many is said.
inline constexpr std::string_view held_out_failed = "held_out_failed";
// A check that reports tests ran none: it proves nothing, so it never passes.
inline constexpr std::string_view no_tests_ran = "no_tests_ran";
inline constexpr std::string_view invariant_not_proven = "invariant_not_proven";  // ":<name>"
inline constexpr std::string_view dangerous_operation_detected = "dangerous_operation_detected";
inline constexpr std::string_view sandbox_unavailable = "sandbox_unavailable";
// A .gitattributes entry that makes a checkout's bytes differ from the tested (committed) ones.
inline constexpr std::string_view checkout_transform = "checkout_transform";
// The executor gave nothing to judge: it ran out of its time (or was stopped), or it did not
// start, crashed, exited non-zero or said nothing (its Refusal, executor/proposer.h).
inline constexpr std::string_view executor_timeout = "executor_timeout";
inline constexpr std::string_view executor_failed = "executor_failed";
}  // namespace reason

// One failing reason: its code ("invariant_not_proven:no_import_cycles") and a sentence.
struct Reason {
  std::string code;
  std::string detail;
  bool operator==(const Reason&) const = default;
};

struct Verdict {
  bool accepted = false;
  std::vector<Reason> reasons;  // empty when accepted; sorted by code, no duplicates
  std::vector<std::string> reason_codes() const;
  Json to_json() const;
  static Result<Verdict> from_json(const Json& json);
  bool operator==(const Verdict&) const = default;
};

// What the kernel tells the executor (and records) after a refusal.
struct RefusalReport {
  std::string run_id;
  Digest seed_sha256;  // the committed plan's digest
  std::string step_id;
  int64_t attempt = 0;  // 1-based proposal number within the step
  std::vector<Reason> reasons;
  std::vector<Digest> evidence;  // ledger record hashes (proposal, run result, decision)
  std::vector<std::string> policy_suggestions;  // one hint per reason, for people and agents
  Json to_json() const;
  static Result<RefusalReport> from_json(const Json& json);
};

// A hint for a reason code, e.g. "touch only the step's targets: src/a.py".
std::string suggestion_for(const Reason& reason);

}  // namespace warden::kernel
