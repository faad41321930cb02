#include "kernel/kernel_ledger.h"

#include "ledger/record.h"

namespace warden::kernel {

Status KernelLedger::load_tip() {
  auto snap = ledger_.snapshot();
  if (!snap) return std::unexpected(snap.error());
  tip_.reset();
  empty_ = snap->size() == 0;
  if (empty_) return {};
  auto hash = snap->record_hash(snap->size() - 1);
  if (!hash) return std::unexpected(hash.error());
  tip_ = Appended{snap->size() - 1, *hash};
  return {};
}

Result<Appended> KernelLedger::record(std::string_view kind, const Json& payload, int64_t at) {
  auto canonical = canonicalize(payload);
  if (!canonical) return std::unexpected(canonical.error().with_context(std::string(kind) + " record"));
  if (!tip_ && !empty_) {
    if (Status st = load_tip(); !st) return std::unexpected(st.error());
  }
  Record r;
  r.seq = tip_ ? tip_->seq + 1 : 0;
  r.kind = std::string(kind);
  r.prev = tip_ ? tip_->hash : Digest{};
  r.ts = at;
  r.payload = std::move(*canonical);
  Appended expected{r.seq, r.hash()};
  records_.push_back(Pending{std::move(r.kind), std::move(r.payload), at, expected});
  tip_ = expected;
  empty_ = false;
  return expected;
}

Status KernelLedger::append(std::string_view kind, const Json& payload, int64_t at) {
  auto added = record(kind, payload, at);
  if (!added) return std::unexpected(added.error());
  return {};
}

Result<std::string> KernelLedger::put_blob(std::string_view bytes, std::string_view digest) {
  std::string name = digest.empty() ? sha256(bytes).str() : std::string(digest);
  if (known_blobs_.insert(name).second) blobs_.emplace_back(bytes);
  return name;
}

Result<Digest> KernelLedger::put(std::string_view bytes) {
  Digest d = sha256(bytes);
  if (known_blobs_.insert(d.str()).second) blobs_.emplace_back(bytes);
  return d;
}

Status KernelLedger::commit(bool now) {
  // The executor commits after every step; the kernel flushes at its own decision points,
  // and whenever the executor asks for durability now (pauses, ends).
  return now ? flush() : Status{};
}

Status KernelLedger::flush() {
  if (records_.empty() && blobs_.empty()) return {};
  auto st = ledger_.write([&](LedgerWriter& w) -> Status {
    for (const auto& b : blobs_) {
      if (auto put = w.put_blob(b); !put) return std::unexpected(put.error());
    }
    for (const auto& r : records_) {
      auto a = w.append(r.kind, r.payload, r.ts);
      if (!a) return std::unexpected(a.error().with_context(r.kind + " record"));
      if (a->seq != r.expected.seq || a->hash != r.expected.hash) {
        return fail(Errc::internal, r.kind + " record landed at " + std::to_string(a->seq) +
                                        ", not where the kernel named it (" + std::to_string(r.expected.seq) +
                                        "): another writer?");
      }
    }
    return {};
  });
  // Written or not, the batch is done with: a batch the ledger refuses (a record over its
  // size limit) would otherwise fail every later flush, including the run's own end.
  records_.clear();
  blobs_.clear();
  if (!st) {
    tip_.reset();
    empty_ = false;  // reload from what the ledger really holds
    known_blobs_.clear();
    return std::unexpected(st.error().with_context("writing the ledger " + ledger_.dir().string()));
  }
  return {};
}

}  // namespace warden::kernel
