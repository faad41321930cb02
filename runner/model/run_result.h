// The runner's evidence, as the kernel receives and records it. A RunResult names the tree
// under test (git tree id and tree_sha256), the sandbox profile and its digest, the
// preflight's outcome, the toolchain's identity, and for every check every run's evidence:
// exit status, signal, timeout, duration, output digests with head and tail, blob digests of
// the captured bodies, parsed tests and the FAIL_TO_PASS / PASS_TO_PASS judgement.
//
// to_json() is canonical-JSON-ready (integers only). digest() covers everything;
// deterministic_digest() covers everything except durations, which are evidence of a
// machine's speed and never an input to a verdict. from_json() is strict.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/canonical_json.h"
#include "common/error.h"
#include "common/sha256.h"
#include "runner/model/preflight.h"

namespace warden {

inline constexpr const char* kRunResultFormat = "warden.run_result.v1";

// Check verdicts.
inline constexpr const char* kPassed = "passed";
inline constexpr const char* kFailed = "failed";
inline constexpr const char* kTimeout = "timeout";
inline constexpr const char* kFlakyOracle = "flaky_oracle";
inline constexpr const char* kError = "error";

struct OutputEvidence {
  Digest sha256;       // of the whole stream (up to the profile's max_bytes)
  uint64_t bytes = 0;
  bool truncated = false;  // the blob holds only the first `cap` bytes
  uint64_t cap = 0;        // the most of a stream the blob keeps (the profile's keep_bytes)
  std::string head, tail;  // display excerpts (valid UTF-8)
  Digest blob;             // SHA-256 of the captured body, its name in the blob store
};

// A declared artifact as one run left it: absent, or its size and digest (its bytes are in
// the blob store under that digest).
struct ArtifactEvidence {
  std::string path, type;
  bool present = false;
  uint64_t bytes = 0;
  std::optional<Digest> sha256;
};

struct TestCase {
  std::string id;      // JUnit: "classname::name" (or name); TAP: the description (or "#N")
  std::string status;  // passed | failed | skipped | error
  bool operator==(const TestCase&) const = default;
};

struct TestJudgement {
  struct Item {
    std::string id;
    std::string status;  // the test's status, or "missing" when the report lacks it
    bool operator==(const Item&) const = default;
  };
  std::vector<Item> fail_to_pass, pass_to_pass;
  bool ok = false;  // every listed test passed
  bool operator==(const TestJudgement&) const = default;
};

// One execution of a check.
struct CheckRun {
  int64_t exit_code = -1;  // bwrap's exit status (-1 when the sandbox was killed)
  int64_t signal = 0;      // the runner's kill signal, when it ended the run
  bool timed_out = false;
  bool output_limit_exceeded = false;
  // The run's cgroup limits it reached: "memory" (the OOM killer ended a process of it),
  // "pids" (a fork failed at the process limit). Written only when not empty.
  std::vector<std::string> limits_hit;
  int64_t duration_ms = 0;
  OutputEvidence out, err;
  std::string report = "none";  // none | parsed | missing | malformed | too_large
  std::string report_detail;
  std::optional<Digest> report_blob;  // the report file's bytes, when the check wrote one
  std::vector<TestCase> tests;  // sorted by id
  std::string outcome;          // this run's own verdict: passed | failed | timeout | error
  std::string error;            // for outcome "error": why the run could not happen
  std::vector<ArtifactEvidence> artifacts;  // the spec's declared artifacts, in its order
};

struct CheckResult {
  std::string name;
  std::vector<std::string> argv;
  Digest spec_sha256;
  std::string verdict;  // passed | failed | timeout | flaky_oracle | error
  std::vector<CheckRun> runs;
  std::vector<TestCase> tests;  // the agreed tests (the first run's when the runs disagree)
  std::optional<TestJudgement> judgement;
};

struct InvariantVerdict {
  bool proven = false;
  std::string check;  // the check that proves it (the first failing one when it is not proven)
  bool operator==(const InvariantVerdict&) const = default;
};

struct RunResult {
  std::string tree;                       // git tree id under test, 40 hex
  Digest tree_sha256;                     // tree_hash.h
  std::optional<std::string> base_tree;   // when a diff was applied
  std::optional<Digest> diff_sha256;
  std::string profile;                    // profile name
  Digest profile_sha256;
  PreflightReport preflight;
  Json toolchain = Json::object();        // toolchain.h
  Digest toolchain_sha256;
  // The environment the checks ran in (runner/environment); none: the host's /usr. In JSON
  // only when set, so results on the host keep their form.
  std::optional<Digest> environment;
  std::vector<CheckResult> checks;
  std::map<std::string, InvariantVerdict> invariants;
  int64_t duration_ms = 0;

  Json to_json() const;
  // to_json() without any duration_ms.
  Json deterministic_json() const;
  static Result<RunResult> from_json(const Json& json);
  Digest digest() const;
  Digest deterministic_digest() const;
  bool all_passed() const;
  // Every blob this result names (output bodies, report files, artifacts), sorted, unique:
  // the bytes an auditor needs to see why a check ended as it did.
  std::vector<Digest> named_blobs() const;
};

// The captured bytes a RunResult names, by their SHA-256: what a runner hands the kernel
// beside the result, for the ledger's blob store. Nothing in it is trusted: the kernel
// re-hashes every body before it stores it.
using RunBodies = std::map<Digest, std::string>;

}  // namespace warden
