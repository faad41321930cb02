// C2SP tlog-checkpoint note bodies: origin, tree size, base64 root hash, then optional
// extension lines. Signing and verifying them is note.h's job.
//
// A plain value with pure functions: thread-safe, nothing durable. parse_body() returns
// invalid_argument for a body that is not a well-formed checkpoint; that says nothing about
// signatures, which are checked before the body is trusted.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "common/sha256.h"

namespace warden {

struct Checkpoint {
  std::string origin;
  uint64_t size = 0;
  Digest root;
  std::vector<std::string> extensions;

  std::string body() const;  // the note text, ending in a newline
  static Result<Checkpoint> parse_body(std::string_view text);
};

}  // namespace warden
