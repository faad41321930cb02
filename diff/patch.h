// Parsing patch text: `git diff` (with --full-index --binary), `git format-patch` mails and
// plain unified diffs, into per-file records that still need the base tree to become a
// canonical Diff (diff/diff_builder.h). Strict: counts must match, nothing is guessed.
//
// Pure functions over the text (no file or tree access): thread-safe. PatchFile owns its
// copies of the text. A Refusal (malformed_patch and the like) means the text itself is
// wrong; texts longer than kMaxPatchBytes or kMaxPatchLines are refused (patch_too_large)
// without being parsed,
// and binary blocks declaring more than kMaxBinaryBytes in all (diff/git_binary.h) before
// they are decoded. A refusal's text is UTF-8 whatever bytes the patch holds.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "diff/diff.h"
#include "common/refusal.h"

namespace warden {

struct PatchFile {
  std::string old_path, new_path;  // without the a/ b/ prefix; empty for /dev/null
  bool is_new = false, is_delete = false, is_rename = false, is_copy = false;
  std::optional<uint32_t> old_mode, new_mode;
  std::string old_index, new_index;  // blob ids from the index line (hex, maybe abbreviated)
  std::vector<Hunk> hunks;
  enum class Binary { none, literal, delta, without_data } binary = Binary::none;
  std::string binary_payload;  // inflated: the post-image (literal) or a git delta
  uint64_t line = 0;           // where this file's section starts, for messages
};

inline constexpr uint64_t kMaxPatchBytes = uint64_t{64} << 20;
// Each line of a hunk becomes a string of its own (32 bytes before its content): a patch of
// empty lines would take 16 times its size. More lines than this are refused up front.
inline constexpr uint64_t kMaxPatchLines = uint64_t{1} << 22;

Checked<std::vector<PatchFile>> parse_patch(std::string_view text);

// Decodes a C-style quoted path as git writes it ("a\tb\303\251"); `text` starts at the
// opening quote. Sets `consumed` to the number of bytes read.
Checked<std::string> unquote_c_path(std::string_view text, size_t& consumed);

}  // namespace warden
