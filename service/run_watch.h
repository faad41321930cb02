// One loop for the service's run streams (Kernel.WatchRun, Pipeline.Watch): a run's events
// from the ledger, history first (every event whose record has ledger_seq >= from_seq), then
// what the run records while the watcher waits, until the run's last event or until nothing
// more can come.
//
// The loop works in rounds. Each round asks the watched run whether more records may come
// (before it reads: whatever a process wrote before it was seen gone is then in the snapshot
// read after), reads the run's new records from one snapshot, turns them into events, and
// sends them once the snapshot is released (a slow watcher never holds a read transaction
// open). What differs between kinds of run (which records are events and in which
// vocabulary, what ends a stream, how to wait for more) is a WatchedRun's to say.
//
// Thread safety: one call per stream, on the gRPC thread serving it; a WatchedRun is used by
// that thread alone. The ledger is shared (service/shared_ledger.h).
#pragma once

#include <grpcpp/grpcpp.h>
#include <warden.grpc.pb.h>  // generated from proto/warden.proto

#include <cstdint>
#include <string>
#include <vector>

#include "common/error.h"
#include "ledger/ledger.h"
#include "service/shared_ledger.h"

namespace warden::service {

// What one kind of run shows on a watch. Every method but events() is asked once per round,
// in this order: growing(), events() for each new record, then terminal() for each event,
// and ended(), stopped() or wait().
class WatchedRun {
 public:
  virtual ~WatchedRun() = default;

  // Whether more of the run's records may still come (a process drives it). An error ends
  // the stream with it (to_status).
  virtual Result<bool> growing() = 0;
  // The events the run's record `record` (ledger_seq `seq`) shows, in order: none for a
  // record the stream does not show; several share the record's seq. An error ends the
  // stream with it.
  virtual Result<std::vector<v1::RunEvent>> events(uint64_t seq, const RecordView& record, LedgerSnapshot& snapshot) = 0;
  // Whether `event` is the run's last: nothing is read or sent after it, and the stream ends
  // OK once ended() returns.
  virtual bool terminal(const v1::RunEvent& event) const = 0;
  // After the terminal event was sent (e.g. waits for the run's process to exit).
  virtual void ended() {}
  // How the stream ends when a round found the run not growing and sent no terminal event:
  // `known` says whether the ledger holds any record of the run.
  virtual grpc::Status stopped(bool known) = 0;
  // Between rounds: until the run may have recorded more, at most a poll interval.
  virtual void wait() = 0;
};

// Streams `run`'s events (those of records with ledger_seq >= from_seq) to `writer` until
// the terminal event, or until stopped() says; CANCELLED as soon as the watcher goes away,
// INVALID_ARGUMENT for an empty run id. Blocks the calling thread for as long as the stream
// lives.
grpc::Status watch_run(SharedLedger& ledger, const std::string& run_id, uint64_t from_seq, WatchedRun& run,
                       grpc::ServerContext& context, grpc::ServerWriter<v1::RunEvent>& writer);

}  // namespace warden::service
