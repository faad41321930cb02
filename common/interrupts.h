// What SIGINT and SIGTERM do in a process that must end cleanly rather than die: a build
// or `warden propose` stops at its next safe point (CancelOnSignal); a client of a server
// build cancels the run on the server and keeps printing until its end is recorded, and a
// remote runner leaves its session (InterruptToCancel).
//
// Each holds a SignalWaiter (common/signal_waiter.h): construct it before any other thread
// starts (gRPC's included), so the signals are blocked in every thread but its own. The
// callbacks run on that thread.
#pragma once

#include <functional>
#include <mutex>
#include <stop_token>

#include "common/signal_waiter.h"

namespace warden {

// While alive, SIGINT and SIGTERM request a stop on token() instead of killing the process.
class CancelOnSignal {
 public:
  CancelOnSignal() = default;
  std::stop_token token() const { return source_.get_token(); }

 private:
  std::stop_source source_;
  SignalWaiter waiter_{[this](int) { source_.request_stop(); }};  // after source_: it stops first
};

// While alive, the first SIGINT or SIGTERM calls the action set with on_interrupt() — at
// once, or when it is set if the signal came first; a second one leaves at once (exit 130).
// Thread-safe.
class InterruptToCancel {
 public:
  InterruptToCancel() = default;

  void on_interrupt(std::function<void()> action);

 private:
  void interrupted();

  std::mutex mutex_;
  std::function<void()> action_;
  bool interrupted_ = false;
  SignalWaiter waiter_{[this](int) { interrupted(); }};  // last: it stops before the rest goes
};

}  // namespace warden
