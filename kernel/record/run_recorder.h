// RunRecorder: how a run's records and events reach the ledger. It stamps every record with
// the session clock, numbers events from the session's id source, sends each event to the
// session's listener after recording it, and buffers everything in the kernel's ledger
// writer, which names each record's seq and hash as it is added. Nothing is durable until
// the writer flushes (see ledger_writer.h; the build loop flushes before anything outside the ledger depends on it).
//
// The order of calls is the ledger's order and, with a logical clock, its timestamps: the
// build loop's bytes are golden, so callers keep their order of records, events and ids.
// Not thread-safe; one recorder per run, borrowing the writer, clock and ids it is given.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "common/clock.h"
#include "kernel/record/ledger_writer.h"
#include "kernel/record/run_lifecycle.h"

namespace warden::kernel {

class RunRecorder {
 public:
  RunRecorder(LedgerWriter& ledger, Clock& clock, IdSource& ids, std::function<void(const RunEvent&)> on_event,
              std::string run_id)
      : ledger_(ledger), clock_(clock), ids_(ids), on_event_(std::move(on_event)), run_id_(std::move(run_id)) {}

  const std::string& run_id() const { return run_id_; }
  int64_t now() { return clock_.now_ms(); }
  std::string next_id(std::string_view prefix) { return ids_.next_id(prefix); }
  Clock& clock() { return clock_; }
  LedgerWriter& ledger() { return ledger_; }

  // Buffers a typed record (records.h).
  template <typename R>
  Status record(const R& r) {
    return ledger_.append(R::kind, r.to_json(), now());
  }
  // Writes what is buffered and the record, and says where it landed: for a record that a
  // later one names.
  template <typename R>
  Result<Appended> record_now(const R& r) {
    return ledger_.record_now(R::kind, r.to_json(), now());
  }
  // Records an event, then tells the listener.
  void emit(RunEventType type, std::optional<int64_t> step_index, std::optional<std::string> tool, Json data);
  Status flush() { return ledger_.flush(); }

 private:
  LedgerWriter& ledger_;
  Clock& clock_;
  IdSource& ids_;
  std::function<void(const RunEvent&)> on_event_;
  std::string run_id_;
};

}  // namespace warden::kernel
