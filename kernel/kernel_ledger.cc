#include "kernel/kernel_ledger.h"

namespace warden::kernel {

Status KernelLedger::append(std::string_view kind, const Json& payload, int64_t at) {
  auto canonical = canonicalize(payload);
  if (!canonical) return std::unexpected(canonical.error().with_context(std::string(kind) + " record"));
  records_.push_back(Pending{std::string(kind), std::move(*canonical), at});
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

Result<std::vector<Appended>> KernelLedger::write_pending() {
  std::vector<Appended> out;
  if (records_.empty() && blobs_.empty()) return out;
  out.reserve(records_.size());
  auto st = ledger_.write([&](LedgerWriter& w) -> Status {
    for (const auto& b : blobs_) {
      if (auto put = w.put_blob(b); !put) return std::unexpected(put.error());
    }
    for (const auto& r : records_) {
      auto a = w.append(r.kind, r.payload, r.ts);
      if (!a) return std::unexpected(a.error().with_context(r.kind + " record"));
      out.push_back(*a);
    }
    return {};
  });
  // Written or not, the batch is done with: a batch the ledger refuses (a record over its
  // size limit) would otherwise fail every later flush, including the run's own end.
  records_.clear();
  blobs_.clear();
  if (!st) return std::unexpected(st.error().with_context("writing the ledger " + ledger_.dir().string()));
  return out;
}

Status KernelLedger::flush() {
  auto written = write_pending();
  if (!written) return std::unexpected(written.error());
  return {};
}

Result<Appended> KernelLedger::record(std::string_view kind, const Json& payload, int64_t at) {
  if (Status st = append(kind, payload, at); !st) return std::unexpected(st.error());
  auto written = write_pending();
  if (!written) return std::unexpected(written.error());
  return written->back();
}

}  // namespace warden::kernel
