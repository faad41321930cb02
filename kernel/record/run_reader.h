// Pipeline runs read back from a ledger: the ledger-backed executor::RunReader. A run's
// records are found through the ledger's per-run index (LedgerSnapshot::run_records), not by
// walking the log, so the cost is the run's own records whatever the ledger's size.
//
// Each load() reads one snapshot: a consistent view, which the returned StoredRun keeps alive
// (its blob reader reads from it) — so keep a StoredRun no longer than needed, and never past
// the Ledger. Borrows the Ledger, which must outlive the reader. One thread at a time.
#pragma once

#include <string_view>

#include "common/error.h"
#include "executor/run_records.h"
#include "ledger/ledger.h"

namespace warden::kernel {

class LedgerRunReader final : public executor::RunReader {
 public:
  explicit LedgerRunReader(const Ledger& ledger) : ledger_(ledger) {}
  // The records of pipeline run `run_id` from its (latest) pipeline_run record on.
  // Errc::not_found when the ledger holds no such run; Errc::corrupt when it has records but
  // no pipeline_run record, or a record that does not parse.
  Result<executor::StoredRun> load(std::string_view run_id) override;

 private:
  const Ledger& ledger_;
};

// LedgerRunReader(ledger).load(run_id).
Result<executor::StoredRun> load_run(const Ledger& ledger, std::string_view run_id);

}  // namespace warden::kernel
