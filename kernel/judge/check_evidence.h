// What a person (and a machine) needs to see why a check did not pass: the tests that failed,
// the tail of the check's output, and the digests of the full output and report in the
// ledger's blob store (`warden ledger blob get DIGEST`). Read from a RunResult; plain values.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/canonical_json.h"
#include "common/sha256.h"
#include "runner/model/run_result.h"

namespace warden::kernel {

struct CheckEvidence {
  std::string check;
  std::string verdict;
  int64_t exit_code = -1;                  // the first run's
  std::vector<TestCase> failing_tests;     // failed or error, in id order
  std::string stdout_tail, stderr_tail;    // the end of the first run's output, as recorded
  Digest stdout_blob, stderr_blob;         // its captured bodies
  std::optional<Digest> report_blob;       // its test report file, when it wrote one
  std::string report_detail;               // why a report was not read, or what was odd about it

  Json to_json() const;
};

// Every check of `run` that did not pass or has a failing test, in the run's order.
std::vector<CheckEvidence> checks_not_passing(const RunResult& run);

// For people: the check, its verdict and exit status, its failing tests, and the last lines of
// its output with the command that prints all of it from `ledger`.
std::string describe(const CheckEvidence& evidence, std::string_view ledger);

}  // namespace warden::kernel
