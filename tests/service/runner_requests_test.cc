#include "service/runner_requests.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace warden::service {
namespace {

v1::RunnerMessage fetch(const std::string& task) {
  v1::RunnerMessage m;
  m.mutable_fetch_environment()->set_task_id(task);
  return m;
}

TEST(RunnerRequests, HandlesEachMessageInOrderAndEverythingPushedBeforeItEnds) {
  std::mutex mu;
  std::vector<std::string> seen;
  {
    RunnerRequests requests([&](const v1::RunnerMessage& m) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      std::lock_guard lock(mu);
      seen.push_back(m.fetch_environment().task_id());
    });
    for (int i = 0; i < 20; ++i) requests.push(fetch(std::to_string(i)));
  }
  ASSERT_EQ(seen.size(), 20u);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(seen[static_cast<size_t>(i)], std::to_string(i));
}

// The point of it: the thread that pushes is free while a message is handled.
TEST(RunnerRequests, APushReturnsWhileAnEarlierMessageIsStillBeingHandled) {
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<int> handled{0};
  RunnerRequests requests([&](const v1::RunnerMessage&) {
    released.wait();
    ++handled;
  });
  requests.push(fetch("slow"));
  requests.push(fetch("next"));
  EXPECT_EQ(handled.load(), 0);
  release.set_value();
}

TEST(RunnerRequests, AFullQueueHoldsThePusherUntilThereIsRoom) {
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  RunnerRequests requests([&](const v1::RunnerMessage&) { released.wait(); });
  // One in the handler, kMaxWaiting waiting: the next push blocks.
  for (size_t i = 0; i <= RunnerRequests::kMaxWaiting; ++i) requests.push(fetch(std::to_string(i)));
  std::atomic<bool> pushed{false};
  std::thread pusher([&] {
    requests.push(fetch("one too many"));
    pushed = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_FALSE(pushed.load());
  release.set_value();
  pusher.join();
  EXPECT_TRUE(pushed.load());
}

}  // namespace
}  // namespace warden::service
