// The acknowledgements ledger_writer prints: one "SEQ HASHHEX" line per durable record.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "tests/support/files.h"

namespace warden::test {

struct Ack {
  uint64_t seq = 0;
  std::string hash_hex;
};

// Parses the complete lines of a writer's stdout; a torn last line (the writer was killed
// while printing) is not an acknowledgement and is ignored. Anything else malformed throws.
inline std::vector<Ack> parse_acks(std::string_view out) {
  std::vector<Ack> acks;
  for (const auto& line : complete_lines(out)) {
    auto space = line.find(' ');
    if (space == std::string::npos || space == 0 || line.size() - space - 1 != 64) {
      throw std::runtime_error("malformed acknowledgement line: \"" + line + "\"");
    }
    acks.push_back(Ack{std::stoull(line.substr(0, space)), line.substr(space + 1)});
  }
  return acks;
}

}  // namespace warden::test
