#include "kernel/record/ledger_writer.h"

#include <utility>


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
  // in a batch whose other records are good.
  if (buf_.size() > ledger_.max_payload_bytes()) {
    return fail(Errc::limit_exceeded, std::string(kind) + " record is " + std::to_string(buf_.size()) +
                                          " bytes of canonical JSON; the ledger's limit is " +
                                          std::to_string(ledger_.max_payload_bytes()));
  }
  records_.push_back(Pending{std::string(kind), buf_, at});
  return {};
}

Result<Appended> LedgerWriter::record_now(std::string_view kind, const Json& payload, int64_t at) {
  if (Status st = buffer(kind, payload, at); !st) return std::unexpected(st.error());
  auto last = write_pending();
  if (!last) return std::unexpected(last.error());
  return **last;
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
  auto last = write_pending();
  if (!last) return std::unexpected(last.error());
  return {};
}

Result<std::optional<Appended>> LedgerWriter::write_pending() {
  steps_ = 0;
  if (records_.empty() && blobs_.empty()) return std::optional<Appended>();
  std::optional<Appended> last;
  auto st = ledger_.write([&](WriteTxn& w) -> Status {
    for (const auto& b : blobs_) {
      if (auto put = w.put_blob(b); !put) return std::unexpected(put.error());
    }
    for (const auto& r : records_) {
      auto a = w.append(r.kind, r.payload, r.ts);
      if (!a) return std::unexpected(a.error().with_context(r.kind + " record"));
      last = *a;
    }
    return {};
  });
  // Written or not, the batch is done with (see the failure rule in the header).
  records_.clear();
  blobs_.clear();
  if (!st) {
    known_blobs_.clear();
    return std::unexpected(st.error().with_context("writing the ledger " + ledger_.dir().string()));
  }
  return last;
}

}  // namespace warden::kernel
