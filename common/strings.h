// String helpers every module shares: splitting text into the pieces between one separator
// character, its everyday use (a '/'-separated path's components), and trimming whitespace.
//
// Pure functions: they borrow their input (the returned views point into it, so it must
// outlive them), allocate only the vector, and are safe from any thread. Nothing here fails:
// judging the pieces (empty, ".", "..") is the caller's policy.
#pragma once

#include <string_view>
#include <vector>

namespace warden {

// Every piece of `text` between `separator`s, empty ones included, so the pieces joined
// with the separator give `text` back: "a//b" -> {"a", "", "b"}, "/a" -> {"", "a"},
// "" -> {""}.
std::vector<std::string_view> split(std::string_view text, char separator);

// A path's components: split(path, '/').
inline std::vector<std::string_view> split_path(std::string_view path) { return split(path, '/'); }

// `text` without the ASCII whitespace at either end.
std::string_view trim(std::string_view text);

}  // namespace warden
