// Randomness enters Warden only through this interface, the way time enters through Clock
// (common/clock.h): production draws from the kernel's CSPRNG, a test or a golden run from a seed, and
// then the same seed gives the same draws, so a jittered backoff is reproducible.
//
// Callers borrow a RandomSource by reference; whoever built it owns it and must keep it
// alive. SystemRandomSource holds no state and is safe to share between threads.
// SeededRandomSource is a plain counter with no lock: not thread-safe, deliberately — only a
// fixed call order gives a fixed sequence.
#pragma once

#include <cstdint>
#include <span>

namespace warden {

class RandomSource {
 public:
  virtual ~RandomSource() = default;
  // 64 uniformly distributed bits.
  virtual uint64_t next_u64() = 0;
};

// Fills `out` from the kernel's CSPRNG (getrandom(2), which waits only until the pool is first
// seeded, at boot). Throws std::runtime_error if the kernel refuses: a process without
// randomness should not go on. Keys, nonces and ids are drawn here.
void fill_system_random(std::span<uint8_t> out);

// fill_system_random(), eight bytes at a time.
class SystemRandomSource final : public RandomSource {
 public:
  uint64_t next_u64() override;
};

// splitmix64 (Steele, Lea, Flood 2014): a fixed sequence per seed, fast, and good enough for
// jitter. Not for secrets.
class SeededRandomSource final : public RandomSource {
 public:
  explicit SeededRandomSource(uint64_t seed) : state_(seed) {}
  uint64_t next_u64() override;

 private:
  uint64_t state_;
};

// A uniform draw from [0, bound) without modulo bias (draws that fall in the uneven tail are
// rejected and redrawn). bound 0 returns 0 without drawing.
uint64_t uniform_below(RandomSource& random, uint64_t bound);

}  // namespace warden
