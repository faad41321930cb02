// A ledger record {seq, kind, prev, ts, payload}: its canonical bytes (RFC 8785), its hash
// (the RFC 6962 leaf hash of those bytes), and the compact form it is stored in.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/canonical_json.h"
#include "common/error.h"
#include "common/sha256.h"

namespace warden {

// A record whose strings point into someone else's buffer (an LMDB page, a line).
struct RecordView {
  uint64_t seq = 0;
  std::string_view kind;
  Digest prev;
  int64_t ts = 0;
  std::string_view payload;

  // {"kind":..,"payload":..,"prev":"sha256:..","seq":..,"ts":..}: keys already in JCS order.
  void append_canonical_bytes(std::string& out) const;
  void encode_stored(std::string& out) const;
  // Parses the stored form (see Record::encode_stored); the view borrows `stored`.
  static Result<RecordView> decode_stored(uint64_t seq, std::string_view stored);
};

struct Record {
  uint64_t seq = 0;
  std::string kind;     // [a-z0-9_.-]{1,64}
  Digest prev;          // hash of record seq-1; all zero for seq 0
  int64_t ts = 0;       // from the injected clock
  std::string payload;  // canonical JSON object

  RecordView view() const { return RecordView{seq, kind, prev, ts, payload}; }
  std::string canonical_bytes() const;
  Digest hash() const;
  Json to_json() const;  // canonical bytes parsed back, for display

  // The stored value: version byte, ts, prev, kind, payload. seq is the key. The stored
  // form is a lossless re-encoding; hashes are always over canonical_bytes().
  void encode_stored(std::string& out) const { view().encode_stored(out); }
  static Result<Record> decode_stored(uint64_t seq, std::string_view stored);

  // Parses one canonical record line (an export line); refuses non-canonical bytes.
  static Result<Record> from_canonical(std::string_view line);
};

Status validate_kind(std::string_view kind);

}  // namespace warden
