// The one writer of kernel and pipeline records to a ledger: the build loop's own records,
// the pipeline executor's (it is the executor's RunJournal) and the blobs they name (proposal
// evidence, the runner's output bodies) are buffered and written in one ledger transaction (one
// fsync) at each flush, blobs first, so a record never names a blob the ledger lacks.
//
// Naming. A record's place (its seq) and hash exist only once it is written: another process
// may append to the same ledger at any moment, so only the write transaction knows where a
// record lands. record_now() writes everything buffered plus the record and returns where it
// landed; a later record that names it (a decision naming its proposal, a refusal naming its
// decision) is then naming a durable fact. append() (the executor's path, events, status)
// names nothing and only buffers; its records take the next free places at the next write.
//
// The failure rule: nothing acknowledged is lost, and nothing unacknowledged is reported as
// written. A record (or blob) is acknowledged only when a flush() that covers it returns OK:
// it is then durable (LMDB commit with fsync). When a flush fails, nothing of its batch is
// written and the batch is dropped — reported failed to the caller, never retried behind its
// back (a batch the ledger refuses would otherwise fail every later flush, including the
// run's own end). Records still buffered when the writer is destroyed are dropped, as a
// crash would drop them.
//
// When it flushes: at every flush(); at commit(true) (a pause, an end) when
// JournalOptions::flush_at_pauses; at commit(false) (a step done) every flush_every_steps
// steps. The kernel flushes before anything outside the ledger (a git branch move, an
// executor's next attempt) depends on what it recorded, so a crash loses only a tail no one
// has acted on — never part of a decision.
//
// One writer per run; not thread-safe. It borrows the Ledger, which must outlive it; other
// writers (other processes, Ledger::append) may share the ledger, see Naming above.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "common/canonical_json.h"
#include "common/error.h"
#include "executor/run_records.h"
#include "ledger/ledger.h"

namespace warden::kernel {

struct JournalOptions {
  // Steps per flush when the executor completes a step (RunJournal::commit(false)). 1: every
  // step is durable before the next one runs (a CLI run). N: N steps per transaction (after
  // a crash, up to N steps run again on resume). 0: steps never flush by themselves; the
  // owner flushes at its own decision points (the build loop).
  size_t flush_every_steps = 0;
  // Make pauses and ends durable at once (what a CLI that then exits needs). A process that
  // drives many short runs may group-commit across them instead, and flush() when it must.
  bool flush_at_pauses = true;
};

class LedgerWriter final : public executor::RunJournal {
 public:
  explicit LedgerWriter(Ledger& ledger, JournalOptions options = {}) : ledger_(ledger), options_(options) {}
  LedgerWriter(const LedgerWriter&) = delete;
  LedgerWriter& operator=(const LedgerWriter&) = delete;
  ~LedgerWriter() override = default;  // drops what was never flushed

  // Writes everything buffered and then this record, in one transaction (one fsync), and
  // says where it landed. Errc::limit_exceeded when its canonical payload is over the
  // ledger's limit (nothing is written then); a failed write as flush().
  Result<Appended> record_now(std::string_view kind, const Json& payload, int64_t at);
  // Writes everything buffered in one transaction (one fsync); see the failure rule above.
  // OK acknowledges every record and blob added before the call.
  Status flush();

  // executor::RunJournal: a record buffered without a name (the size limit is checked here,
  // as in record()); a blob buffered and named by its digest; a step or pause completed.
  Status append(std::string_view kind, const Json& payload, int64_t at) override;
  Result<std::string> put_blob(std::string_view bytes, std::string_view digest = {}) override;
  Status commit(bool now) override;

  size_t pending_records() const { return records_.size(); }
  Ledger& ledger() { return ledger_; }

 private:
  struct Pending {
    std::string kind;
    std::string payload;  // canonical JSON
    int64_t ts = 0;
  };
  Status buffer(std::string_view kind, const Json& payload, int64_t at);
  // Writes the batch; the place of its last record, if it had records.
  Result<std::optional<Appended>> write_pending();
  void add_blob(std::string name, std::string_view bytes);

  Ledger& ledger_;
  JournalOptions options_;
  size_t steps_ = 0;  // commits since the last flush
  std::vector<Pending> records_;
  std::vector<std::string> blobs_;
  // Digests stored (or to be stored with the next flush), so that a config shared by many
  // runs is written once. Bounded: forgetting one only costs a redundant (idempotent) put.
  std::unordered_set<std::string> known_blobs_;
  std::string buf_;
};

}  // namespace warden::kernel
