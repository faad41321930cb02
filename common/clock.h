// Time and identifiers enter Warden only through these interfaces, so a golden run can
// swap in a logical clock and sequential ids and get byte-identical ledgers.
//
// Callers borrow a Clock or IdSource by reference; whoever built it (a session, a test) owns
// it and must keep it alive. SystemClock and RandomIdSource hold no state and are safe to
// share between threads. LogicalClock and SequentialIdSource are plain counters with no lock:
// not thread-safe, and that is deliberate — a golden run is single-threaded, and only a fixed
// call order gives the same sequence.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace warden {

class Clock {
 public:
  virtual ~Clock() = default;
  // Milliseconds since the Unix epoch (or logical ticks for LogicalClock).
  virtual int64_t now_ms() = 0;
};

class SystemClock final : public Clock {
 public:
  int64_t now_ms() override;
};

// Returns start, start+step, start+2*step, ... : the same sequence on every run.
class LogicalClock final : public Clock {
 public:
  explicit LogicalClock(int64_t start = 0, int64_t step = 1) : next_(start), step_(step) {}
  int64_t now_ms() override {
    int64_t t = next_;
    next_ += step_;
    return t;
  }

 private:
  int64_t next_;
  int64_t step_;
};

class IdSource {
 public:
  virtual ~IdSource() = default;
  // A fresh id such as "run-3f9c0a1b2c3d4e5f", unique within this source.
  virtual std::string next_id(std::string_view prefix) = 0;
};

// 64 random bits from the kernel's CSPRNG per id (fill_system_random(), which throws
// std::runtime_error if the kernel refuses).
class RandomIdSource final : public IdSource {
 public:
  std::string next_id(std::string_view prefix) override;
};

// "prefix-000001", "prefix-000002", ... for golden runs.
class SequentialIdSource final : public IdSource {
 public:
  explicit SequentialIdSource(uint64_t start = 1) : next_(start) {}
  std::string next_id(std::string_view prefix) override;
  // The `n`th id such a source gives for `prefix`: "prefix-00000n".
  static std::string nth(std::string_view prefix, uint64_t n);

 private:
  uint64_t next_;
};

}  // namespace warden
