#include "kernel/build/build_loop.h"

#include <algorithm>
#include <set>

#include "executor/state_machine.h"
#include "kernel/build/artifacts.h"
#include "kernel/build/build_setup.h"
#include "kernel/judge/checkout_attributes.h"
#include "kernel/plan/held_out.h"
#include "kernel/record/held_out_reveal.h"
#include "kernel/judge/held_out_vault.h"
#include "kernel/record/ledger_writer.h"
#include "kernel/build/merge_queue.h"
#include "kernel/record/plan_commit.h"
#include "kernel/judge/plan_generate.h"
#include "kernel/record/records.h"
#include "kernel/record/replan.h"
#include "kernel/record/run_recorder.h"
#include "kernel/build/step_pipeline.h"
#include "kernel/build/step_stages.h"
#include "kernel/build/watchdog.h"

namespace warden::kernel {

namespace {

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

  // queued -> planning: records the blueprint (when there is one) and the policy.
  Status start(const BlueprintSpec* blueprint, const Policy& policy) {
    policy_ = &policy;
    summary_.policy_sha256 = policy.digest();
    if (Status st = status_record(); !st) return st;
    rec_.emit(RunEventType::run_started, std::nullopt, std::nullopt, {{"status", "queued"}});
    if (Status st = move(RunStatus::planning); !st) return st;
    if (blueprint) (void)rec_.record(BlueprintRecord{run_id(), blueprint->digest(), blueprint->to_json()});
    (void)rec_.record(PolicyRecord{run_id(), summary_.policy_sha256, policy.to_json()});
    return rec_.flush();
  }

  // Verifies and commits `plan`; on refusal the run fails with PLANNING_ERROR.
  Result<bool> adopt_plan(BuildPlan plan, PlanSource source, const std::optional<PlanAuthor>& author = std::nullopt) {
    RecordAppender append = [&](std::string_view kind, const Json& payload) { return kl_.record_now(kind, payload, rec_.now()); };
    auto committed = propose_plan(append, plan, *policy_, run_id(), source, author);
    if (!committed) return std::unexpected(committed.error());
    if (!committed->reasons.empty()) {
      std::string why;
      for (const auto& r : committed->reasons) why += (why.empty() ? "" : "; ") + r.code;
      if (Status st = end(RunStatus::failed, ErrorType::planning_error, "the plan was refused: " + why); !st) {
        return std::unexpected(st.error());
      }
      return false;
    }
    plan_ = std::move(plan);
    summary_.plan_sha256 = plan_.digest();
    summary_.steps_total = static_cast<int64_t>(plan_.steps.size());
    summary_.branch = "refs/heads/" + plan_.branch;
    return true;
  }

  // planning -> running -> verifying -> completed, or a failure.
  Status run_steps(const ObjectId& base_commit) {
    head_ = base_commit;
    auto start_tree = workspace_.repo().tree_of(base_commit);
    if (!start_tree) return fail(Errc::not_found, "base tree: " + start_tree.error().message());
    start_tree_ = *start_tree;
    note_base_attributes();
    if (Status st = move(RunStatus::running); !st) return st;
    if (plan_.merge_queue_depth) return run_queue();
    for (size_t i = 0; i < plan_.steps.size(); ++i) {
      const BuildStep& step = plan_.steps[i];
      if (completed_.contains(step.id)) continue;
      auto done = run_step(i);
      if (!done) return std::unexpected(done.error());
      if (life_.status() != RunStatus::running && life_.status() != RunStatus::planning) return {};  // ended
      if (!*done) {
        // Retries exhausted: ask for a replacement plan, within the bound.
        auto replanned = replan(step);
        if (!replanned) return std::unexpected(replanned.error());
        if (!*replanned) return {};
        i = static_cast<size_t>(-1);  // walk the new plan from its first step not yet done
      }
    }
    if (Status st = move(RunStatus::verifying); !st) return st;
    return finish();
  }

  Status end(RunStatus terminal, ErrorType type, std::string message) {
    if (Status st = life_.fail(terminal, type, message); !st) return st;
    summary_.status = terminal;
    summary_.error_type = type;
    summary_.error = message;
    if (Status st = status_record(); !st) return st;
    Json data = {{"error_type", error_type_name(type)}, {"error", message}};
    if (terminal == RunStatus::timeout) rec_.emit(RunEventType::timeout_error, current_index_, std::nullopt, data);
    rec_.emit(terminal == RunStatus::cancelled ? RunEventType::run_cancelled : RunEventType::run_failed, std::nullopt,
              std::nullopt, data);
    return seal();
  }

