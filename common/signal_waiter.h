// Ctrl-C and SIGTERM as events instead of process death: a long command (a build, a
// proposal, a client following a run) turns them into a cancellation it can record.
#pragma once

#include <functional>
#include <thread>

namespace warden {

// While alive, SIGINT and SIGTERM are blocked in the constructing thread (so in every thread
// started from it afterwards: construct it before any library starts threads of its own) and
// taken by a thread of its own, which calls `on_signal` with each signal's number, one call
// at a time, on that thread. The destructor stops the thread and unblocks the signals; a
// signal that arrived meanwhile is then delivered as usual. Not copyable; one per process.
class SignalWaiter {
 public:
  explicit SignalWaiter(std::function<void(int)> on_signal);
  ~SignalWaiter();
  SignalWaiter(const SignalWaiter&) = delete;
  SignalWaiter& operator=(const SignalWaiter&) = delete;

 private:
  std::thread waiter_;
};

}  // namespace warden
