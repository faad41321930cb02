// Copies the fleet's events from its store into the server's ledger (so assignments, crashes,
// restarts and circuit changes are on record beside the decisions), in store order, as
// fleet_event records (kernel/record/fleet_record.h), and signs a checkpoint over each batch.
//
// Where it left off is the ledger's own: the last fleet_event record of this store names the
// store sequence number it copied, and each batch is one ledger transaction, so a crash at
// any moment leaves neither a gap nor a repeat. A store whose stream is shorter than what the
// ledger already holds began anew (a flushed Redis, a replaced directory): copying starts over
// from its first event, which replay accepts as a new beginning, and the server logs it.
//
// Ownership: borrows the ledger and the store, which must outlive it. Not thread-safe: one
// caller (the fleet's loop) pumps.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "common/error.h"
#include "ledger/note.h"
#include "service/shared_ledger.h"
#include "store/state_store.h"

namespace warden::service {

class FleetRecorder {
 public:
  // Finds where the ledger left off for `store_name` (a backward scan to the last
  // fleet_event record of that store; none at all is answered from the kind counts).
  // `signer` signs a checkpoint after each batch; without it the records wait for the next
  // run's checkpoint.
  static Result<std::unique_ptr<FleetRecorder>> create(SharedLedger& ledger, store::StateStore& store,
                                                       std::string store_name, std::optional<NoteSigner> signer);

  // Copies every event past the last one recorded, in batches; returns how many. The note,
  // when not empty, is for the log (the store began anew).
  struct Pumped {
    uint64_t recorded = 0;
    std::string note;
  };
  Result<Pumped> pump();
  uint64_t position() const { return position_; }

 private:
  FleetRecorder(SharedLedger& ledger, store::StateStore& store, std::string store_name, std::optional<NoteSigner> signer,
                uint64_t position)
      : ledger_(ledger), store_(store), store_name_(std::move(store_name)), signer_(std::move(signer)), position_(position) {}

  SharedLedger& ledger_;
  store::StateStore& store_;
  const std::string store_name_;
  const std::optional<NoteSigner> signer_;
  uint64_t position_;  // the last store seq the ledger holds
};

}  // namespace warden::service
