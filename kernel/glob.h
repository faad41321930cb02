// Path globs for policies and plans: which paths a plan may target, which a proposal may
// not touch. A pattern is matched segment by segment ('/'-separated):
//   *      any run of characters within one segment (never '/')
//   ?      one character other than '/'
//   [abc]  one character of the class; [a-z] ranges; [!a-z] or [^a-z] negates
//   **     as a whole segment: any number of segments, zero included, so "src/**" matches
//          "src/a/b.py" (and "src" itself) and "**/x.py" matches "x.py"; inside a segment
//          ("a**b") it is a plain '*'
// There are no escapes; an unclosed '[' is a literal. Matching is O(pattern * path) in the
// worst case: segments are matched by dynamic programming and each segment with the
// single-star greedy scan, so no pattern can make it backtrack exponentially.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace warden::kernel {

bool glob_match(std::string_view pattern, std::string_view path);
bool any_glob_match(const std::vector<std::string>& patterns, std::string_view path);

}  // namespace warden::kernel
