#include "common/clock.h"

#include <openssl/rand.h>

#include <chrono>
#include <cstdio>
#include <stdexcept>

#include "common/encoding.h"

namespace warden {

int64_t SystemClock::now_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

std::string RandomIdSource::next_id(std::string_view prefix) {
  uint8_t bytes[8];
  if (RAND_bytes(bytes, sizeof bytes) != 1) throw std::runtime_error("OpenSSL RAND_bytes failed");
  return std::string(prefix) + "-" + to_hex(std::span<const uint8_t>(bytes, sizeof bytes));
}

std::string SequentialIdSource::next_id(std::string_view prefix) {
  char digits[24];
  std::snprintf(digits, sizeof digits, "%06llu", static_cast<unsigned long long>(next_++));
  return std::string(prefix) + "-" + digits;
}

}  // namespace warden
