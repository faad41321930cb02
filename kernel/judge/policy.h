// A policy: what the kernel requires of every proposal beyond the plan itself. Policies are
// JSON (policies/<name>.json, embedded in the binary; or any file), format "warden.policy/v1":
//   {"format": "warden.policy/v1", "name": "python", "language": "python",
//    "sandbox_profile": "default",
//    "environment": "sha256:...",             // checks run in this environment (runner/environment)
//    "environment_recipe": {...},             // what built it, for replay to build it again
//    "checks": [CheckSpec...],                 // run on every proposal, e.g. the test suite
//    "required_checks": ["tests"],            // check names that must pass
//    "allow_paths": ["**"], "deny_paths": ["**/*.pem"],          // globs (glob.h)
//    "protected_paths": [".github/**", ".warden/**"], // only a step targeting them may touch them
//    "approval_paths": ["setup.py"],          // a change here waits for a human (refused as approval_required)
//    "oracle": {"paths": [...], "hooks": [...], "sections": [...]},  // the tests' own files (oracle.h);
//                                             // each list optional, absent: the built-in defaults
//    "max_diff_bytes": 1048576, "max_files": 200, "exact_content": false,
//    "runner_quorum": {"k": 2, "n": 3},       // checks on remote runners: k of n identities agree
//    "dangerous_operations": true,            // the kernel's scan of what a change introduces (dangerous_ops.h):
//                                             // its safety rules (process execution, eval, ...) ...
//    "dangerous_operation_rules": ["unbounded_buffer"],  // ... and the lint rules named here
//                                             // (rule ids such as "c.sprintf", categories, or "lint")
//    "dangerous_operation_waivers": ["py.frame_inspection"],  // rule ids the scan skips, on the record
//    "approvers": ["alice+1234abcd+AQ..."],  // verifier keys whose approvals admit changed base tests
//    "invariants": {"no_import_cycles": {"program": "no_import_cycles.py", "args": ["--lang", "python"],
//                                         "description": "..."}}}
// Each invariant maps to a check program in policies/checks/ (embedded in the binary too), run
// in the sandbox as `python3 /warden/checks/<program> <args...>` with the workspace as cwd.
//
// A Policy is a plain value that owns its check programs' bytes (read once by load()); safe
// to share read-only. The builtin tables are static and immutable. Errors: parse() refuses
// malformed JSON with invalid_argument naming the field; load() adds not_found for an unknown
// name or a missing check program and file errors from read_file(); invariant_check() returns
// not_found for an invariant the policy does not define. Any of them means the policy or its
// name must be fixed; nothing is retried or cached.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/canonical_json.h"
#include "common/error.h"
#include "common/sha256.h"
#include "kernel/judge/oracle.h"
#include "runner/model/check_spec.h"
#include "runner/model/quorum.h"
#include "runner/model/sandbox_profile.h"

namespace warden::kernel {

inline constexpr std::string_view kPolicyFormat = "warden.policy/v1";
inline constexpr std::string_view kChecksMountDir = "/warden/checks";

struct InvariantProgram {
  std::string program;  // file name in policies/checks/
  std::vector<std::string> args;
  std::string description;
  // Checks whose passed test ids the program reads (CheckSpec::tests_from).
  std::vector<std::string> tests_from;
};

struct Policy {
  std::string name;
  std::string language;
  std::string description;
  std::string sandbox_profile = "default";
  // The environment checks run in (runner/environment): its digest; none, the host's /usr.
  // A run's result must name it, or the run is refused as an execution error.
  std::optional<Digest> environment;
  // The recipe the environment was built from, as EnvironmentRecipe::record() writes it
  // (inputs inline), kept as given so replay can rebuild it where the store lacks it; the
  // judge never reads it.
  Json environment_recipe;
  std::vector<CheckSpec> checks;
  std::vector<std::string> required_checks;
  std::vector<std::string> allow_paths{"**"};
  std::vector<std::string> deny_paths;
  std::vector<std::string> protected_paths;
  std::vector<std::string> approval_paths;
  OracleRules oracle;  // what judges a proposal and so may not be rewritten by it (oracle.h)
  uint64_t max_diff_bytes = 1 << 20;
  uint64_t max_files = 200;
  bool exact_content = false;
  bool dangerous_operations = true;
  // Lint rules the scan runs besides the safety rules: selectors of dangerous_ops.h, each
  // known (parse() refuses an unknown one, and any with dangerous_operations false).
  std::vector<std::string> dangerous_operation_rules;
  // Rule ids of the scan this policy turns off, e.g. "py.frame_inspection" for a library that
  // walks its caller's frames by design. In to_json (and so in the recorded policy and its
  // digest) only when set.
  std::vector<std::string> dangerous_operation_waivers;
  // Verifier keys (note format, `warden key generate`) of the people whose approvals
  // (approval.h) may admit changes to base tests. In to_json only when set.
  std::vector<std::string> approvers;
  std::map<std::string, InvariantProgram> invariants;
  // Invariants that cannot hold part-way (every function has a test): generated plans prove
  // them at the final verification checkpoint instead of after every step.
  std::vector<std::string> checkpoint_invariants;
  // When the checks run on remote runners: how many of how many runner identities must
  // return the same result (runner/model/quorum.h). Absent: one runner's signed result.
  std::optional<RunnerQuorum> runner_quorum;
  // The check programs' bytes by file name, read when the policy was loaded; they are part of
  // the policy's digest, so a changed checker is a changed policy. load() takes every builtin
  // file of policies/checks/ (the programs share helper modules such as checklib.py), and
  // for a policy file, the files of the checks/ folder beside it on top.
  std::map<std::string, std::string> programs;

  bool knows_invariant(std::string_view name) const { return invariants.contains(std::string(name)); }
  // The CheckSpec that proves `invariant` in the sandbox (argv python3 /warden/checks/...,
  // proves = {invariant}).
  Result<CheckSpec> invariant_check(std::string_view invariant) const;
  // The sandbox profile with the check programs added as read-only files under /warden/checks.
  Result<SandboxProfile> sandbox_profile_with_programs() const;

  // The file names the policy runs from /warden/checks: its invariants' programs and any
  // check argument under /warden/checks/. Sorted, unique.
  std::vector<std::string> referenced_programs() const;

  // The JSON alone: `programs` stays empty (load() fills it).
  static Result<Policy> parse(std::string_view text, std::string_view what);
  // A builtin name ("python", "cpp") or a path to a JSON file (programs resolved next to it,
  // then among the builtin ones).
  static Result<Policy> load(std::string_view name_or_path);
  Json to_json() const;  // includes the programs' digests
  Digest digest() const;
};

// The builtin policy for a blueprint language: python -> "python", c / cpp / c++ -> "cpp";
// empty for any other language (the blueprint must name its policy).
std::string_view default_policy_for(std::string_view language);
std::vector<std::string_view> builtin_policy_names();
// The embedded policies/<name>.json byte for byte, or empty; and every embedded
// policies/checks/ file by name (builtin_policies.cc, generated at configure time).
std::string_view builtin_policy_text(std::string_view name);
const std::map<std::string, std::string_view>& builtin_check_programs();

}  // namespace warden::kernel
