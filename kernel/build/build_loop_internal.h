// The run behind run_build() and run_plan() (build_loop.h), private to kernel/build. Its parts,
// each in a file of its own:
//   build_loop.cc   the run's course: lifecycle, plan adoption, steps in order, replans, the
//                   end and its seal (the summary, the signed checkpoint)
//   build_step.cc   one step through its pipeline (propose -> run -> verify -> commit)
//   build_queue.cc  a merge-queue plan's rounds and the pool of runners its jobs use
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "executor/state_machine.h"
#include "kernel/build/build_loop.h"
#include "kernel/build/build_setup.h"
#include "kernel/build/step_stages.h"
#include "kernel/judge/held_out_vault.h"
#include "kernel/plan/held_out.h"
#include "kernel/record/ledger_writer.h"
#include "kernel/record/plan_commit.h"
#include "kernel/record/records.h"
#include "kernel/record/run_recorder.h"
#include "runner/check/prefetching_runner.h"

namespace warden::kernel::detail {

// One run: its lifecycle, the plan it follows, and the steps it walks. Setup (build_setup.h)
// has already opened the ledger, repository and runner; each step runs its stages
// (step_stages.h) on the pipeline executor; artifacts and replanning have their own files.
class Build {
 public:
  Build(const BuildOptions& options, KernelSession& session, executor::Proposer& proposer, BuildSite& site)
      : options_(options), session_(session), proposer_(proposer), kl_(site.ledger), workspace_(site.repo.workspace),
        runner_(*site.runner), another_runner_(std::move(site.another_runner)), one_job_why_(std::move(site.one_job_why)), make_held_out_runner_(std::move(site.held_out_runner)), rec_(kl_, session.clock, session.ids, session.on_event, site.run_id), life_(site.run_id) {
    summary_.run_id = site.run_id;
    summary_.recovered = std::move(site.recovered);
  }

  Status start(const BlueprintSpec* blueprint, const Policy& policy);
  Result<bool> adopt_plan(BuildPlan plan, PlanSource source, const std::optional<PlanAuthor>& author = std::nullopt);
  Status run_steps(const ObjectId& base_commit);
  Status end(RunStatus terminal, ErrorType type, std::string message);
  void note_base_attributes();
  bool ended() const { return is_terminal(life_.status()); }
  BuildSummary& summary() { return summary_; }
  const std::string& run_id() const { return summary_.run_id; }

 private:
  // What one step's pipeline carries between its stages: the attempt in flight, and what
  // the step has gathered so far.
  struct StepState {
    Attempt attempt;
    std::optional<BaseRun> base;  // the step's base tested, by its first run stage
    int64_t attempts = 0;
    std::vector<Artifact> artifacts;
    std::optional<std::string> error;
  };

  int64_t step_budget_ms() const { return options_.step_timeout_ms.value_or(plan_.step_timeout_ms); }

  // A step that ended the run: false, or the error that kept the end from being recorded.
  static Result<bool> ended(Status st) {
    if (!st) return std::unexpected(st.error());
    return false;
  }

  static executor::StageResult fail_stage(StepState& state, std::string message) {
    state.error = message;
    return executor::StageResult::failure(std::move(message));
  }

  // The run's course (build_loop.cc).
  Status move(RunStatus to);
  Status status_record();
  Status finish();
  Status seal();
  Status reveal_held_out_at_end();
  Result<bool> replan(const BuildStep& failed);

  // A merge-queue plan (build_queue.cc).
  Status run_queue();
  Result<std::unique_ptr<PrefetchingRunner>> runner_pool();

  // One step (build_step.cc).
  Status open_held_out();
  Result<bool> run_step(size_t index);
  template <typename F>
  std::unique_ptr<executor::StageAgent> stage(StepState& state, F f);
  executor::StageResult propose_stage(const StepContext& ctx, StepState& state);
  executor::StageResult run_stage(const StepContext& ctx, StepState& state);
  executor::StageResult verify_stage(const StepContext& ctx, StepState& state);
  executor::StageResult commit_stage(const StepContext& ctx, StepState& state);

  const BuildOptions& options_;
  std::optional<HeldOutVault> vault_;     // with held_out_: where it and its runs are sealed
  std::optional<HeldOutBundle> held_out_;  // the plan's held-out bundle, once opened
  KernelSession& session_;
  executor::Proposer& proposer_;
  LedgerWriter kl_;
  Workspace& workspace_;
  Runner& runner_;
  std::function<Result<std::unique_ptr<Runner>>()> another_runner_;  // for a merge queue's jobs
  std::string one_job_why_;
  std::function<Result<std::unique_ptr<Runner>>()> make_held_out_runner_;  // BuildSite::held_out_runner
  std::unique_ptr<Runner> held_out_runner_;  // made with held_out_ when the factory is set
  RunRecorder rec_;
  RunLifecycle life_;
  BuildSummary summary_;
  const Policy* policy_ = nullptr;
  BuildPlan plan_;
  std::set<std::string> completed_;
  ObjectId head_;
  ObjectId start_tree_;  // the run's base: every step's tree is tested as layers over it
  std::optional<BaseRun> previous_run_;  // the accepted run that made head_: the next step's base run
  std::vector<std::string> replan_events_;
  std::optional<int64_t> current_index_;
  // The refusal reports the executor is shown. Kept across steps until a replacement plan
  // is adopted, as the kernel always has (the goldens record their count).
  Json refusals_ = Json::array();
  int64_t last_attempts_ = 0;  // the last step's proposals, for a replan's message
};

}  // namespace warden::kernel::detail
