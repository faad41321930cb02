// Counts the calls a server is executing, so a graceful stop can wait for exactly those.
//
// gRPC's Server::Shutdown(deadline) waits until the deadline whenever a client still holds
// a connection open, busy or idle; the server instead waits here for its own calls to end
// (bounded), then shuts down with no grace left to wait out. Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

namespace warden::service {

class InFlight {
 public:
  // One per call, for the duration of the handler.
  class Call {
   public:
    explicit Call(InFlight& in_flight) : in_flight_(in_flight) {
      std::lock_guard lock(in_flight_.mu_);
      ++in_flight_.calls_;
    }
    ~Call() {
      std::lock_guard lock(in_flight_.mu_);
      if (--in_flight_.calls_ == 0) in_flight_.idle_.notify_all();
    }
    Call(const Call&) = delete;
    Call& operator=(const Call&) = delete;

   private:
    InFlight& in_flight_;
  };

  // True when no call is running, waiting at most `timeout` for the running ones to end.
  bool wait_idle(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mu_);
    return idle_.wait_for(lock, timeout, [&] { return calls_ == 0; });
  }

 private:
  std::mutex mu_;
  std::condition_variable idle_;
  int calls_ = 0;  // guarded by mu_
};

}  // namespace warden::service
