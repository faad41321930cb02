#include "service/fleet_recorder.h"

#include <algorithm>

#include "common/sha256.h"
#include "kernel/record/fleet_record.h"

namespace warden::service {
namespace {

// Events per ledger transaction: a fleet that fell far behind catches up in bounded steps.
constexpr uint64_t kBatch = 256;

}  // namespace

Result<std::unique_ptr<FleetRecorder>> FleetRecorder::create(SharedLedger& ledger, store::StateStore& store,
                                                             std::string store_name, std::optional<NoteSigner> signer) {
  auto snap = ledger.snapshot();
  if (!snap) return std::unexpected(snap.error());
  auto counts = snap->kind_counts();
  if (!counts) return std::unexpected(counts.error());
  const bool any = std::any_of(counts->begin(), counts->end(), [](const auto& kc) {
    return kc.first == kernel::record_kind::fleet_event && kc.second > 0;
  });
  uint64_t position = 0;
  if (any) {
    auto walked = snap->for_each_record(
        0, snap->size(),
        [&](const RecordView& view) -> Result<bool> {
          if (view.kind != kernel::record_kind::fleet_event) return true;
          auto payload = parse_json(view.payload);
          if (!payload) return std::unexpected(payload.error().with_context("fleet_event record " + std::to_string(view.seq)));
          auto record = kernel::FleetEventRecord::from_json(*payload);
          if (!record) return std::unexpected(record.error().with_context("fleet_event record " + std::to_string(view.seq)));
          if (record->store != store_name) return true;
          position = record->store_seq;
          return false;
        },
        LedgerSnapshot::Order::backward);
    if (!walked) return std::unexpected(walked.error());
  }
  return std::unique_ptr<FleetRecorder>(new FleetRecorder(ledger, store, std::move(store_name), std::move(signer), position));
}

Result<FleetRecorder::Pumped> FleetRecorder::pump() {
  Pumped pumped;
  auto last = store_.last_seq();
  if (!last) return std::unexpected(last.error());
  if (*last < position_) {
    pumped.note = "the fleet's store " + store_name_ + " holds " + std::to_string(*last) + " events, fewer than the " +
                  std::to_string(position_) + " the ledger recorded: it began anew, and its events are recorded from its first";
    position_ = 0;
  }
  while (position_ < *last) {
    auto events = store_.read(position_ + 1, std::min(kBatch, *last - position_));
    if (!events) return std::unexpected(events.error());
    if (events->empty()) break;
    std::vector<AppendEntry> entries;
    entries.reserve(events->size());
    uint64_t expect = position_ + 1;
    for (const store::Event& e : *events) {
      if (e.seq != expect) {
        return fail(Errc::corrupt, "the fleet's store gave event " + std::to_string(e.seq) + " where " +
                                       std::to_string(expect) + " was due");
      }
      ++expect;
      // The supervisor writes canonical JSON objects; anything else (another writer's bytes)
      // is recorded as what it is, so the ledger keeps the sequence without a gap.
      Result<kernel::FleetEventRecord> record = fail(Errc::invalid_argument, "not a JSON object");
      if (auto parsed = parse_json(e.bytes); parsed && parsed->is_object()) {
        record = kernel::FleetEventRecord::from_json(Json{{"store", store_name_}, {"store_seq", e.seq}, {"event", *parsed}});
      }
      if (!record) {
        // The supervisor writes canonical JSON objects; anything else (another writer's
        // bytes) is recorded as what it is, so the ledger keeps the sequence without a gap.
        record = kernel::FleetEventRecord{store_name_, e.seq,
                                          Json{{"type", "unreadable"}, {"agent", "-"}, {"at_ms", 0},
                                               {"bytes_sha256", sha256(e.bytes).str()}}};
      }
      entries.push_back(AppendEntry{std::string(kernel::record_kind::fleet_event), record->to_json()});
    }
    auto appended = ledger_.append(entries);
    if (!appended) return std::unexpected(appended.error().with_context("recording fleet events in the ledger"));
    // The records are durable: from here on a failure must not make the next pass copy them
    // again (replay would find them repeated).
    position_ = expect - 1;
    pumped.recorded += entries.size();
    if (signer_) {
      // Unsigned records wait for the next checkpoint (this recorder's or a run's).
      if (Status st = ledger_.checkpoint(*signer_); !st) {
        return std::unexpected(st.error().with_context("signing a checkpoint over the fleet's events"));
      }
    }
  }
  return pumped;
}

}  // namespace warden::service
