// "Still working" notices for people while part of a step runs long: the executor proposing,
// the checks running. A WorkTicker started around that work calls the session's on_working
// after each whole second it has run (from its own thread), and stops when destroyed.
//
// Never recorded: a duration on the wall clock is not evidence, and a golden run's ledger
// must not depend on how fast the host is. So these are not RunEvents; the CLI prints them on
// stderr (`  [2/5] s2: executor working… 3s`), and nothing else sees them.
//
// Thread-safety: the listener is called from the ticker's thread, never after the destructor
// returns; it must not call back into the build. A ticker without a listener starts no thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <stop_token>
#include <string>
#include <thread>

namespace warden::kernel {

struct WorkingNotice {
  int64_t step_index = 0;   // 0-based, in the plan
  int64_t steps_total = 0;  // the plan's steps
  std::string step_id;
  std::string what;  // "executor", "checks", "base checks", "oracle checks"
  std::chrono::seconds elapsed{0};
};

using WorkingListener = std::function<void(const WorkingNotice&)>;

class WorkTicker {
 public:
  WorkTicker(const WorkingListener& listener, WorkingNotice notice) : listener_(listener), notice_(std::move(notice)) {
    if (listener_) thread_ = std::jthread([this](std::stop_token done) { tick(done); });
  }
  WorkTicker(const WorkTicker&) = delete;
  WorkTicker& operator=(const WorkTicker&) = delete;
  ~WorkTicker() {
    if (!thread_.joinable()) return;
    thread_.request_stop();
    thread_.join();
  }

 private:
  void tick(std::stop_token done) {
    const auto start = std::chrono::steady_clock::now();
    std::unique_lock lock(mutex_);
    for (int64_t seconds = 1;; ++seconds) {
      // Sleeps until the next whole second, or returns at once when the work is done.
      if (wake_.wait_until(lock, done, start + std::chrono::seconds(seconds), [] { return false; }) ||
          done.stop_requested()) {
        return;
      }
      notice_.elapsed = std::chrono::seconds(seconds);
      listener_(notice_);
    }
  }

  const WorkingListener& listener_;
  WorkingNotice notice_;
  std::mutex mutex_;
  std::condition_variable_any wake_;
  std::jthread thread_;  // last: it starts once everything above exists
};

}  // namespace warden::kernel
