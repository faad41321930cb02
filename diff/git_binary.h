// The pieces of a `GIT binary patch` block: git's base85 line encoding, zlib inflation,
// and git's delta format (a copy/insert program against the pre-image).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/refusal.h"

namespace warden {

// One base85 line of a binary patch: a length character ('A'-'Z' = 1-26, 'a'-'z' = 27-52)
// and the encoded bytes, without the newline. Appends the decoded bytes to `out`.
Checked<void> decode_base85_line(std::string_view line, std::string& out);

// zlib-inflates `compressed`, which must produce exactly `expected_size` bytes.
Checked<std::string> inflate_exact(std::string_view compressed, uint64_t expected_size);

// Applies a git delta to `base`; the delta's recorded sizes must match.
Checked<std::string> apply_git_delta(std::string_view base, std::string_view delta);

}  // namespace warden
