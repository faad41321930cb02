#include "runner/check/prefetching_runner.h"

#include <algorithm>

namespace warden {

std::string run_request_key(const RunRequest& request) {
  std::string key = request.base_tree.hex();
  key += '|';
  key += request.tree ? request.tree->hex() : std::string("-");
  key += '|';
  key += request.diff ? request.diff->digest().str() : std::string("-");
  for (const CheckSpec& c : request.checks) key += "|" + c.digest().str();
  key += request.reuse ? "|reuse" : "|fresh";
  for (const OverlayFile& f : request.overlay) key += "|" + f.path + "@" + sha256(f.content).str();
  return key;
}

PrefetchingRunner::PrefetchingRunner(std::vector<Worker> workers) : workers_(std::move(workers)) {
  for (Worker& w : workers_) {
    if (w.owned) w.runner = w.owned.get();
  }
  threads_.reserve(workers_.size());
  for (size_t i = 0; i < workers_.size(); ++i) {
    threads_.emplace_back([this, i](std::stop_token stop) { work(stop, i); });
  }
}

PrefetchingRunner::~PrefetchingRunner() {
  {
    std::lock_guard lock(mu_);
    for (auto& job : queue_) job->stop.request_stop();
    for (auto& job : prefetched_) job->stop.request_stop();
  }
  for (auto& t : threads_) t.request_stop();
  cv_.notify_all();
  threads_.clear();  // joins
}

void PrefetchingRunner::work(std::stop_token stop, size_t index) {
  Worker& worker = workers_[index];
  for (;;) {
    std::shared_ptr<Job> job;
    {
      std::unique_lock lock(mu_);
      if (!cv_.wait(lock, stop, [&] { return !queue_.empty(); })) return;
      job = std::move(queue_.front());
      queue_.pop_front();
      job->started = true;
    }
    if (job->stop.stop_requested()) {  // cancelled while queued: nothing to run
      {
        std::lock_guard lock(mu_);
        job->outcome = std::unexpected(Refusal{RefusalCode::runner_error, "", "cancelled before the run started"});
        job->done = true;
      }
      cv_.notify_all();
      continue;
    }
    RunRequest request = job->request;
    if (job->diff) request.diff = &*job->diff;
    request.stop = job->stop.get_token();
    // A runner that throws (a bug, or bytes a library refuses) fails its run, not the process.
    Checked<RunOutcome> outcome = [&]() -> Checked<RunOutcome> {
      try {
        return worker.runner->run(worker.repo, request);
      } catch (const std::exception& e) {
        return std::unexpected(Refusal{RefusalCode::runner_error, "", std::string("internal error: ") + e.what()});
      }
    }();
    {
      std::lock_guard lock(mu_);
      job->outcome = std::move(outcome);
      job->done = true;
    }
    cv_.notify_all();
  }
}

std::shared_ptr<PrefetchingRunner::Job> PrefetchingRunner::submit(RunRequest request, std::optional<Diff> diff,
                                                                  std::optional<PrefetchLabel> label, bool urgent) {
  auto job = std::make_shared<Job>();
  job->diff = std::move(diff);
  request.diff = job->diff ? &*job->diff : nullptr;
  job->key = run_request_key(request);
  request.diff = nullptr;  // the worker points it at job->diff
  request.stop = {};       // the job's own stop source cancels it
  job->request = std::move(request);
  job->label = std::move(label);
  {
    std::lock_guard lock(mu_);
    // A run someone waits for goes first; prefetched runs in the order the queue settles.
    if (urgent) queue_.push_front(job);
    else queue_.push_back(job);
    if (job->label) prefetched_.push_back(job);
  }
  cv_.notify_all();
  return job;
}

void PrefetchingRunner::prefetch(RunRequest request, std::optional<Diff> diff, PrefetchLabel label) {
  request.diff = diff ? &*diff : nullptr;
  const std::string key = run_request_key(request);
  {
    std::lock_guard lock(mu_);
    if (std::any_of(prefetched_.begin(), prefetched_.end(), [&](const auto& j) { return j->key == key; })) return;
  }
  (void)submit(std::move(request), std::move(diff), std::move(label), false);
}

Checked<RunOutcome> PrefetchingRunner::wait(const std::shared_ptr<Job>& job, std::stop_token stop) {
  std::unique_lock lock(mu_);
  if (!cv_.wait(lock, stop, [&] { return job->done; })) {
    // Stopped: a job no worker took is dropped; a running one is cancelled and waited for,
    // which its sandbox makes quick.
    if (!job->started) {
      std::erase(queue_, job);
      return std::unexpected(Refusal{RefusalCode::runner_error, "", "stopped before the run started"});
    }
    job->stop.request_stop();
    cv_.wait(lock, [&] { return job->done; });
  }
  return std::move(*job->outcome);
}

Checked<RunOutcome> PrefetchingRunner::run(GitRepo& repo, const RunRequest& request) {
  (void)repo;
  const std::string key = run_request_key(request);
  std::shared_ptr<Job> job;
  {
    std::lock_guard lock(mu_);
    auto it = std::find_if(prefetched_.begin(), prefetched_.end(), [&](const auto& j) { return j->key == key; });
    if (it != prefetched_.end()) {
      job = *it;
      job->taken = true;
      prefetched_.erase(it);
      // Waited for now: ahead of the runs the steps behind it will want.
      if (!job->started) {
        std::erase(queue_, job);
        queue_.push_front(job);
      }
    }
  }
  if (!job) {
    std::optional<Diff> diff;
    if (request.diff) diff = *request.diff;
    job = submit(request, std::move(diff), std::nullopt, true);
  }
  return wait(job, request.stop);
}

std::vector<UnusedRun> PrefetchingRunner::drop_unused() {
  std::list<std::shared_ptr<Job>> unused;
  {
    std::lock_guard lock(mu_);
    unused.swap(prefetched_);
    for (auto& job : unused) {
      job->stop.request_stop();
      if (!job->started) {
        std::erase(queue_, job);
        job->done = true;
        job->outcome = std::unexpected(Refusal{RefusalCode::repository_error, "", "dropped before it started"});
      }
    }
  }
  std::vector<UnusedRun> out;
  std::unique_lock lock(mu_);
  for (auto& job : unused) {
    cv_.wait(lock, [&] { return job->done; });
    UnusedRun u{*job->label, job->request.tree ? job->request.tree->hex() : std::string(), {}};
    if (job->outcome && job->outcome->has_value()) u.discarded_checkouts = (*job->outcome)->discarded_checkouts;
    out.push_back(std::move(u));
  }
  return out;
}

}  // namespace warden
