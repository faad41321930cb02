#include "common/signal_waiter.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include <gtest/gtest.h>

namespace warden {
namespace {

bool wait_for(const std::atomic<int>& value, int want) {
  for (int i = 0; i < 500 && value.load() != want; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  return value.load() == want;
}

TEST(SignalWaiter, TakesSigintAndSigtermInsteadOfDying) {
  std::atomic<int> last{0}, count{0};
  {
    SignalWaiter waiter([&](int sig) {
      last = sig;
      ++count;
    });
    ASSERT_EQ(::kill(::getpid(), SIGINT), 0);
    ASSERT_TRUE(wait_for(count, 1));
    EXPECT_EQ(last.load(), SIGINT);
    ASSERT_EQ(::kill(::getpid(), SIGTERM), 0);
    ASSERT_TRUE(wait_for(count, 2));
    EXPECT_EQ(last.load(), SIGTERM);
  }
  // Gone, it leaves the signals unblocked in this thread as it found them.
  sigset_t blocked;
  ASSERT_EQ(pthread_sigmask(SIG_BLOCK, nullptr, &blocked), 0);
  EXPECT_FALSE(sigismember(&blocked, SIGINT));
  EXPECT_FALSE(sigismember(&blocked, SIGTERM));
  EXPECT_EQ(count.load(), 2);
}

TEST(SignalWaiter, ThreadsStartedAfterItLeaveTheSignalsToIt) {
  std::atomic<int> count{0};
  SignalWaiter waiter([&](int) { ++count; });
  bool blocked_there = false;
  std::thread([&] {
    sigset_t blocked;
    pthread_sigmask(SIG_BLOCK, nullptr, &blocked);
    blocked_there = sigismember(&blocked, SIGINT) && sigismember(&blocked, SIGTERM);
  }).join();
  EXPECT_TRUE(blocked_there);
}

}  // namespace
}  // namespace warden
