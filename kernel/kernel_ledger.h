// The kernel's one writer to the ledger during a build: its own records, the pipeline
// executor's (it is the executor's RunJournal) and the runner's output bodies (it is the
// runner's BlobSink) are buffered and written in one transaction at each flush, blobs first.
// A record's sequence number and hash are known the moment it is added (the kernel names
// them in later records), computed exactly as the ledger will and checked again when the
// batch is written. The kernel flushes before anything outside the ledger (a git branch
// move, an executor's next attempt) depends on what it recorded, so a crash loses only a
// tail no one has acted on — never part of a decision.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "executor/run_records.h"
#include "ledger/ledger.h"
#include "runner/blob_sink.h"

namespace warden::kernel {

class KernelLedger final : public executor::RunJournal, public BlobSink {
 public:
  explicit KernelLedger(Ledger& ledger) : ledger_(ledger) {}

  // executor::RunJournal: buffered until the next flush.
  Status append(std::string_view kind, const Json& payload, int64_t at) override;
  Result<std::string> put_blob(std::string_view bytes, std::string_view digest = {}) override;
  Status commit(bool now) override;
  // BlobSink (the runner's output bodies).
  Result<Digest> put(std::string_view bytes) override;

  // Buffers a record and says where it will land.
  Result<Appended> record(std::string_view kind, const Json& payload, int64_t at);
  // Writes everything buffered in one transaction (one fsync).
  Status flush();

  Ledger& ledger() { return ledger_; }

 private:
  struct Pending {
    std::string kind, payload;
    int64_t ts = 0;
    Appended expected;
  };
  Status load_tip();

  Ledger& ledger_;
  std::optional<Appended> tip_;  // the last record, written or pending (seq = size - 1)
  bool empty_ = false;           // the ledger had no records when the tip was loaded
  std::vector<Pending> records_;
  std::vector<std::string> blobs_;
  std::unordered_set<std::string> known_blobs_;
};

}  // namespace warden::kernel
