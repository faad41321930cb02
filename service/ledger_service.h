// warden.v1.Ledger over one ledger directory: checkpoints, inclusion and consistency proofs,
// records by range, kind or run (streamed), verified blobs, and acceptance receipts.
//
// Every call reads one LMDB snapshot, so a stream sees one consistent tree even while the
// kernel appends. Thread-safe: gRPC calls it from many threads; snapshots come from the
// server's SharedLedger (service/shared_ledger.h).
#pragma once

#include <warden.grpc.pb.h>  // generated from proto/warden.proto

#include <filesystem>
#include <memory>

#include "service/shared_ledger.h"
#include "service/in_flight.h"
#include "service/tokens.h"

namespace warden::service {

class LedgerService final : public v1::Ledger::Service {
 public:
  // Its calls are counted in `in_flight` and need the observer role in `tokens`; all three
  // must outlive it.
  LedgerService(SharedLedger& ledger, InFlight& in_flight, const TokenTable& tokens);

  grpc::Status GetCheckpoint(grpc::ServerContext* context, const v1::GetCheckpointRequest*, v1::Checkpoint*) override;
  grpc::Status ProveInclusion(grpc::ServerContext* context, const v1::ProveInclusionRequest*, v1::InclusionProof*) override;
  grpc::Status ProveConsistency(grpc::ServerContext* context, const v1::ProveConsistencyRequest*, v1::ConsistencyProof*) override;
  grpc::Status ListRecords(grpc::ServerContext* context, const v1::ListRecordsRequest*,
                           grpc::ServerWriter<v1::LedgerRecord>*) override;
  grpc::Status GetBlob(grpc::ServerContext* context, const v1::GetBlobRequest*, v1::Blob*) override;
  // The acceptance receipt of an accepted commit (kernel/audit/receipt.h), as `warden receipt` makes it.
  grpc::Status GetReceipt(grpc::ServerContext* context, const v1::GetReceiptRequest*, v1::Receipt*) override;

 private:
  SharedLedger& ledger_;
  InFlight& in_flight_;
  const TokenTable& tokens_;
};

}  // namespace warden::service
