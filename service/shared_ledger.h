// The server's one handle on its ledger, shared by every service. LMDB allows one open
// environment per process, so the Ledger and Kernel services read through this, the fleet's
// recorder appends its fleet_event records through it (service/fleet_recorder.h), and the
// runs the server starts (child processes) write with handles of their own.
//
// Opened for writing when it can be, read-only otherwise (a ledger on read-only media is
// still served; only the fleet's records cannot be kept then: append() says so). LMDB
// serializes this process's appends with its runs'. Thread-safe: a Ledger is for one thread
// at a time, so every use goes through mu_; a snapshot taken here is then used by its
// caller's thread alone (the environment is opened MDB_NOTLS).
#pragma once

#include <algorithm>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <vector>
#include <utility>

#include "common/clock.h"
#include "common/error.h"
#include "ledger/ledger.h"
#include "ledger/note.h"

namespace warden::service {

class SharedLedger {
 public:
  // not_found (with the command that creates one) when `dir` holds no ledger.
  static Result<std::unique_ptr<SharedLedger>> open(const std::filesystem::path& dir) {
    auto clock = std::make_unique<SystemClock>();
    bool writable = true;
    auto ledger = Ledger::open(dir, Ledger::Mode::read_write, *clock);
    if (!ledger && ledger.error().code == Errc::io_error) {
      writable = false;
      ledger = Ledger::open(dir, Ledger::Mode::read_only, *clock);
    }
    if (!ledger) {
      if (ledger.error().code == Errc::not_found) {
        return fail(Errc::not_found, "no ledger at " + dir.string() + ": create one with `warden ledger init " +
                                         dir.string() + "`, or point --ledger at one");
      }
      return std::unexpected(ledger.error());
    }
    return std::unique_ptr<SharedLedger>(new SharedLedger(std::move(clock), std::move(*ledger), writable));
  }

  bool writable() const { return writable_; }
  // Appends `entries` in one transaction (all or none). failed_precondition when the ledger
  // could only be opened read-only.
  Result<std::vector<Appended>> append(std::span<const AppendEntry> entries) {
    if (!writable_) return fail(Errc::failed_precondition, "the ledger " + ledger_.dir().string() + " is read-only here");
    std::lock_guard lock(mu_);
    return ledger_.append_batch(entries);
  }
  // Signs the current tree head with `signer` and stores the checkpoint.
  Status checkpoint(const NoteSigner& signer) {
    if (!writable_) return fail(Errc::failed_precondition, "the ledger " + ledger_.dir().string() + " is read-only here");
    std::lock_guard lock(mu_);
    auto cp = ledger_.checkpoint(signer);
    if (!cp) return std::unexpected(cp.error());
    return {};
  }
  Result<LedgerSnapshot> snapshot() {
    std::lock_guard lock(mu_);
    return ledger_.snapshot();
  }
  // Calls fn(const Ledger&) under the lock, for readers that take their own snapshots.
  template <typename Fn>
  auto with(Fn&& fn) {
    std::lock_guard lock(mu_);
    return std::forward<Fn>(fn)(std::as_const(ledger_));
  }
  // One run's records from one snapshot: visit(seq, record) for each record of `run_id` (its
  // top-level "run_id" or "run", ledger.h) with seq >= `from`, in seq order, until visit says
  // false. Returns the seq to read from next time, and whether the run has any record at
  // all. Errors are the ledger's, or the first one visit returns.
  struct RunRead {
    uint64_t next = 0;
    bool known = false;
  };
  using RunRecordVisitor = std::function<Result<bool>(uint64_t seq, const RecordView& record, LedgerSnapshot& snapshot)>;
  Result<RunRead> read_run(const std::string& run_id, uint64_t from, const RunRecordVisitor& visit) {
    auto snap = snapshot();
    if (!snap) return std::unexpected(snap.error());
    auto seqs = snap->run_records(run_id);
    if (!seqs) return std::unexpected(seqs.error());
    RunRead read{from, !seqs->empty()};
    for (auto it = std::lower_bound(seqs->begin(), seqs->end(), from); it != seqs->end(); ++it) {
      auto record = snap->record_view(*it);
      if (!record) return std::unexpected(record.error());
      read.next = *it + 1;
      auto go_on = visit(*it, *record, *snap);
      if (!go_on) return std::unexpected(go_on.error());
      if (!*go_on) break;
    }
    return read;
  }

  // Fixed when the ledger was created: safe to read without the lock.
  const std::filesystem::path& dir() const { return ledger_.dir(); }
  const std::string& origin() const { return ledger_.origin(); }
  const std::string& verifier_key() const { return ledger_.verifier_key(); }

 private:
  SharedLedger(std::unique_ptr<SystemClock> clock, Ledger ledger, bool writable)
      : clock_(std::move(clock)), writable_(writable), ledger_(std::move(ledger)) {}

  std::unique_ptr<SystemClock> clock_;  // the ledger keeps a reference; it stamps the fleet's records
  const bool writable_;
  std::mutex mu_;
  Ledger ledger_;  // guarded by mu_ (its fixed fields excepted)
};

}  // namespace warden::service
