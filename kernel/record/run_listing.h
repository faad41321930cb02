// Every run a ledger holds, for `warden runs list`: kernel runs (`warden build`, `warden
// propose`) as their typed records say (run_report.h), and pipeline runs (`warden pipeline
// run`) rebuilt from their records by the executor's replay (executor/replay.h, read through
// run_reader.h). The pipelines a build runs for each of its steps are part of that build,
// not runs of their own: they are not listed.
//
// Each entry's status is one word:
//   kernel runs    completed, refused, failed, timeout, cancelled, interrupted (recorded ends);
//                  live (no end recorded and its process is running: `phase` is its latest
//                  recorded status), or interrupted (no end recorded, its process is gone:
//                  `warden run recover` records the end)
//   pipeline runs  completed, cancelled, failed (ended otherwise: `detail` says why),
//                  waiting (paused on an interrupt), unfinished (no end recorded; whether a
//                  process still drives it is not recorded anywhere)
// Reads one snapshot per run (safe beside writers); the list is in order of each run's first
// record. The cost is one pass over the ledger's records plus each run's own records.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "common/canonical_json.h"
#include "common/error.h"
#include "ledger/ledger.h"

namespace warden::kernel {

struct RunEntry {
  std::string run_id;
  std::string kind;    // build, propose, pipeline
  std::string status;  // see above
  std::string phase;   // a live kernel run's latest recorded status (planning, running, ...)
  std::string detail;  // why it failed or stopped, when the records say
  int64_t started_ms = 0;               // the timestamp of its first record
  int64_t steps_done = 0;               // accepted steps (kernel), executed steps (pipeline)
  std::optional<int64_t> steps_total;   // the committed plan's steps; none for a pipeline
  uint64_t first_seq = 0;

  Json to_json() const;
};

// not_found when there is no ledger at `ledger_dir`; corrupt when a run's records do not read
// back (the error names the run).
Result<std::vector<RunEntry>> list_runs(const std::filesystem::path& ledger_dir);
// The same over a ledger the caller has open (a process may open a ledger only once).
Result<std::vector<RunEntry>> list_runs(const Ledger& ledger);

// The entry of the one run `run_id`; not_found when the ledger holds no such run.
Result<RunEntry> find_run(const std::filesystem::path& ledger_dir, const std::string& run_id);
Result<RunEntry> find_run(const Ledger& ledger, const std::string& run_id);

}  // namespace warden::kernel
