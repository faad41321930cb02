// A RandomSource for tests that returns the values it was given, in order, and counts the
// draws; it fails the test if asked for more than it holds.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "common/random_source.h"

namespace warden::supervisor::test {

class ScriptedRandom final : public RandomSource {
 public:
  explicit ScriptedRandom(std::vector<uint64_t> values) : values_(std::move(values)) {}
  uint64_t next_u64() override {
    if (next_ >= values_.size()) {
      ADD_FAILURE() << "ScriptedRandom ran out of values after " << next_ << " draws";
      return 0;
    }
    return values_[next_++];
  }
  int draws() const { return static_cast<int>(next_); }

 private:
  std::vector<uint64_t> values_;
  size_t next_ = 0;
};

}  // namespace warden::supervisor::test
