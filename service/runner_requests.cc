#include "service/runner_requests.h"

#include <exception>
#include <utility>

namespace warden::service {

RunnerRequests::RunnerRequests(std::function<void(const v1::RunnerMessage&)> handle,
                               std::function<void(const std::string& why)> failed)
    : handle_(std::move(handle)), failed_(std::move(failed)), worker_([this] { run(); }) {}

RunnerRequests::~RunnerRequests() {
  {
    std::lock_guard lock(mu_);
    ending_ = true;
  }
  cv_.notify_all();
  worker_.join();
}

void RunnerRequests::push(v1::RunnerMessage message) {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return waiting_.size() < kMaxWaiting || broken_; });
  if (broken_) return;
  waiting_.push_back(std::move(message));
  cv_.notify_all();
}

void RunnerRequests::run() {
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return !waiting_.empty() || ending_; });
    if (waiting_.empty()) return;
    v1::RunnerMessage message = std::move(waiting_.front());
    waiting_.pop_front();
    cv_.notify_all();  // a reader waiting for room
    lock.unlock();
    std::string why;
    try {
      handle_(message);
    } catch (const std::exception& e) {
      why = e.what();
    } catch (...) {
      why = "an unknown exception";
    }
    lock.lock();
    if (!why.empty()) {
      broken_ = true;
      waiting_.clear();
      cv_.notify_all();
      lock.unlock();
      failed_("handling its message failed: " + why);
      return;
    }
  }
}

}  // namespace warden::service
