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

// The most bytes the binary payloads of one patch may come to once inflated (every literal
// and delta block, forward and reverse), and the most all its delta results may: a patch
// declaring more is refused (patch_too_large) before anything is decoded or allocated for it.
inline constexpr uint64_t kMaxBinaryBytes = uint64_t{64} << 20;

// zlib-inflates `compressed`, which must produce exactly `expected_size` bytes. Refuses
// (patch_too_large) a declared size over `max_size`, and one deflate could not reach from
// this much input, before inflating; inflates in chunks and stops at the first byte past the
// declared size, so the work and the memory are bounded by the declared size.
Checked<std::string> inflate_exact(std::string_view compressed, uint64_t expected_size,
                                   uint64_t max_size = kMaxBinaryBytes);

// Applies a git delta to `base`; the delta's recorded sizes must match. A declared result
// over `max_result` is refused (patch_too_large) before anything is allocated.
Checked<std::string> apply_git_delta(std::string_view base, std::string_view delta,
                                     uint64_t max_result = kMaxBinaryBytes);

}  // namespace warden