  // The base's own .gitattributes lines that transform content on checkout
  // (checkout_attributes.h). A proposal may not add one, but those already there apply to
  // every file they match, so a checkout of an accepted commit can differ from the bytes
  // tested. They are the repository owners' and not refused: recorded and shown, once per run.
  void note_base_attributes() {
    auto files = workspace_.repo().files_named(start_tree_, [](std::string_view name) { return is_attributes_file(name); });
    if (!files) return;  // the tree was read a moment ago; a failure here is the next read's to report
    auto tree = workspace_.repo().tree(start_tree_);
    if (!tree) return;
    Json found = Json::array();
    for (const std::string& path : *files) {
      auto file = tree->read(path);
      if (!file || !*file) continue;
      for (const AttributeFinding& a : transforming_attributes((*file)->content)) {
        found.push_back({{"path", path}, {"line", a.line}, {"text", a.text}, {"attribute", a.attribute}});
      }
    }
    if (!found.empty()) rec_.emit(RunEventType::tool_output, std::nullopt, "kernel", {{"base_checkout_attributes", found}});
  }

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

  Status move(RunStatus to) {
    if (Status st = life_.move(to); !st) return st;
    summary_.status = to;
    return status_record();
  }

  Status status_record() {
    RunStatusRecord r{run_id(), life_.status(), life_.error_type(), life_.error()};
    return rec_.record(r);
  }

  // verifying -> completed: the branch must hold exactly what the ledger says was accepted.
  Status finish() {
    if (auto tip = workspace_.repo().resolve_commit(summary_.branch); !tip || !(*tip == head_)) {
      return end(RunStatus::failed, ErrorType::execution_error,
                 "the branch " + summary_.branch + " is not at the last accepted commit " + head_.hex());
    }
    if (Status st = move(RunStatus::completed); !st) return st;
    rec_.emit(RunEventType::run_completed, std::nullopt, std::nullopt,
              {{"steps_completed", summary_.steps_completed}, {"commit", head_.hex()}});
    return seal();
  }

  // Flushes everything, reveals a held-out bundle that judged this run alone, and signs a
  // checkpoint of the final tree head.
  Status seal() {
    if (Status st = rec_.flush(); !st) return st;
    if (Status st = reveal_held_out_at_end(); !st) return st;
    auto cp = kl_.ledger().checkpoint(session_.signer);
    if (!cp) return std::unexpected(cp.error());
    summary_.checkpoint = cp->note;
    summary_.ledger_size = cp->size;
    auto snap = kl_.ledger().snapshot();
    if (!snap) return std::unexpected(snap.error());
    auto root = snap->root();
    if (!root) return std::unexpected(root.error());
    summary_.root_hex = root->hex();
    summary_.commit = head_.hex();
    if (auto tree = workspace_.repo().tree_of(head_)) summary_.tree = tree->hex();
    return {};
  }

