// One attempt at a build step — one proposal — as values, stage by stage. Each stage of the
// step pipeline (step_stages.h) takes what the earlier stages produced and returns its own
// part; nothing else carries an attempt between them.
//   Proposed   what the executor proposed, the Diff parsed once, and its proposal record
//   Tested     the tree under test and the runner's result (absent when it never ran)
//   BaseRun    the step's base, tested once per step: which tests must keep passing
//   Decided    decide()'s verdict and its decision record (and the refusal, when refused)
//   Committed  the git commit on the plan's branch and its commit record
#pragma once

#include <cstdint>
#include <optional>

#include "diff/diff.h"
#include "kernel/judge/decide.h"
#include "kernel/judge/verdict.h"
#include "ledger/ledger.h"
#include "runner/workspace/workspace.h"
#include "runner/model/run_result.h"

namespace warden::kernel {

struct Proposed {
  int64_t number = 0;         // 1-based within the step
  ProposalEvidence evidence;  // what decide() judges: the diff as received and its pre-images
  std::optional<Diff> diff;   // the evidence's diff, parsed; none when it is not a Diff
  Appended record;            // the proposal record
};

// The checks that report tests, as they ran on the tree a step builds on: what decide()
// holds the step's proposals to (PASS_TO_PASS). `seq` is the record holding the run: a
// base_run record, or the run_result record of the accepted run that made the tree.
struct BaseRun {
  ObjectId tree;
  RunResult run;
  uint64_t seq = 0;
};

// The base's tests on the proposal without the oracle files it adds (oracle_run.h).
struct OracleRun {
  RunResult run;
  uint64_t seq = 0;  // its oracle_run record
};

// A held-out run (held_out.h): what may be known of it before the reveal.
struct HeldOutRun {
  bool passed = false;  // every held-out test passed (held_out_failures() of the sealed result is 0)
  uint64_t seq = 0;    // its held_out_run record
};

struct Tested {
  AppliedDiff applied;  // the diff on the branch tip: the tree under test
  RunResult run;
  Appended record;      // the run_result record
  std::optional<OracleRun> oracle;  // when the proposal adds tests or hooks and the base has tests
  std::optional<HeldOutRun> held_out = std::nullopt;  // when the plan holds held-out checks
};

struct Decided {
  Verdict verdict;
  Appended record;  // the decision record
};

struct Committed {
  ObjectId commit;
  Appended record;  // the commit record
};

struct Attempt {
  Proposed proposed;
  std::optional<Tested> tested;
  std::optional<Decided> decided;
  std::optional<Committed> committed;
  int64_t number() const { return proposed.number; }
};

}  // namespace warden::kernel
