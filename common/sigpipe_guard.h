// Writing to a pipe or socket whose reader is gone raises SIGPIPE, which kills the process
// by default. SigpipeGuard turns that into an EPIPE from the write, on the calling thread
// only, for the guard's lifetime: used around writes to a child's stdin (common/subprocess.cc)
// and to a Redis server that may have closed the connection (store/redis_state_store.cc).
#pragma once

#include <pthread.h>
#include <signal.h>

#include <cerrno>
#include <ctime>

namespace warden {

// Blocks SIGPIPE on this thread for its lifetime, and discards one raised meanwhile: a
// write to a reader that went away then fails with EPIPE instead of killing us.
// (A signal a write raises is directed at the writing thread, so others are unaffected.)
class SigpipeGuard {
 public:
  SigpipeGuard() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_, &old_);
  }
  ~SigpipeGuard() {
    sigset_t pending;
    sigpending(&pending);
    if (sigismember(&pending, SIGPIPE) && !sigismember(&old_, SIGPIPE)) {
      timespec zero{0, 0};
      while (sigtimedwait(&pipe_, nullptr, &zero) < 0 && errno == EINTR) {
      }
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  SigpipeGuard(const SigpipeGuard&) = delete;
  SigpipeGuard& operator=(const SigpipeGuard&) = delete;

 private:
  sigset_t pipe_{}, old_{};
};

}  // namespace warden
