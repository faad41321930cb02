// PrefetchingRunner: a Runner over a pool of worker threads that can start runs before anyone
// asks for them. The merge queue (kernel/build/merge_queue.h) prefetches every run a round's
// speculation will need — each queued proposal on the tree of the steps ahead of it, its base's
// tests, its oracle run — and then settles the steps in commit order through the ordinary
// step stages, whose run() calls take the prefetched outcome of an identical request (same
// trees, diff, checks and reuse) or, when there is none, run it now on a worker and wait.
// What a run returns does not depend on when it ran, so a decision is the same whichever
// way its run came; only the time differs.
//
// Each worker owns a Runner and a GitRepo of its own (LocalRunner and libgit2 handles are
// one-thread objects); a pool of one worker over a shared Runner serializes every run on it.
// Ownership: the pool owns its workers' GitRepos and, when given, their Runners.
// Threads: prefetch(), run(), drop_unused() and the destructor are for one thread (the
// build's); the workers only run requests. The destructor cancels what is queued or running
// and joins the workers.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "runner/check/runner.h"

namespace warden {

// What a prefetched run was for, as the merge queue records it when the run goes unused.
struct PrefetchLabel {
  std::string step_id;
  int64_t attempt = 0;
  std::string run;        // checks | base | oracle
  std::string base_tree;  // the speculative base it assumed
  std::optional<Digest> diff_sha256;  // the diff it layered (the proposal's, or its oracle diff)
};

// A prefetched run no one took. Whether it had finished is not said: that is timing, and
// what the queue records of it must not depend on timing.
struct UnusedRun {
  PrefetchLabel label;
  std::string tree;
  // Base checkouts the run found tampered with and rebuilt (when it got that far): evidence
  // of an attack on the runner's cache, which must not be lost with the run.
  std::vector<DiscardedCheckout> discarded_checkouts;
};

class PrefetchingRunner final : public Runner {
 public:
  struct Worker {
    Runner* runner = nullptr;             // borrowed, or owned through `owned`
    std::unique_ptr<Runner> owned;
    GitRepo repo;                         // the worker's own handle on the repository
  };

  explicit PrefetchingRunner(std::vector<Worker> workers);
  ~PrefetchingRunner() override;
  PrefetchingRunner(const PrefetchingRunner&) = delete;
  PrefetchingRunner& operator=(const PrefetchingRunner&) = delete;

  // Queues `request` (its tree must be set; `diff`, when given, is the request's diff and
  // is kept alive with it). An identical request already pending is not queued twice.
  void prefetch(RunRequest request, std::optional<Diff> diff, PrefetchLabel label);

  // The prefetched outcome of an identical request, waited for; else the request run now on
  // a worker, waited for. `repo` is not used: each worker reads through its own handle.
  // A stop of request.stop while waiting cancels the run.
  Checked<RunOutcome> run(GitRepo& repo, const RunRequest& request) override;

  // Every prefetched run run() did not take, in the order prefetched: queued ones dropped,
  // running ones cancelled and waited for.
  std::vector<UnusedRun> drop_unused();

  size_t workers() const { return workers_.size(); }

 private:
  struct Job {
    std::string key;
    RunRequest request;
    std::optional<Diff> diff;
    std::optional<PrefetchLabel> label;  // none: run() asked for it directly
    std::stop_source stop;
    bool started = false, done = false, taken = false;
    std::optional<Checked<RunOutcome>> outcome;
  };

  void work(std::stop_token stop, size_t index);
  // `urgent`: someone waits for it now; it goes ahead of the prefetched runs.
  std::shared_ptr<Job> submit(RunRequest request, std::optional<Diff> diff, std::optional<PrefetchLabel> label, bool urgent);
  Checked<RunOutcome> wait(const std::shared_ptr<Job>& job, std::stop_token stop);

  std::vector<Worker> workers_;
  std::mutex mu_;
  std::condition_variable_any cv_;
  std::deque<std::shared_ptr<Job>> queue_;     // guarded by mu_: not yet started
  std::list<std::shared_ptr<Job>> prefetched_;  // guarded by mu_: prefetched and not taken, in order
  std::vector<std::jthread> threads_;          // last: joined before the state above goes
};

// A request's identity for prefetching: the trees, the diff, the checks' specs, reuse.
std::string run_request_key(const RunRequest& request);

}  // namespace warden
