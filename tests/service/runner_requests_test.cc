#include "service/runner_requests.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <new>
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
    RunnerRequests requests(
        [&](const v1::RunnerMessage& m) {
          std::this_thread::sleep_for(std::chrono::milliseconds(2));
          std::lock_guard lock(mu);
          seen.push_back(m.fetch_environment().task_id());
        },
        [](const std::string& why) { ADD_FAILURE() << why; });
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
  RunnerRequests requests(
      [&](const v1::RunnerMessage&) {
        released.wait();
        ++handled;
      },
      [](const std::string& why) { ADD_FAILURE() << why; });
  requests.push(fetch("slow"));
  requests.push(fetch("next"));
  EXPECT_EQ(handled.load(), 0);
  release.set_value();
}

TEST(RunnerRequests, AFullQueueHoldsThePusherUntilThereIsRoom) {
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  RunnerRequests requests([&](const v1::RunnerMessage&) { released.wait(); },
                          [](const std::string& why) { ADD_FAILURE() << why; });
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

// A handler that throws (a batch too big for memory, say) ends that stream's handling, not
// the server: the failure is reported once and the rest is dropped.
TEST(RunnerRequests, AHandlerThatThrowsIsReportedAndNothingAfterItIsHandled) {
  std::mutex mu;
  std::vector<std::string> seen, failures;
  {
    RunnerRequests requests(
        [&](const v1::RunnerMessage& m) {
          if (m.fetch_environment().task_id() == "bad") throw std::bad_alloc();
          std::lock_guard lock(mu);
          seen.push_back(m.fetch_environment().task_id());
        },
        [&](const std::string& why) {
          std::lock_guard lock(mu);
          failures.push_back(why);
        });
    requests.push(fetch("good"));
    requests.push(fetch("bad"));
    for (int i = 0; i < 5; ++i) requests.push(fetch("after"));
  }
  EXPECT_EQ(seen, std::vector<std::string>{"good"});
  ASSERT_EQ(failures.size(), 1u);
  EXPECT_NE(failures[0].find("bad_alloc"), std::string::npos) << failures[0];
}

}  // namespace
}  // namespace warden::service
