// Ctrl-C (SIGINT) or SIGTERM during `warden build --server`: the build is cancelled on the
// server, as the local build cancels itself, and the client goes on printing until the run's
// end is recorded. A second signal leaves at once (exit 130); the cancel request stands.
#pragma once

#include <functional>
#include <mutex>

#include "common/signal_waiter.h"

namespace warden::grpc_client {

// While alive, SIGINT and SIGTERM are taken by a thread of its own (blocked in every other
// thread: construct it before gRPC starts its threads). The first one calls the action set
// with on_interrupt() — at once, or when it is set if the signal came first; thread-safe.
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

}  // namespace warden::grpc_client
