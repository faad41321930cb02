// common/random_source.h is tested here, beside its first user, the restart policy's jitter.
#include "common/random_source.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <vector>

#include "tests/supervisor/scripted_random.h"

namespace warden {
namespace {

TEST(SeededRandomSource, MatchesPublishedSplitmix64Vectors) {
  SeededRandomSource random(0);
  EXPECT_EQ(random.next_u64(), 0xe220a8397b1dcdafULL);
  EXPECT_EQ(random.next_u64(), 0x6e789e6aa1b965f4ULL);
  EXPECT_EQ(random.next_u64(), 0x06c45d188009454fULL);
}

TEST(SeededRandomSource, SameSeedSameSequence) {
  SeededRandomSource a(42);
  SeededRandomSource b(42);
  SeededRandomSource c(43);
  std::vector<uint64_t> from_a, from_b, from_c;
  for (int i = 0; i < 16; ++i) {
    from_a.push_back(a.next_u64());
    from_b.push_back(b.next_u64());
    from_c.push_back(c.next_u64());
  }
  EXPECT_EQ(from_a, from_b);
  EXPECT_NE(from_a, from_c);
  EXPECT_EQ(from_a[0], 0xbdd732262feb6e95ULL);
}

TEST(SystemRandomSource, DrawsDiffer) {
  SystemRandomSource random;
  // Two equal 64-bit draws from a working CSPRNG would be a 2^-64 event.
  EXPECT_NE(random.next_u64(), random.next_u64());
}

TEST(UniformBelow, ZeroBoundDrawsNothing) {
  supervisor::test::ScriptedRandom random({});
  EXPECT_EQ(uniform_below(random, 0), 0u);
  EXPECT_EQ(random.draws(), 0);
}

TEST(UniformBelow, ReducesModuloBound) {
  supervisor::test::ScriptedRandom random({7, 9, 10});
  EXPECT_EQ(uniform_below(random, 10), 7u);
  EXPECT_EQ(uniform_below(random, 10), 9u);
  EXPECT_EQ(uniform_below(random, 10), 0u);
  EXPECT_EQ(random.draws(), 3);
}

TEST(UniformBelow, RedrawsTheUnevenTail) {
  // 2^64 - 1 is divisible by 3, so only the very top value lies in the tail for bound 3.
  constexpr uint64_t kTop = std::numeric_limits<uint64_t>::max();
  supervisor::test::ScriptedRandom random({kTop, 5});
  EXPECT_EQ(uniform_below(random, 3), 2u);
  EXPECT_EQ(random.draws(), 2);
  // For bound 10 the tail is the top 6 values (2^64 mod 10 = 6).
  supervisor::test::ScriptedRandom tail({kTop - 5, kTop - 6});
  EXPECT_EQ(uniform_below(tail, 10), (kTop - 6) % 10);
  EXPECT_EQ(tail.draws(), 2);
}

TEST(UniformBelow, StaysBelowBound) {
  SeededRandomSource random(7);
  for (int i = 0; i < 1000; ++i) EXPECT_LT(uniform_below(random, 13), 13u);
}

}  // namespace
}  // namespace warden
