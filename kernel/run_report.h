// What a ledger says about one run, read from the typed records that name it (records.h):
// its latest status and error, steps done of total, attempts, the latest verdict and the
// last commit. `warden run status` prints it and `warden run cancel` waits on its status —
// from another process than the one driving the run, so from the ledger. (The process that
// ran the build has all of this in its BuildSummary.) Reads a snapshot: safe beside a
// writer, and the report is as of that snapshot.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "common/canonical_json.h"
#include "common/error.h"

namespace warden::kernel {

struct RunReport {
  std::string run_id;
  std::string status;  // the latest run_status record's
  std::string error_type, error;
  int64_t steps_total = 0, steps_completed = 0;
  int64_t attempts = 0, refused = 0;  // decisions recorded, and how many refused
  std::string branch, last_commit;    // from the last commit record
  Json last_verdict;                  // the latest decision's verdict; null before any
  uint64_t records = 0;               // records naming the run

  bool terminal() const;
  Json to_json() const;
};

// not_found when the ledger does not exist or no record names `run_id`; corrupt when a
// record of the run does not read back as its kind.
Result<RunReport> read_run_report(const std::filesystem::path& ledger_dir, const std::string& run_id);

}  // namespace warden::kernel
