// warden.v1.Ledger over one ledger directory: checkpoints, inclusion and consistency proofs,
// records by range, kind or run (streamed), and verified blobs.
//
// Every call reads one LMDB snapshot, so a stream sees one consistent tree even while the
// kernel appends. Thread-safe: gRPC calls it from many threads; snapshots are taken under
// snapshot_mu_ (a Ledger is for one thread at a time) and each is then used by its call's
// thread alone (the environment is opened MDB_NOTLS). The service owns the process's handle
// on the ledger: LMDB allows one per process.
#pragma once

#include <warden.grpc.pb.h>  // generated from proto/warden.proto

#include <filesystem>
#include <memory>
#include <mutex>

#include "common/clock.h"
#include "ledger/ledger.h"
#include "service/in_flight.h"
#include "service/tokens.h"

namespace warden::service {

class LedgerService final : public v1::Ledger::Service {
 public:
  // Opens the ledger at `dir` read-only; not_found (with the command that creates one) when
  // there is none.
  // Its calls are counted in `in_flight` and need the observer role in `tokens`; both must
  // outlive it.
  static Result<std::unique_ptr<LedgerService>> open(const std::filesystem::path& dir, InFlight& in_flight,
                                                     const TokenTable& tokens);

  grpc::Status GetCheckpoint(grpc::ServerContext* context, const v1::GetCheckpointRequest*, v1::Checkpoint*) override;
  grpc::Status ProveInclusion(grpc::ServerContext* context, const v1::ProveInclusionRequest*, v1::InclusionProof*) override;
  grpc::Status ProveConsistency(grpc::ServerContext* context, const v1::ProveConsistencyRequest*, v1::ConsistencyProof*) override;
  grpc::Status ListRecords(grpc::ServerContext* context, const v1::ListRecordsRequest*,
                           grpc::ServerWriter<v1::LedgerRecord>*) override;
  grpc::Status GetBlob(grpc::ServerContext* context, const v1::GetBlobRequest*, v1::Blob*) override;

 private:
  LedgerService(std::unique_ptr<SystemClock> clock, Ledger ledger, InFlight& in_flight, const TokenTable& tokens);

  Result<LedgerSnapshot> snapshot();

  std::unique_ptr<SystemClock> clock_;  // the ledger keeps a reference; read-only, never used to stamp
  std::mutex snapshot_mu_;
  Ledger ledger_;  // guarded by snapshot_mu_
  InFlight& in_flight_;
  const TokenTable& tokens_;
};

}  // namespace warden::service
