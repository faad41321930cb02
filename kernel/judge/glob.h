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
//
// Rules that guard paths (a policy's deny, protected and approval globs, the oracle's files)
// match with Case::folded: pattern and path are both Unicode case folded first
// (common/case_fold.h), because a case-insensitive file system or a checkout on another OS
// opens ".ENV" as ".env". Folding is on the pattern's characters too, so a class holding a
// character that folds to several ("[ß]") matches as if it held each of them. Rules that
// permit (allowed paths, plan targets) stay exact: folding them would widen a permission.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace warden::kernel {

enum class Case { exact, folded };

bool glob_match(std::string_view pattern, std::string_view path, Case mode = Case::exact);
bool any_glob_match(const std::vector<std::string>& patterns, std::string_view path, Case mode = Case::exact);

}  // namespace warden::kernel
