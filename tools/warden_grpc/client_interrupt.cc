#include "tools/warden_grpc/client_interrupt.h"

#include <pthread.h>
#include <signal.h>

#include <cstdlib>

#include "tools/warden/run_view.h"

namespace warden::grpc_client {
namespace {

// SIGUSR1 wakes the waiter to end it.
sigset_t waited_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGUSR1);
  return set;
}

}  // namespace

InterruptToCancel::InterruptToCancel() {
  sigset_t set = waited_signals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);  // threads started from here on inherit it
  waiter_ = std::thread([this, set] {
    for (;;) {
      int sig = 0;
      if (sigwait(&set, &sig) != 0) continue;
      if (sig == SIGUSR1) return;
      std::function<void()> action;
      {
        std::lock_guard lock(mutex_);
        if (interrupted_) std::_Exit(cli::kCancelled);
        interrupted_ = true;
        action = action_;
      }
      if (action) action();
    }
  });
}

InterruptToCancel::~InterruptToCancel() {
  pthread_kill(waiter_.native_handle(), SIGUSR1);
  waiter_.join();
  sigset_t set = waited_signals();
  pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
}

void InterruptToCancel::on_interrupt(std::function<void()> action) {
  bool now = false;
  {
    std::lock_guard lock(mutex_);
    action_ = action;
    now = interrupted_;
  }
  if (now) action();
}

}  // namespace warden::grpc_client
