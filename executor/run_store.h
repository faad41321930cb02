// Pipeline runs in the ledger. LedgerRunJournal records runs as they happen (records and
// blobs of a batch of steps go in one write transaction: one fsync per batch, all or nothing);
// load_run finds a run's records again, for resume after a pause or a crash and for audit.
// One process drives a given run at a time.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "common/error.h"
#include "executor/run_records.h"
#include "ledger/ledger.h"

namespace warden::executor {

struct JournalOptions {
  // 1: every step is durable before the next one runs. More: steps are batched into one
  // write transaction (after a crash, up to that many steps run again on resume).
  size_t flush_every_steps = 1;
  // Make pauses and ends durable at once (what a CLI that then exits needs). A process that
  // drives many short runs may group-commit across them instead, and flush() when it must.
  bool flush_at_pauses = true;
};

class LedgerRunJournal final : public RunJournal {
 public:
  explicit LedgerRunJournal(Ledger& ledger, JournalOptions options = {})
      : ledger_(ledger), options_(options) {
    if (options_.flush_every_steps == 0) options_.flush_every_steps = 1;
  }
  // Unflushed records are dropped, as a crash would drop them; the executor flushes at
  // every pause and end.
  ~LedgerRunJournal() override = default;

  Status append(std::string_view kind, const Json& payload, int64_t at) override;
  Result<std::string> put_blob(std::string_view bytes, std::string_view digest = {}) override;
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
  JournalOptions options_;
  size_t steps_ = 0;
  std::vector<Pending> records_;
  std::vector<std::string> blobs_;
  // Digests this journal has stored (or will with the next flush), so that a config shared
  // by many runs is written once. Bounded: forgetting one only costs a redundant put.
  std::unordered_set<std::string> known_blobs_;
  std::string buf_;
};

// The records of run `run_id`, found by walking back from the newest record to the run's
// pipeline_run record (so the cost is the records since the run started). Errc::not_found
// when the ledger holds no such run.
Result<StoredRun> load_run(const Ledger& ledger, std::string_view run_id);

}  // namespace warden::executor
