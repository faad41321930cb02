// WorkTicker: a notice after each whole second the work runs, from its own thread, none once
// the work is done (the destructor returns at once, without waiting out the second), and no
// thread at all without a listener.
#include "kernel/build/work_ticker.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

namespace warden::kernel {
namespace {

using namespace std::chrono_literals;

TEST(WorkTicker, TellsEachWholeSecondUntilTheWorkIsDone) {
  std::mutex mutex;
  std::vector<WorkingNotice> heard;
  WorkingListener listener = [&](const WorkingNotice& n) {
    std::lock_guard lock(mutex);
    heard.push_back(n);
  };
  const auto start = std::chrono::steady_clock::now();
  {
    WorkTicker ticker(listener, WorkingNotice{.step_index = 1, .steps_total = 5, .step_id = "s2", .what = "executor"});
    std::this_thread::sleep_for(2300ms);
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2800ms) << "the ticker outlived its work";
  std::this_thread::sleep_for(1200ms);  // nothing more after the destructor
  std::lock_guard lock(mutex);
  ASSERT_EQ(heard.size(), 2u);
  EXPECT_EQ(heard[0].elapsed, 1s);
  EXPECT_EQ(heard[1].elapsed, 2s);
  EXPECT_EQ(heard[1].step_id, "s2");
  EXPECT_EQ(heard[1].what, "executor");
  EXPECT_EQ(heard[1].steps_total, 5);
}

TEST(WorkTicker, ShortWorkIsNeverMentioned) {
  std::atomic<int> heard{0};
  WorkingListener listener = [&](const WorkingNotice&) { ++heard; };
  { WorkTicker ticker(listener, WorkingNotice{}); }
  WorkingListener none;
  { WorkTicker ticker(none, WorkingNotice{}); }
  std::this_thread::sleep_for(1100ms);
  EXPECT_EQ(heard.load(), 0);
}

}  // namespace
}  // namespace warden::kernel
