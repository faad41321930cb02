#include "common/clock.h"

#include <chrono>
#include <cstdio>

#include "common/encoding.h"
#include "common/random_source.h"

namespace warden {

int64_t SystemClock::now_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

std::string RandomIdSource::next_id(std::string_view prefix) {
  uint8_t bytes[8];
  fill_system_random(bytes);
  return std::string(prefix) + "-" + to_hex(std::span<const uint8_t>(bytes, sizeof bytes));
}

std::string SequentialIdSource::nth(std::string_view prefix, uint64_t n) {
  char digits[24];
  std::snprintf(digits, sizeof digits, "%06llu", static_cast<unsigned long long>(n));
  return std::string(prefix) + "-" + digits;
}

std::string SequentialIdSource::next_id(std::string_view prefix) { return nth(prefix, next_++); }

}  // namespace warden
