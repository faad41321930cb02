// warden.v1.Executor: remote executors attach to runs started with executor `remote`
// (Attach, a stream both ways) or answer one proposal at a time (Propose). Both need the
// executor role; the caller's authenticated name is recorded with every proposal it makes.
//
// Propose answers the request the run waits on, then waits for the kernel's decision on it
// and returns the verdict as the ledger records it. A retried call with the same
// idempotency_key (and the same proposal) returns the first call's verdict and records
// nothing more; the same key with another proposal is refused. A call whose proposal never
// reached the run (its step not awaited yet) spends no key.
//
// Thread-safe: gRPC calls it from many threads; mu_ guards the idempotency table.
#pragma once

#include <warden.grpc.pb.h>  // generated from proto/warden.proto

#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "service/in_flight.h"
#include "service/remote_executors.h"
#include "service/run_manager.h"
#include "service/shared_ledger.h"
#include "service/stream_quota.h"
#include "service/tokens.h"

namespace warden::service {

class ExecutorService final : public v1::Executor::Service {
 public:
  // Borrows everything; all must outlive it.
  ExecutorService(RemoteExecutors& remote, SharedLedger& ledger, RunManager& runs, InFlight& in_flight,
                  const TokenTable& tokens, StreamQuota& streams);

  grpc::Status Attach(grpc::ServerContext* context,
                      grpc::ServerReaderWriter<v1::KernelMessage, v1::ExecutorMessage>* stream) override;
  grpc::Status Propose(grpc::ServerContext* context, const v1::ProposeRequest* request, v1::Verdict* out) override;

 private:
  // The decision the ledger records for `step_id` attempt `attempt` of `run_id`, with its
  // refusal report or commit, waiting for it while the run is live (at most `timeout`).
  grpc::Status await_verdict(const std::string& run_id, const std::string& step_id, uint32_t attempt,
                             std::chrono::milliseconds timeout, v1::Verdict* out);

  struct Idempotent {
    std::string fingerprint;               // run, step, attempt and the proposal's digest
    std::optional<grpc::Status> status;    // set once the first call has its answer
    bool delivered = false;                // the proposal reached the run: the key is spent
    v1::Verdict verdict;
  };

  RemoteExecutors& remote_;
  SharedLedger& ledger_;
  RunManager& runs_;
  InFlight& in_flight_;
  const TokenTable& tokens_;
  StreamQuota& streams_;  // Attach's share per caller
  std::mutex mu_;
  std::condition_variable answered_;
  std::map<std::string, Idempotent> by_key_;  // guarded by mu_; keyed by caller name + key
};

}  // namespace warden::service
