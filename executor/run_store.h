// Pipeline runs in the ledger: load_run finds a run's records again, for resume after a pause
// or a crash and for audit. (kernel::LedgerWriter records them as they happen.)
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "common/error.h"
#include "executor/run_records.h"
#include "ledger/ledger.h"

namespace warden::executor {

// The records of run `run_id`, found by walking back from the newest record to the run's
// pipeline_run record (so the cost is the records since the run started). Errc::not_found
// when the ledger holds no such run.
Result<StoredRun> load_run(const Ledger& ledger, std::string_view run_id);

}  // namespace warden::executor
