// Pipeline runs in the ledger. LedgerRunJournal records a run as it happens (records and
// blobs of several steps go in one write transaction: one fsync per batch, all or nothing);
// load_run finds a run's records again, for resume after a pause or a crash and for audit.
// One process drives a given run at a time.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "executor/run_records.h"
#include "ledger/ledger.h"

namespace warden::executor {

class LedgerRunJournal final : public RunJournal {
 public:
  // With flush_every_steps = 1 every step is durable before the next one runs. Larger values
  // batch steps (after a crash, up to that many steps run again on resume). Pauses and ends
  // are always flushed at once.
  explicit LedgerRunJournal(Ledger& ledger, size_t flush_every_steps = 1)
      : ledger_(ledger), flush_every_(flush_every_steps == 0 ? 1 : flush_every_steps) {}
  // Unflushed records are dropped, as a crash would drop them; the executor flushes at
  // every pause and end.
  ~LedgerRunJournal() override = default;

  Status append(std::string_view kind, const Json& payload, int64_t at) override;
  Result<std::string> put_blob(std::string bytes) override;
  Status commit(bool now) override;
  // Writes everything pending in one transaction. On failure nothing is written and the
  // records stay pending.
  Status flush();
  size_t pending_records() const { return records_.size(); }

 private:
  struct Pending {
    std::string kind;
    std::string payload;  // canonical JSON
    int64_t ts = 0;
  };
  Ledger& ledger_;
  size_t flush_every_;
  size_t steps_ = 0;
  std::vector<Pending> records_;
  std::vector<std::string> blobs_;
  std::string buf_;
};

// The records of run `run_id`, found by walking back from the newest record to the run's
// pipeline_run record (so the cost is the records since the run started). Errc::not_found
// when the ledger holds no such run.
Result<StoredRun> load_run(const Ledger& ledger, std::string_view run_id);

}  // namespace warden::executor
