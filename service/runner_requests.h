// RunnerRequests: what an enrolled runner asks and answers (object and environment fetches,
// results, failure reports), handled in the order it was sent on a thread of its own.
//
// A runner's stream is read by one thread, and its heartbeats keep the runner alive: serving
// a batch of environment files (megabytes read from disk) or checking a result can take
// longer than the heartbeat bound on a loaded server, and a reader busy with either would
// leave the heartbeats behind it unread until the runner was declared failed. So the reader
// takes heartbeats itself and hands everything else here.
//
// At most kMaxWaiting messages wait: an honest runner asks once and waits for the answer, so
// a reader that finds the queue full blocks (and takes no more from a runner that floods it)
// rather than holding a backlog of messages of up to the stream's message size each.
//
// A handler that throws (out of memory for a batch, say) does not end the process: what is
// left of the stream's messages is dropped and `failed` is called with the reason, once.
//
// Threads: push() from the stream's reader only; the handler runs on the worker thread, one
// message at a time. The destructor handles every message already pushed, then joins: what
// the runner sent before its stream ended is handled, as it would have been in line.
#pragma once

#include <fleet.grpc.pb.h>  // generated from proto/fleet.proto

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace warden::service {

class RunnerRequests {
 public:
  static constexpr size_t kMaxWaiting = 1;

  // `handle` is called on the worker thread for each message pushed, in order; `failed`
  // there too, when `handle` threw.
  RunnerRequests(std::function<void(const v1::RunnerMessage&)> handle, std::function<void(const std::string& why)> failed);
  ~RunnerRequests();
  RunnerRequests(const RunnerRequests&) = delete;
  RunnerRequests& operator=(const RunnerRequests&) = delete;

  // Queues `message`; waits while kMaxWaiting are queued.
  void push(v1::RunnerMessage message);

 private:
  void run();

  std::function<void(const v1::RunnerMessage&)> handle_;
  std::function<void(const std::string&)> failed_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<v1::RunnerMessage> waiting_;  // guarded by mu_
  bool ending_ = false;                    // guarded by mu_
  bool broken_ = false;                    // guarded by mu_: a handler threw; nothing more is handled
  std::thread worker_;                     // last: started once the rest is built
};

}  // namespace warden::service
