// A step's watchdog: when the budget runs out before the step ends, it requests a stop on
// the step's stop source (which kills its sandboxes and ends its pipeline) and remembers
// that it fired, so the kernel can tell a timeout from a cancellation.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <stop_token>
#include <thread>

namespace warden::kernel {

class Watchdog {
 public:
  Watchdog(std::chrono::milliseconds budget, std::stop_source target)
      : deadline_(std::chrono::steady_clock::now() + budget), target_(std::move(target)),
        thread_([this](std::stop_token done) { watch(done); }) {}
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;
  ~Watchdog() {
    thread_.request_stop();
    thread_.join();
  }

  bool fired() const { return fired_.load(); }
  std::chrono::milliseconds remaining() const {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - std::chrono::steady_clock::now());
    return std::max(left, std::chrono::milliseconds(1));
  }

 private:
  void watch(std::stop_token done) {
    std::unique_lock lock(mutex_);
    if (!wake_.wait_until(lock, done, deadline_, [] { return false; }) && !done.stop_requested()) {
      fired_ = true;
      target_.request_stop();
    }
  }

  std::chrono::steady_clock::time_point deadline_;
  std::stop_source target_;
  std::atomic<bool> fired_{false};
  std::mutex mutex_;
  std::condition_variable_any wake_;
  std::jthread thread_;  // last: it starts watching once everything above exists
};

}  // namespace warden::kernel
