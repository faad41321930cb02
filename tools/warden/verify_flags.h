// The verification flags `warden ledger verify`, `warden ledger import` and `warden replay`
// share: trusted keys, the unsigned-tail policy, checkpoints the auditor kept. One set of
// flags, one meaning, added to each command by add_verify_flags() and turned into the
// ledger's VerifyOptions (with the kernel's blob-reference table) by verify_options().
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "common/canonical_json.h"
#include "common/error.h"
#include "ledger/verify.h"

namespace warden::cli {

struct VerifyFlags {
  std::vector<std::string> keys;
  std::vector<std::string> checkpoints;  // files holding a signed note, or the note text
  bool require_signed_tail = false, allow_unsigned_tail = false;
};

// `key_help` says what the keys default to for this command.
void add_verify_flags(CLI::App* cmd, VerifyFlags& flags, const std::string& key_help);

// Loads the keys and kept notes. Errors: a key or note file that cannot be read or parsed.
Result<VerifyOptions> verify_options(const VerifyFlags& flags);

// The records after the last signed checkpoint (seqs signed_size .. signed_size +
// unsigned_records - 1) as the reports print them: {"records", "first_seq", "last_seq"}, or
// null when there are none.
Json unsigned_tail_json(uint64_t signed_size, uint64_t unsigned_records);

}  // namespace warden::cli
