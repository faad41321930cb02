// What a ledger says about one kernel run (a `warden build` or `warden propose`), read from
// the typed records that name it (records.h): its kind, when it started, its latest status
// and error, steps done of the committed plan's total, the step it is on, attempts, the
// latest verdict, the last commit and its events. `warden run status` prints it (and, with
// --follow, the events as they land), `warden run cancel` waits on its status and `warden
// runs list` lists it — all from another process than the one driving the run, so from the
// ledger. (The process that ran the build has all of this in its BuildSummary.)
//
// A report is as of one ledger snapshot: safe beside a writer, and exactly what has been
// made durable so far (the build loop flushes when a step starts, so a live run shows the
// step it is on).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "common/canonical_json.h"
#include "common/error.h"
#include "kernel/record/run_lifecycle.h"
#include "ledger/ledger.h"

namespace warden::kernel {

struct RunReport {
  std::string run_id;
  std::string kind;    // "build" (from a blueprint) or "propose" (warden propose's one-step plan)
  int64_t started_ms = 0;  // the timestamp of the run's first record
  std::string status;  // the latest run_status record's
  std::string error_type, error;
  int64_t steps_total = 0;      // the steps of the latest committed plan
  int64_t steps_completed = 0;  // commits recorded
  std::string current_step;     // the step of the latest step_started event
  // A merge-queue plan's latest round as its queue_updated event said it: {"round", "head",
  // "in_flight": [{"step_id", "attempt", "base_tree", "tree"}], "waiting": [...]}; null otherwise.
  Json queue;
  int64_t attempts = 0, refused = 0;  // decisions recorded, and how many refused
  std::string branch, last_commit;    // from the last commit record
  Json last_verdict;                  // the latest decision's verdict; null before any
  uint64_t records = 0;               // records naming the run
  std::vector<std::pair<uint64_t, RunEvent>> events;  // (seq, event), oldest first; not in to_json

  bool terminal() const;
  Json to_json() const;
};

// The report of kernel run `run_id` as of a snapshot of `ledger`. not_found when no kernel
// record names it — saying so, with the command to type, when it is a pipeline run; corrupt
// when a record of the run does not read back as its kind.
Result<RunReport> report_run(const Ledger& ledger, const std::string& run_id);

// report_run on the ledger at `ledger_dir`, opened read-only; not_found when there is no
// ledger there.
Result<RunReport> read_run_report(const std::filesystem::path& ledger_dir, const std::string& run_id);

}  // namespace warden::kernel
