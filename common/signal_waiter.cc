#include "common/signal_waiter.h"

#include <pthread.h>
#include <signal.h>

namespace warden {
namespace {

// SIGUSR1 is the waiter's own "no more waiting", sent by the destructor.
sigset_t waited_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGUSR1);
  return set;
}

}  // namespace

SignalWaiter::SignalWaiter(std::function<void(int)> on_signal) {
  sigset_t set = waited_signals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);  // threads started from here on inherit it
  waiter_ = std::thread([set, on_signal = std::move(on_signal)] {
    for (;;) {
      int sig = 0;
      if (sigwait(&set, &sig) != 0) continue;
      if (sig == SIGUSR1) return;
      on_signal(sig);
    }
  });
}

SignalWaiter::~SignalWaiter() {
  pthread_kill(waiter_.native_handle(), SIGUSR1);
  waiter_.join();
  sigset_t set = waited_signals();
  pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
}

}  // namespace warden
