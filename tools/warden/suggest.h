// "Did you mean": the closest of a command's own words to one a person mistyped, so a usage
// error names the fix (`--checks` -> `--check`, `warden porpose` -> `warden propose`).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace warden::cli {

// The candidate closest to `typed` by edit distance (insertions, deletions, substitutions,
// and a swap of two neighbours as one edit), when it is within a third of the typed word's
// length (at least 1, at most 3) or `typed` is a prefix of it; none otherwise. Ties go to
// the first candidate.
std::optional<std::string> closest_word(std::string_view typed, const std::vector<std::string>& candidates);

}  // namespace warden::cli
