// How many waiting calls (Attach, WatchRun, Pipeline.Watch: streams that hold a server thread
// for as long as a run lives or an executor waits) one caller may hold at once. The sync gRPC
// server gives every call a thread of a bounded pool (--max-calls); without a share per caller
// one token's idle streams could take every thread and lock out every other caller, admins
// and health checks included. Thread-safe.
#pragma once

#include <cstddef>
#include <map>
#include <mutex>
#include <optional>
#include <string>

namespace warden::service {

class StreamQuota {
 public:
  explicit StreamQuota(size_t per_caller) : per_caller_(per_caller == 0 ? 1 : per_caller) {}
  StreamQuota(const StreamQuota&) = delete;
  StreamQuota& operator=(const StreamQuota&) = delete;

  // One held stream, given back when destroyed.
  class Held {
   public:
    Held(Held&& other) noexcept : quota_(other.quota_), caller_(std::move(other.caller_)) { other.quota_ = nullptr; }
    Held& operator=(Held&&) = delete;
    ~Held() {
      if (!quota_) return;
      std::lock_guard lock(quota_->mu_);
      if (--quota_->held_[caller_] == 0) quota_->held_.erase(caller_);
    }

   private:
    friend class StreamQuota;
    Held(StreamQuota* quota, std::string caller) : quota_(quota), caller_(std::move(caller)) {}
    StreamQuota* quota_;
    std::string caller_;
  };

  // A stream for `caller`, or nullopt when it holds its share already.
  std::optional<Held> acquire(const std::string& caller) {
    std::lock_guard lock(mu_);
    size_t& n = held_[caller];
    if (n >= per_caller_) return std::nullopt;
    ++n;
    return Held(this, caller);
  }
  size_t per_caller() const { return per_caller_; }

 private:
  const size_t per_caller_;
  std::mutex mu_;
  std::map<std::string, size_t> held_;  // guarded by mu_; callers holding none are absent
};

}  // namespace warden::service
