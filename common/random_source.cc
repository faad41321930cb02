#include "common/random_source.h"

#include <sys/random.h>

#include <cerrno>
#include <cstring>
#include <limits>
#include <stdexcept>

namespace warden {

void fill_system_random(std::span<uint8_t> out) {
  size_t done = 0;
  while (done < out.size()) {
    ssize_t n = ::getrandom(out.data() + done, out.size() - done, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw std::runtime_error(std::string("getrandom failed: ") + std::strerror(errno));
    done += static_cast<size_t>(n);
  }
}

uint64_t SystemRandomSource::next_u64() {
  uint8_t bytes[sizeof(uint64_t)];
  fill_system_random(bytes);
  uint64_t value;
  std::memcpy(&value, bytes, sizeof value);
  return value;
}

uint64_t SeededRandomSource::next_u64() {
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

uint64_t uniform_below(RandomSource& random, uint64_t bound) {
  if (bound == 0) return 0;
  // The largest multiple of bound that fits: values at or past it would favour small results.
  const uint64_t limit = std::numeric_limits<uint64_t>::max() - std::numeric_limits<uint64_t>::max() % bound;
  for (;;) {
    uint64_t value = random.next_u64();
    if (value < limit) return value % bound;
  }
}

}  // namespace warden
