#include "kernel/judge/glob.h"

#include <algorithm>
#include <cstdint>

#include "common/case_fold.h"
#include "common/strings.h"

namespace warden::kernel {
namespace {

// Matches one character against the class starting at pattern[p] ('['); sets `end` to the
// index after its ']'. Returns false with end == p when the class is unclosed (a literal '[').
bool class_match(std::string_view pattern, size_t p, char c, size_t& end) {
  size_t i = p + 1;
  bool negate = i < pattern.size() && (pattern[i] == '!' || pattern[i] == '^');
  if (negate) ++i;
  size_t first = i;
  bool matched = false;
  for (; i < pattern.size(); ++i) {
    if (pattern[i] == ']' && i > first) {
      end = i + 1;
      return matched != negate;
    }
    if (i + 2 < pattern.size() && pattern[i + 1] == '-' && pattern[i + 2] != ']') {
      matched = matched || (pattern[i] <= c && c <= pattern[i + 2]);
      i += 2;
    } else {
      matched = matched || pattern[i] == c;
    }
  }
  end = p;
  return false;
}

// One segment: '*' '?' and classes, with the greedy scan that retries from the last '*'
// only (a later '*' subsumes every earlier choice), so the cost is O(pattern * text).
bool segment_match(std::string_view pattern, std::string_view text) {
  size_t p = 0, t = 0;
  size_t star_p = std::string_view::npos, star_t = 0;
  while (t < text.size()) {
    if (p < pattern.size()) {
      char pc = pattern[p];
      if (pc == '*') {
        while (p < pattern.size() && pattern[p] == '*') ++p;
        star_p = p;
        star_t = t;
        continue;
      }
      if (pc == '?') {
        ++p;
        ++t;
        continue;
      }
      if (pc == '[') {
        size_t end = p;
        bool ok = class_match(pattern, p, text[t], end);
        if (end != p) {
          if (ok) {
            p = end;
            ++t;
            continue;
          }
        } else if (text[t] == '[') {
          ++p;
          ++t;
          continue;
        }
      } else if (pc == text[t]) {
        ++p;
        ++t;
        continue;
      }
    }
    if (star_p == std::string_view::npos) return false;
    p = star_p;
    t = ++star_t;
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

bool exact_match(std::string_view pattern, std::string_view path) {
  std::vector<std::string_view> pat = split_path(pattern), segs = split_path(path);
  // reach[j]: the first i pattern segments can match the first j path segments.
  std::vector<uint8_t> reach(segs.size() + 1, 0), next(segs.size() + 1, 0);
  reach[0] = 1;
  for (std::string_view ps : pat) {
    std::fill(next.begin(), next.end(), 0);
    if (ps == "**") {
      bool any = false;  // zero or more segments: every j at or after a reachable one
      for (size_t j = 0; j <= segs.size(); ++j) next[j] = any = any || reach[j];
    } else {
      for (size_t j = 0; j < segs.size(); ++j) {
        if (reach[j] && segment_match(ps, segs[j])) next[j + 1] = 1;
      }
    }
    reach.swap(next);
  }
  return reach[segs.size()] != 0;
}

}  // namespace

bool glob_match(std::string_view pattern, std::string_view path, Case mode) {
  if (mode == Case::exact) return exact_match(pattern, path);
  return exact_match(fold_case(pattern), fold_case(path));
}

bool any_glob_match(const std::vector<std::string>& patterns, std::string_view path, Case mode) {
  if (mode == Case::exact) return std::any_of(patterns.begin(), patterns.end(), [&](const std::string& p) { return exact_match(p, path); });
  const std::string folded = fold_case(path);
  return std::any_of(patterns.begin(), patterns.end(), [&](const std::string& p) { return exact_match(fold_case(p), folded); });
}

}  // namespace warden::kernel
