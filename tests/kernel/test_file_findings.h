// What the structural comparison tests of test files share: findings as text, a finding
// looked up by unit and wording, and a text edited in one place. Header-only; test code.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "kernel/judge/test_file_change.h"

namespace warden::kernel {

inline std::vector<std::string> described(const TestFileComparison& c) {
  std::vector<std::string> out;
  for (const auto& f : c.findings) out.push_back(f.describe());
  return out;
}

// Every finding, a line each, and why the file is unreadable: for failure messages.
inline std::string joined(const TestFileComparison& c) {
  std::string out;
  for (const auto& d : described(c)) out += d + "\n";
  if (c.unreadable) out += "unreadable: " + *c.unreadable;
  return out;
}

// A finding naming `unit` whose text has `what`.
inline bool has(const TestFileComparison& c, std::string_view unit, std::string_view what) {
  for (const auto& f : c.findings) {
    if (f.unit.find(unit) != std::string::npos && f.what.find(what) != std::string::npos) return true;
  }
  return false;
}

// `text` with the first `from` replaced by `to`; a test failure when there is none.
inline std::string replaced(std::string text, std::string_view from, std::string_view to) {
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

}  // namespace warden::kernel
