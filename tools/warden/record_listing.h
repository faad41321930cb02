// `warden ledger show`'s record listing: which records (a seq range, kinds, a run) and how
// they print (one line each, indented payloads, or JSON Lines).
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "ledger/ledger.h"

namespace warden::cli {

struct RecordQuery {
  uint64_t first = 0;
  std::optional<uint64_t> last;    // inclusive; none: to the end
  std::vector<std::string> kinds;  // any of them; empty: every kind
  std::string run;                 // the records the ledger's run index holds for it; empty: all
};

// "A..B" (both included), "A.." or "..B" into `query`; invalid_argument otherwise.
Status parse_seq_range(std::string_view text, RecordQuery& query);
// One record number; invalid_argument otherwise.
Result<uint64_t> parse_seq(std::string_view text);

enum class RecordFormat {
  line,        // "SEQ KIND PAYLOAD", the payload as its canonical one-line JSON
  pretty,      // "seq SEQ  KIND  ts TS", then the payload indented
  json_lines,  // {"seq", "kind", "ts", "hash", "prev", "payload"}, one object per line
};

// Prints the records `query` selects, oldest first; returns how many.
Result<uint64_t> print_records(LedgerSnapshot& snap, const RecordQuery& query, RecordFormat format, std::ostream& out);

// The payload as JSON indented by two spaces, every line prefixed with `indent`.
std::string indented_payload(std::string_view canonical_payload, std::string_view indent);

}  // namespace warden::cli
