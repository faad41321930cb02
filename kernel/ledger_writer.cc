#include "kernel/ledger_writer.h"

#include <utility>

#include "ledger/merkle.h"
#include "ledger/record.h"

namespace warden::kernel {
namespace {

constexpr size_t kMaxKnownBlobs = 4096;

}  // namespace

Status LedgerWriter::buffer(std::string_view kind, const Json& payload, int64_t at) {
  buf_.clear();
  if (auto st = canonicalize_to(payload, buf_); !st) {
    return std::unexpected(st.error().with_context(std::string(kind) + " record"));
  }
  // Refused here, not at the flush: a record the ledger would refuse must not take a place
  // (and a name) in a batch whose other records are good.
  if (buf_.size() > ledger_.max_payload_bytes()) {
    return fail(Errc::limit_exceeded, std::string(kind) + " record is " + std::to_string(buf_.size()) +
                                          " bytes of canonical JSON; the ledger's limit is " +
                                          std::to_string(ledger_.max_payload_bytes()));
  }
  records_.push_back(Pending{std::string(kind), buf_, at, std::nullopt});
  return {};
}

Status LedgerWriter::load_tip() {
  auto snap = ledger_.snapshot();
  if (!snap) return std::unexpected(snap.error());
  tip_.reset();
  if (snap->size() > 0) {
    auto hash = snap->record_hash(snap->size() - 1);
    if (!hash) return std::unexpected(hash.error());
    tip_ = Appended{snap->size() - 1, *hash};
  }
  tip_known_ = true;
  return {};
}

// Names every buffered record not yet named, in order from the tip: a name depends on the
// hash of the record before it.
Status LedgerWriter::name_pending() {
  if (!tip_known_) {
    if (Status st = load_tip(); !st) return st;
  }
  MerkleHasher hasher;
  std::string canonical;
  for (; named_ < records_.size(); ++named_) {
    Pending& p = records_[named_];
    RecordView r{tip_ ? tip_->seq + 1 : 0, p.kind, tip_ ? tip_->hash : Digest{}, p.ts, p.payload};
    canonical.clear();
    r.append_canonical_bytes(canonical);
    p.name = Appended{r.seq, hasher.leaf(canonical)};
    tip_ = p.name;
  }
  return {};
}

Result<Appended> LedgerWriter::record(std::string_view kind, const Json& payload, int64_t at) {
  if (Status st = buffer(kind, payload, at); !st) return std::unexpected(st.error());
  if (Status st = name_pending(); !st) {
    records_.pop_back();
    return std::unexpected(st.error());
  }
  return *records_.back().name;
}

Status LedgerWriter::append(std::string_view kind, const Json& payload, int64_t at) { return buffer(kind, payload, at); }

void LedgerWriter::add_blob(std::string name, std::string_view bytes) {
  if (known_blobs_.contains(name)) return;
  if (known_blobs_.size() >= kMaxKnownBlobs) known_blobs_.clear();
  known_blobs_.insert(std::move(name));
  blobs_.emplace_back(bytes);
}

Result<std::string> LedgerWriter::put_blob(std::string_view bytes, std::string_view digest) {
  std::string name = digest.empty() ? sha256(bytes).str() : std::string(digest);
  add_blob(name, bytes);
  return name;
}

Status LedgerWriter::commit(bool now) {
  ++steps_;
  const bool pause_due = now && options_.flush_at_pauses;
  const bool steps_due = options_.flush_every_steps > 0 && steps_ >= options_.flush_every_steps;
  return pause_due || steps_due ? flush() : Status{};
}

Status LedgerWriter::flush() {
  steps_ = 0;
  if (records_.empty() && blobs_.empty()) return {};
  std::optional<Appended> last;
  auto st = ledger_.write([&](WriteTxn& w) -> Status {
    for (const auto& b : blobs_) {
      if (auto put = w.put_blob(b); !put) return std::unexpected(put.error());
    }
    for (const auto& r : records_) {
      auto a = w.append(r.kind, r.payload, r.ts);
      if (!a) return std::unexpected(a.error().with_context(r.kind + " record"));
      if (r.name && (a->seq != r.name->seq || a->hash != r.name->hash)) {
        return fail(Errc::internal, r.kind + " record landed at " + std::to_string(a->seq) +
                                        ", not where the kernel named it (" + std::to_string(r.name->seq) +
                                        "): another writer?");
      }
      last = *a;
    }
    return {};
  });
  // Written or not, the batch is done with (see the failure rule in the header).
  records_.clear();
  blobs_.clear();
  named_ = 0;
  if (!st) {
    tip_.reset();
    tip_known_ = false;  // reload from what the ledger really holds
    known_blobs_.clear();
    return std::unexpected(st.error().with_context("writing the ledger " + ledger_.dir().string()));
  }
  if (last) {
    tip_ = last;
    tip_known_ = true;
  }
  return {};
}

}  // namespace warden::kernel
