// Ctrl-C (SIGINT) or SIGTERM during `warden build --server`: the build is cancelled on the
// server, as the local build cancels itself, and the client goes on printing until the run's
// end is recorded. A second signal leaves at once (exit 130); the cancel request stands.
#pragma once

#include <functional>
#include <mutex>
#include <thread>

namespace warden::grpc_client {

// While alive, SIGINT and SIGTERM are taken by a thread of its own (blocked in every other
// thread: construct it before gRPC starts its threads). The first one calls the action set
// with on_interrupt() — at once, or when it is set if the signal came first; thread-safe.
class InterruptToCancel {
 public:
  InterruptToCancel();
  ~InterruptToCancel();
  InterruptToCancel(const InterruptToCancel&) = delete;
  InterruptToCancel& operator=(const InterruptToCancel&) = delete;

  void on_interrupt(std::function<void()> action);

 private:
  std::mutex mutex_;
  std::function<void()> action_;
  bool interrupted_ = false;
  std::thread waiter_;
};

}  // namespace warden::grpc_client