  // A merge-queue plan (merge_queue.h): rounds over a pool of runners, one per job when
  // this host's sandbox runs the checks (a LocalRunner is a one-thread object), else the one
  // runner the session gave; a step out of retries gets a replacement plan as a sequential
  // step does.
  Status run_queue() {
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

  Result<std::unique_ptr<PrefetchingRunner>> runner_pool() {
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

  // The run has ended (its last status is in the ledger): a bundle that judged this run alone
  // is published now, before anyone else can propose against it. A bundle its owner reveals
  // (a plan given with --plan may carry one) stays sealed.
  Status reveal_held_out_at_end() {
    if (!plan_.held_out) return {};
    summary_.held_out = plan_.held_out->sha256;
    if (plan_.held_out->reveal != HeldOutReveal::at_run_end) return {};
    const HeldOutVault vault(options_.ledger_dir);
    auto revealed = reveal_held_out(kl_.ledger(), vault, plan_.held_out->sha256);
    if (!revealed) {
      return fail(revealed.error().code, "the run ended, but its held-out bundle " + plan_.held_out->sha256.str() +
                                             " could not be revealed (replay fails its decisions until `warden held-out reveal` does): " +
                                             revealed.error().message);
    }
    summary_.held_out_reveal_seq = revealed->record.seq;
    return {};
  }

  // The plan's held-out bundle (held_out.h) from the vault beside the ledger, when the plan
  // holds held-out checks: without it no proposal can be judged.
  Status open_held_out() {
    if (!plan_.held_out) return {};
    if (held_out_ && held_out_->digest() == plan_.held_out->sha256) return {};
    vault_.emplace(options_.ledger_dir);
    auto bundle = vault_->open(plan_.held_out->sha256);
    if (!bundle) return std::unexpected(bundle.error().with_context("the plan's held-out checks"));
    held_out_ = std::move(*bundle);
    if (make_held_out_runner_) {
      auto made = make_held_out_runner_();
      if (!made) return std::unexpected(made.error().with_context("a sandbox on this host for the held-out checks"));
      held_out_runner_ = std::move(*made);
    }
    return {};
  }

  // One step through its pipeline. True: accepted and committed; false: retries exhausted.
  Result<bool> run_step(size_t index) {
    if (Status st = open_held_out(); !st) return std::unexpected(st.error());
    const BuildStep& step = plan_.steps[index];
    current_index_ = static_cast<int64_t>(index);
    const int64_t started = rec_.now();
    const std::string request_id = rec_.next_id("req");
    rec_.emit(RunEventType::step_started, current_index_, proposer_.name(),
              {{"step_id", step.id},
               {"action", step_action_name(step.action)},
               {"targets", step.targets},
               {"steps_total", summary_.steps_total},
               {"steps_completed", summary_.steps_completed}});
    // Durable before the executor is asked: `warden run status` in another shell sees the
    // run running and the step it is on while the executor works.
    if (Status st = rec_.flush(); !st) return std::unexpected(st.error());

    std::stop_source step_stop;
    std::stop_callback forward(session_.stop, [&] { step_stop.request_stop(); });
    const int64_t budget = step_budget_ms();
    Watchdog watchdog(std::chrono::milliseconds(budget), step_stop);
    StepState state;
    const StepContext ctx{.rec = rec_,
                          .workspace = workspace_,
                          .runner = runner_,
                          .proposer = proposer_,
                          .plan = plan_,
                          .policy = *policy_,
                          .step = step,
                          .index = current_index_.value_or(0),
                          .completed = completed_,
                          .head = head_,
                          .start_tree = start_tree_,
                          .previous_run = previous_run_ ? &*previous_run_ : nullptr,
                          .plan_sha256 = summary_.plan_sha256,
                          .policy_sha256 = summary_.policy_sha256,
                          .refusals = refusals_,
                          .stop = step_stop.get_token(),
                          .time_left = [&watchdog] { return watchdog.remaining(); },
                          .on_working = session_.on_working,
                          .held_out = held_out_ ? &*held_out_ : nullptr,
                          .vault = vault_ ? &*vault_ : nullptr,
                          .held_out_runner = held_out_runner_.get()};

    auto config = step_pipeline_config(plan_.max_retries);
    if (!config) return std::unexpected(config.error());
    executor::AgentSet agents;
    agents.push_back(stage(state, [&] { return propose_stage(ctx, state); }));
    agents.push_back(stage(state, [&] { return run_stage(ctx, state); }));
    agents.push_back(stage(state, [&] { return verify_stage(ctx, state); }));
    agents.push_back(stage(state, [&] { return commit_stage(ctx, state); }));
    executor::PipelineExecutor pipeline(*config, std::move(agents), session_.clock, session_.ids);
    pipeline.set_journal(&kl_);
    executor::RunInput input;
    input.raw_input = step.id;
    input.request_id = request_id;
    input.metadata = {{"run_id", run_id()}, {"step_id", step.id}, {"plan_sha256", summary_.plan_sha256.str()}};
    auto pipeline_state = pipeline.start(input, {{"kernel_run", run_id()}});
    if (!pipeline_state) return std::unexpected(pipeline_state.error());
    if (Status st = pipeline.run(*pipeline_state, step_stop.get_token()); !st) return std::unexpected(st.error());
    if (Status st = rec_.flush(); !st) return std::unexpected(st.error());

    const bool accepted = completed_.contains(step.id);
    StepEvidenceRecord evidence;
    evidence.run_id = run_id();
    evidence.step_id = step.id;
    evidence.tool_name = proposer_.name();
    evidence.step_sha256 = sha256(canonicalize(step.to_json()).value_or(""));
    if (accepted) evidence.commit = head_.hex();
    evidence.refusals = static_cast<int64_t>(refusals_.size());
    evidence.request_id = request_id;
    evidence.duration_ms = rec_.now() - started;
    evidence.retry_count = std::max<int64_t>(state.attempts - 1, 0);
    evidence.replan_events = replan_events_;
    evidence.completed = accepted;
    evidence.artifacts = std::move(state.artifacts);
    evidence.error_stack = state.error;
    (void)rec_.record(evidence);

    if (watchdog.fired() && !accepted) {
      return ended(end(RunStatus::timeout, ErrorType::timeout_error,
                       "step " + step.id + " ran past its " + std::to_string(budget) + " ms budget"));
    }
    if (session_.stop.stop_requested() && !accepted) {
      return ended(end(RunStatus::cancelled, ErrorType::cancelled, "cancelled during step " + step.id));
    }
    if (state.error && !accepted) return ended(end(RunStatus::failed, ErrorType::execution_error, *state.error));
    rec_.emit(RunEventType::step_completed, current_index_, proposer_.name(),
              {{"step_id", step.id}, {"accepted", accepted}, {"attempts", state.attempts}});
    if (Status st = rec_.flush(); !st) return std::unexpected(st.error());
    last_attempts_ = state.attempts;
    return accepted;
  }

  int64_t step_budget_ms() const { return options_.step_timeout_ms.value_or(plan_.step_timeout_ms); }

  // A step that ended the run: false, or the error that kept the end from being recorded.
  static Result<bool> ended(Status st) {
    if (!st) return std::unexpected(st.error());
    return false;
  }

  // A stage failing (an Error from step_stages.h) fails the step as an execution error; a
  // stage that throws (a bug, or bytes a library refuses) too, instead of reading as a refusal.
  template <typename F>
  std::unique_ptr<executor::StageAgent> stage(StepState& state, F f) {
    return std::make_unique<executor::FunctionAgent>([&state, f](const executor::StageContext&) {
      try {
        return f();
      } catch (const std::exception& e) {
        return fail_stage(state, std::string("internal error: ") + e.what());
      }
    });
  }

  static executor::StageResult fail_stage(StepState& state, std::string message) {
    state.error = message;
    return executor::StageResult::failure(std::move(message));
  }

  // The stages' results as the pipeline routes on them (and records them).
  executor::StageResult propose_stage(const StepContext& ctx, StepState& state) {
    state.attempt = Attempt{};
    auto proposed = propose(ctx, ++state.attempts);
    if (!proposed) return fail_stage(state, proposed.error().message);
    state.attempt.proposed = std::move(*proposed);
    const Proposed& p = state.attempt.proposed;
    executor::StageResult out;
    out.output = {{"attempt", p.number}, {"proposal_seq", p.record.seq}, {"parsed", p.diff.has_value()}};
    return out;
  }

  executor::StageResult run_stage(const StepContext& ctx, StepState& state) {
    auto tested = run_checks(ctx, state.attempt.proposed, state.base);
    if (!tested) return fail_stage(state, tested.error().message);
    state.attempt.tested = std::move(*tested);
    executor::StageResult out;
    if (!state.attempt.tested) out.output = {{"ran", false}};
    else out.output = {{"ran", true}, {"run_result_seq", state.attempt.tested->record.seq}};
    return out;
  }

  executor::StageResult verify_stage(const StepContext& ctx, StepState& state) {
    Attempt& a = state.attempt;
    auto verified = verify(ctx, a.proposed, a.tested ? &*a.tested : nullptr, state.base ? &*state.base : nullptr);
    if (!verified) return fail_stage(state, verified.error().message);
    a.decided = verified->decided;
    const Verdict& verdict = a.decided->verdict;
    summary_.verdicts.push_back({ctx.step.id, a.number(), verdict,
                                 a.tested ? checks_not_passing(a.tested->run) : std::vector<CheckEvidence>{},
                                 verified->refusal_report});
    executor::StageResult out;
    out.output = {{"accepted", verdict.accepted}, {"reasons", verdict.reason_codes()}};
    if (verified->refusal_report) {
      refusals_.push_back(verified->refusal_report->to_json());
      out.effects.feedback.push_back(ctx.step.id + " attempt " + std::to_string(a.number()) +
                                     " refused: " + Json(verdict.reason_codes()).dump());
    }
    return out;
  }

  executor::StageResult commit_stage(const StepContext& ctx, StepState& state) {
    auto committed = commit(ctx, state.attempt);
    if (!committed) return fail_stage(state, committed.error().message);
    state.attempt.committed = *committed;
    head_ = committed->commit;
    const Tested& tested = *state.attempt.tested;
    previous_run_ = BaseRun{tested.applied.tree, tested.run, tested.record.seq};
    completed_.insert(ctx.step.id);
    ++summary_.steps_completed;
    state.artifacts = record_artifacts(rec_, ctx.step, ctx.index, state.attempt);
    executor::StageResult out;
    out.output = {{"commit", committed->commit.hex()}, {"tree", state.attempt.tested->applied.tree.hex()}};
    return out;
  }

  // A step ran out of retries: a replacement plan, when the bound allows and the executor can.
  Result<bool> replan(const BuildStep& failed) {
    auto fail_with_refusals = [&](std::string why) -> Result<bool> {
      return ended(end(RunStatus::refused, ErrorType::refused,
                       "step " + failed.id + " was refused " +
                           (last_attempts_ == 1 ? std::string("once") : std::to_string(last_attempts_) + " times") + "; " + why));
    };
    if (summary_.replans >= plan_.max_replans) return fail_with_refusals("no replans left");
    ++summary_.replans;
    Json request = replan_request(plan_, failed.id, completed_, refusals_);
    rec_.emit(RunEventType::replan_triggered, current_index_, proposer_.name(),
              {{"failed_step", failed.id}, {"replan", summary_.replans}, {"max_replans", plan_.max_replans}});
    replan_events_.push_back("replan " + std::to_string(summary_.replans) + " after " + failed.id);
    auto text = proposer_.replan(request, std::chrono::milliseconds(step_budget_ms()));
    if (session_.stop.stop_requested()) return ended(end(RunStatus::cancelled, ErrorType::cancelled, "cancelled while replanning"));
    if (!text) return fail_with_refusals(text.error().message);
    if (Status st = move(RunStatus::planning); !st) return std::unexpected(st.error());
    auto json = parse_json(*text);
    auto plan = json ? BuildPlan::from_json(*json) : Result<BuildPlan>(std::unexpected(json.error()));
    if (!plan) {
      // A replacement plan that is not even a plan: its text is kept, the run ends.
      if (Status st = record_unreadable_plan(rec_, *text, plan.error().message); !st) return std::unexpected(st.error());
      return ended(end(RunStatus::failed, ErrorType::planning_error,
                       "the executor's replacement plan is not a plan: " + plan.error().message));
    }
    keep_kernel_fields(plan_, *plan);
    // A remote executor's plan names who sent it, as its proposals do.
    std::optional<PlanAuthor> author;
    if (auto identity = proposer_.answered_by()) author = PlanAuthor{proposer_.name(), identity};
    auto adopted = adopt_plan(std::move(*plan), PlanSource::executor, author);
    if (!adopted) return std::unexpected(adopted.error());
    if (!*adopted) return false;
    refusals_ = Json::array();
    if (Status st = move(RunStatus::running); !st) return std::unexpected(st.error());
    return true;
  }

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

Result<BuildSummary> build(const BlueprintSpec* blueprint, std::optional<BuildPlan> given_plan, const Policy& policy,
                           const BuildOptions& options, KernelSession& session, executor::Proposer& proposer) {
  const std::string branch = given_plan ? given_plan->branch : blueprint->branch.value_or("warden/" + blueprint->name);
  // The blueprint's held-out tests, read before anything is recorded: a directory that cannot
  // be a bundle is the caller's to fix.
  std::optional<HeldOutBundle> held_out;
  if (blueprint && blueprint->held_out) {
    if (blueprint->held_out->source.empty()) {
      return fail(Errc::invalid_argument, "blueprint.held_out.dir: needs the blueprint's own file to resolve it (load a file)");
    }
    SystemRandomSource system;
    auto bundle = read_held_out_dir(blueprint->held_out->source, blueprint->held_out->at, session.random ? *session.random : system);
    if (!bundle) return std::unexpected(bundle.error().with_context("blueprint.held_out.dir " + blueprint->held_out->dir));
    held_out = std::move(*bundle);
  }
  auto site = prepare_build(blueprint, branch, policy, options, session);
  if (!site) return std::unexpected(site.error());
  if (held_out) {
    if (Status st = HeldOutVault(options.ledger_dir).seal_for_run(*held_out); !st) {
      return std::unexpected(st.error().with_context("sealing the held-out tests beside the ledger"));
    }
  }
  Build b(options, session, proposer, *site);
  // Whatever stops the build from here on, the run still ends in a terminal state, as far
  // as the ledger lets it be recorded.
  auto abandon = [&](const Error& error) -> Result<BuildSummary> {
    if (!b.ended()) (void)b.end(RunStatus::failed, ErrorType::execution_error, error.message);
    return std::unexpected(error);
  };
  if (Status st = b.start(blueprint, policy); !st) return abandon(st.error());
  std::optional<BuildPlan> plan = std::move(given_plan);
  if (!plan) {
    auto generated = generate_plan(*blueprint, policy, held_out ? std::optional<Digest>(held_out->digest()) : std::nullopt);
    if (!generated) {
      if (Status st = b.end(RunStatus::failed, ErrorType::planning_error, generated.error().message); !st) {
        return std::unexpected(st.error());
      }
      return b.summary();
    }
    plan = std::move(*generated);
  }
  auto adopted = b.adopt_plan(std::move(*plan), blueprint ? PlanSource::generated : PlanSource::file);
  if (!adopted) return abandon(adopted.error());
  if (*adopted) {
    if (Status st = b.run_steps(site->base); !st) return abandon(st.error());
  }
  return b.summary();
}

}  // namespace

Json BuildSummary::to_json() const {
  Json verdict_list = Json::array();
  for (const auto& v : verdicts) {
    verdict_list.push_back({{"step_id", v.step_id},
                            {"attempt", v.attempt},
                            {"accepted", v.verdict.accepted},
                            {"reasons", v.verdict.reason_codes()},
                            {"verdict", v.verdict.to_json()}});
    if (!v.checks_not_passing.empty()) {
      Json evidence = Json::array();
      for (const CheckEvidence& e : v.checks_not_passing) evidence.push_back(e.to_json());
      verdict_list.back()["checks_not_passing"] = std::move(evidence);
    }
    if (v.refusal_report) verdict_list.back()["refusal_report"] = v.refusal_report->to_json();
  }
  Json j = {{"run_id", run_id},
            {"status", run_status_name(status)},
            {"steps_total", steps_total},
            {"steps_completed", steps_completed},
            {"replans", replans},
            {"verdicts", verdict_list},
            {"branch", branch},
            {"commit", commit},
            {"tree", tree},
            {"plan_sha256", plan_sha256.str()},
            {"policy_sha256", policy_sha256.str()},
            {"ledger_size", ledger_size},
            {"root", root_hex},
            {"checkpoint", checkpoint}};
  if (error_type) {
    j["error_type"] = error_type_name(*error_type);
    j["error"] = error;
  }
  if (jobs > 0) j["jobs"] = jobs;
  if (!jobs_note.empty()) j["jobs_note"] = jobs_note;
  if (held_out) {
    j["held_out"] = {{"sha256", held_out->str()}, {"revealed", held_out_reveal_seq.has_value()}};
    if (held_out_reveal_seq) j["held_out"]["reveal_seq"] = *held_out_reveal_seq;
  }
  if (!recovered.empty()) {
    Json list = Json::array();
    for (const RecoveredRun& r : recovered) list.push_back(r.to_json());
    j["recovered_runs"] = std::move(list);
  }
  return j;
}

Result<BuildSummary> run_build(const BlueprintSpec& blueprint, const BuildOptions& options, KernelSession& session,
                               executor::Proposer& proposer) {
  std::string name = !options.policy.empty() ? options.policy
                     : !blueprint.policy.empty() ? blueprint.policy
                                                 : std::string(default_policy_for(blueprint.language));
  auto policy = Policy::load(name);
  if (!policy) return std::unexpected(policy.error().with_context("policy " + name));
  return build(&blueprint, std::nullopt, *policy, options, session, proposer);
}

Result<BuildSummary> run_plan(const BuildPlan& plan, const Policy& policy, const BuildOptions& options,
                              KernelSession& session, executor::Proposer& proposer) {
  return build(nullptr, plan, policy, options, session, proposer);
}

}  // namespace warden::kernel
