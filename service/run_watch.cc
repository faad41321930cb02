#include "service/run_watch.h"

#include <utility>

#include "service/grpc_status.h"

namespace warden::service {
namespace {

grpc::Status gone() { return grpc::Status(grpc::StatusCode::CANCELLED, "the watcher went away"); }

// One round's events, read from one snapshot: up to and including the terminal event.
struct Round {
  std::vector<v1::RunEvent> events;
  bool ended = false;  // events ends with the run's terminal event
  SharedLedger::RunRead read;
};

Result<Round> read_round(SharedLedger& ledger, const std::string& run_id, uint64_t next, WatchedRun& run) {
  Round round;
  auto read = ledger.read_run(run_id, next, [&](uint64_t seq, const RecordView& record, LedgerSnapshot& snap) -> Result<bool> {
    auto shown = run.events(seq, record, snap);
    if (!shown) return std::unexpected(shown.error());
    for (v1::RunEvent& e : *shown) {
      round.ended = run.terminal(e);
      round.events.push_back(std::move(e));
      if (round.ended) break;
    }
    return !round.ended;
  });
  if (!read) return std::unexpected(read.error());
  round.read = *read;
  return round;
}

}  // namespace

grpc::Status watch_run(SharedLedger& ledger, const std::string& run_id, uint64_t from_seq, WatchedRun& run,
                       grpc::ServerContext& context, grpc::ServerWriter<v1::RunEvent>& writer) {
  if (run_id.empty()) return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "run_id: empty");
  uint64_t next = from_seq;
  bool known = false;
  for (;;) {
    auto growing = run.growing();
    if (!growing) return to_status(growing.error());
    auto round = read_round(ledger, run_id, next, run);
    if (!round) return to_status(round.error());
    next = round->read.next;
    known = known || round->read.known;
    // Plain writes: a sync Write with a buffer hint waits for a later write to flush it,
    // which never comes when it was the last event there is.
    for (const v1::RunEvent& e : round->events) {
      if (!writer.Write(e)) return gone();
    }
    if (round->ended) {
      run.ended();
      return grpc::Status::OK;
    }
    if (!*growing) return run.stopped(known);
    if (context.IsCancelled()) return gone();
    run.wait();
  }
}

}  // namespace warden::service
