// A merge-queue plan's run (build_loop_internal.h, merge_queue.h): its rounds, and the pool of
// runners its jobs use.
#include <algorithm>

#include "kernel/build/build_loop_internal.h"
#include "kernel/build/merge_queue.h"

namespace warden::kernel::detail {

// A merge-queue plan (merge_queue.h): rounds over a pool of runners, one per job when
// this host's sandbox runs the checks (a LocalRunner is a one-thread object), else the one
// runner the session gave; a step out of retries gets a replacement plan as a sequential
// step does.
Status Build::run_queue() {
  if (Status st = open_held_out(); !st) return end(RunStatus::failed, ErrorType::execution_error, st.error().message);
  auto pool = runner_pool();
  if (!pool) return end(RunStatus::failed, ErrorType::execution_error, pool.error().message);
  for (;;) {
    QueueSite site{.rec = rec_,
                   .workspace = workspace_,
                   .runner = **pool,
                   .proposer = proposer_,
                   .plan = plan_,
                   .policy = *policy_,
                   .plan_sha256 = summary_.plan_sha256,
                   .policy_sha256 = summary_.policy_sha256,
                   .start_tree = start_tree_,
                   .completed = completed_,
                   .head = head_,
                   .previous_run = previous_run_,
                   .refusals = refusals_,
                   .verdicts = summary_.verdicts,
                   .steps_completed = summary_.steps_completed,
                   .replan_events = replan_events_,
                   .stop = session_.stop,
                   .step_budget_ms = step_budget_ms(),
                   .jobs = std::max(options_.jobs, 1),
                   .on_working = session_.on_working,
                   .held_out = held_out_ ? &*held_out_ : nullptr,
                   .vault = vault_ ? &*vault_ : nullptr,
                   .held_out_runner = held_out_runner_.get()};
    auto out = run_merge_queue(site);
    if (!out) return std::unexpected(out.error());
    current_index_ = out->step_index;
    switch (out->end) {
      case QueueEnd::done:
        if (Status st = move(RunStatus::verifying); !st) return st;
        return finish();
      case QueueEnd::timeout:
        return end(RunStatus::timeout, ErrorType::timeout_error, out->error);
      case QueueEnd::cancelled:
        return end(RunStatus::cancelled, ErrorType::cancelled, out->error);
      case QueueEnd::failed:
        return end(RunStatus::failed, ErrorType::execution_error, out->error);
      case QueueEnd::exhausted: {
        last_attempts_ = out->attempts;
        const BuildStep* failed = plan_.find(out->step_id);
        auto replanned = replan(*failed);
        if (!replanned) return std::unexpected(replanned.error());
        if (!*replanned) return {};
        break;
      }
    }
  }
}

Result<std::unique_ptr<PrefetchingRunner>> Build::runner_pool() {
  std::vector<PrefetchingRunner::Worker> workers;
  // This host's sandbox: a LocalRunner per job. The session's runner or the remote
  // runners' channel: shared by every job when it takes concurrent runs, else one job.
  // No more than a round can use: three runs (base, checks, oracle) per step in the window.
  const int asked = std::max(options_.jobs, 1);
  const int useful = static_cast<int>(std::min<int64_t>(asked, 3 * plan_.merge_queue_depth.value_or(1)));
  const int jobs = another_runner_ || runner_.concurrent() ? useful : 1;
  summary_.jobs = jobs;
  if (jobs < asked) {
    summary_.jobs_note = jobs < useful ? "one job: " + one_job_why_
                                       : std::to_string(jobs) + " jobs: a round of depth " +
                                             std::to_string(*plan_.merge_queue_depth) + " runs at most that many at once";
  }
  for (int i = 0; i < jobs; ++i) {
    auto repo = GitRepo::open(options_.repo_dir);
    if (!repo) return fail(Errc::internal, "opening the repository for a runner: " + repo.error().message());
    PrefetchingRunner::Worker w{.runner = &runner_, .owned = nullptr, .repo = std::move(*repo)};
    if (i > 0 && another_runner_) {
      auto made = another_runner_();
      if (!made) return std::unexpected(made.error().with_context("a runner for job " + std::to_string(i + 1)));
      w.owned = std::move(*made);
    }
    workers.push_back(std::move(w));
  }
  return std::make_unique<PrefetchingRunner>(std::move(workers));
}

}  // namespace warden::kernel::detail
