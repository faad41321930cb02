#include "kernel/build_loop.h"

#include <algorithm>
#include <set>

#include "common/encoding.h"
#include "common/file.h"
#include "executor/state_machine.h"
#include "kernel/build_records.h"
#include "kernel/commit_record.h"
#include "kernel/decide.h"
#include "kernel/ledger_writer.h"
#include "kernel/plan_generate.h"
#include "kernel/plan_records.h"
#include "kernel/repository.h"
#include "kernel/step_checks.h"
#include "kernel/watchdog.h"
#include "diff/patch.h"
#include "runner/session.h"
#include "runner/workspace.h"

namespace warden::kernel {

namespace {

// One step's pipeline. The edge verify -> propose is the retry edge; its limit is set per
// plan (max_retries - 1). The other bounds only need to exceed what the edge limit allows.
constexpr std::string_view kStepPipeline = R"({
  "name": "warden-build-step",
  "description": "propose -> run -> verify -> commit, or back to propose with the refusal",
  "stages": [
    {"name": "propose", "kind": "kernel", "default_next": "run"},
    {"name": "run", "kind": "kernel", "default_next": "verify"},
    {"name": "verify", "kind": "kernel",
     "routing": [{"when": {"field": "accepted", "op": "equals", "value": true}, "next": "commit"}],
     "default_next": "@RETRY@"},
    {"name": "commit", "kind": "kernel", "default_next": "end"}
  ],
  "edge_limits": [{"from": "verify", "to": "propose", "max_count": @RETRIES@}],
  "max_iterations": @ITERATIONS@,
  "max_llm_calls": 1000000,
  "max_agent_hops": @HOPS@,
  "default_timeout_seconds": 3600
})";

std::string mime_type_for(std::string_view path, std::string_view type = {}) {
  auto ends = [&](std::string_view s) { return path.size() >= s.size() && path.substr(path.size() - s.size()) == s; };
  if (ends(".py")) return "text/x-python";
  if (ends(".c") || ends(".h")) return "text/x-c";
  if (ends(".cc") || ends(".cpp") || ends(".hpp") || ends(".cxx")) return "text/x-c++";
  if (ends(".md")) return "text/markdown";
  if (ends(".json")) return "application/json";
  if (ends(".txt") || ends(".toml") || ends(".cfg") || ends(".ini")) return "text/plain";
  if (ends("Makefile") || ends(".mk")) return "text/x-makefile";
  if (ends(".sh")) return "text/x-shellscript";
  if (type == "binary") return "application/x-executable";
  return "application/octet-stream";
}

// Everything one attempt (proposal) of a step produces, stage by stage.
struct Attempt {
  int64_t number = 0;
  std::optional<Diff> diff;
  ProposalEvidence evidence;
  Appended proposal;
  std::optional<RunResult> run;
  std::optional<Appended> run_record;
  std::optional<AppliedDiff> applied;  // the diff on the branch tip: the tree under test
  Verdict verdict;
  Appended decision;
};

class Build {
 public:
  Build(const BuildOptions& options, BuildEnvironment& env, Ledger& ledger, Workspace& workspace, Runner& runner,
        std::string run_id)
      : options_(options), env_(env), kl_(ledger), workspace_(workspace), runner_(runner), life_(run_id) {
    summary_.run_id = std::move(run_id);
  }

  // queued -> planning: records the blueprint (when there is one) and the policy.
  Status start(const BlueprintSpec* blueprint, const Policy& policy) {
    policy_ = &policy;
    summary_.policy_sha256 = policy.digest();
    if (Status st = status_record(); !st) return st;
    emit(RunEventType::run_started, std::nullopt, std::nullopt, {{"status", "queued"}});
    if (Status st = move(RunStatus::planning); !st) return st;
    if (blueprint) {
      Json bp = blueprint->to_json();
      kl_.append(record_kind::blueprint, {{"run_id", run_id()}, {"blueprint_sha256", blueprint->digest().str()}, {"blueprint", bp}},
                 now());
    }
    kl_.append(record_kind::policy, {{"run_id", run_id()}, {"policy_sha256", summary_.policy_sha256.str()}, {"policy", policy.to_json()}},
               now());
    return kl_.flush();
  }

  // Verifies and commits `plan`; on refusal the run fails with PLANNING_ERROR.
  Result<bool> adopt_plan(BuildPlan plan, PlanSource source) {
    RecordAppender append = [&](std::string_view kind, const Json& payload) { return kl_.record(kind, payload, now()); };
    auto committed = propose_plan(append, plan, *policy_, run_id(), source);
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
    if (Status st = move(RunStatus::running); !st) return st;
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
    if (terminal == RunStatus::timeout) emit(RunEventType::timeout_error, current_index_, std::nullopt, data);
    emit(terminal == RunStatus::cancelled ? RunEventType::run_cancelled : RunEventType::run_failed, std::nullopt,
         std::nullopt, data);
    return seal();
  }

  bool ended() const { return is_terminal(life_.status()); }
  BuildSummary& summary() { return summary_; }
  const std::string& run_id() const { return summary_.run_id; }

 private:
  int64_t now() { return env_.clock.now_ms(); }

  Status move(RunStatus to) {
    if (Status st = life_.move(to); !st) return st;
    summary_.status = to;
    return status_record();
  }

  Status status_record() {
    Json p = {{"run_id", run_id()}, {"status", run_status_name(life_.status())}};
    if (life_.error_type()) {
      p["error_type"] = error_type_name(*life_.error_type());
      p["error"] = life_.error();
    }
    return kl_.append(record_kind::run_status, p, now());
  }

  void emit(RunEventType type, std::optional<int64_t> step_index, std::optional<std::string> tool, Json data) {
    RunEvent ev;
    ev.event_id = env_.ids.next_id("ev");
    ev.run_id = run_id();
    ev.type = type;
    ev.timestamp_ms = now();
    ev.step_index = step_index;
    ev.tool = std::move(tool);
    ev.data = std::move(data);
    (void)kl_.append(record_kind::run_event, ev.to_json(), ev.timestamp_ms);
    if (env_.on_event) env_.on_event(ev);
  }

  // verifying -> completed: the branch must hold exactly what the ledger says was accepted.
  Status finish() {
    if (auto tip = workspace_.repo().resolve_commit(summary_.branch); !tip || !(*tip == head_)) {
      return end(RunStatus::failed, ErrorType::execution_error,
                 "the branch " + summary_.branch + " is not at the last accepted commit " + head_.hex());
    }
    if (Status st = move(RunStatus::completed); !st) return st;
    emit(RunEventType::run_completed, std::nullopt, std::nullopt,
         {{"steps_completed", summary_.steps_completed}, {"commit", head_.hex()}});
    return seal();
  }

  // Flushes everything and signs a checkpoint of the final tree head.
  Status seal() {
    if (Status st = kl_.flush(); !st) return st;
    auto cp = kl_.ledger().checkpoint(env_.signer);
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

  // One step through its pipeline. True: accepted and committed; false: retries exhausted.
  Result<bool> run_step(size_t index) {
    const BuildStep& step = plan_.steps[index];
    current_index_ = static_cast<int64_t>(index);
    const int64_t started = now();
    const std::string request_id = env_.ids.next_id("req");
    emit(RunEventType::step_started, current_index_, env_.proposer.name(),
         {{"step_id", step.id},
          {"action", step_action_name(step.action)},
          {"targets", step.targets},
          {"steps_total", summary_.steps_total},
          {"steps_completed", summary_.steps_completed}});

    std::stop_source step_stop;
    std::stop_callback forward(env_.stop, [&] { step_stop.request_stop(); });
    const int64_t budget = options_.step_timeout_ms.value_or(plan_.step_timeout_ms);
    Watchdog watchdog(std::chrono::milliseconds(budget), step_stop);
    step_stop_ = step_stop.get_token();
    watchdog_ = &watchdog;
    attempts_ = 0;
    step_error_.reset();

    std::string config_text(kStepPipeline);
    auto put = [&](std::string_view key, int64_t v) {
      config_text.replace(config_text.find(key), key.size(), std::to_string(v));
    };
    const int64_t retries = std::max<int64_t>(plan_.max_retries, 1);
    put("@RETRIES@", retries - 1);
    put("@ITERATIONS@", retries + 1);
    put("@HOPS@", 4 * retries + 1);
    // An edge limit of 0 means "no limit": with one proposal allowed, a refusal ends the pipeline.
    config_text.replace(config_text.find("@RETRY@"), 7, retries > 1 ? "propose" : "end");
    auto config = executor::PipelineConfig::parse_text(config_text, "the build-step pipeline");
    if (!config) return std::unexpected(config.error());

    executor::AgentSet agents;
    agents.push_back(stage([&, index] { return propose(plan_.steps[index]); }));
    agents.push_back(stage([&, index] { return run_checks(plan_.steps[index]); }));
    agents.push_back(stage([&, index] { return verify(plan_.steps[index]); }));
    agents.push_back(stage([&, index] { return commit(plan_.steps[index]); }));
    executor::PipelineExecutor pipeline(*config, std::move(agents), env_.clock, env_.ids);
    pipeline.set_journal(&kl_);
    executor::RunInput input;
    input.raw_input = step.id;
    input.request_id = request_id;
    input.metadata = {{"run_id", run_id()}, {"step_id", step.id}, {"plan_sha256", summary_.plan_sha256.str()}};
    auto state = pipeline.start(input, {{"kernel_run", run_id()}});
    if (!state) return std::unexpected(state.error());
    if (Status st = pipeline.run(*state, step_stop.get_token()); !st) return std::unexpected(st.error());
    if (Status st = kl_.flush(); !st) return std::unexpected(st.error());
    watchdog_ = nullptr;

    const bool accepted = completed_.contains(step.id);
    Json evidence = {{"run_id", run_id()},
                     {"stepId", step.id},
                     {"toolName", env_.proposer.name()},
                     {"input", {{"step_sha256", sha256(canonicalize(step.to_json()).value_or("")).str()}}},
                     {"output", accepted ? Json{{"commit", head_.hex()}} : Json{{"refusals", refusals_.size()}}},
                     {"schemaValidation", "pass"},
                     {"requestId", request_id},
                     {"durationMs", now() - started},
                     {"retryCount", std::max<int64_t>(attempts_ - 1, 0)},
                     {"replanEvents", replan_events_},
                     {"status", accepted ? "completed" : "failed"},
                     {"artifacts", step_artifacts_}};
    if (step_error_) evidence["errorStack"] = *step_error_;
    kl_.append(record_kind::step_evidence, evidence, now());
    step_artifacts_ = Json::array();

    if (watchdog.fired() && !accepted) {
      if (Status st = end(RunStatus::timeout, ErrorType::timeout_error,
                          "step " + step.id + " ran past its " + std::to_string(budget) + " ms budget");
          !st) {
        return std::unexpected(st.error());
      }
      return false;
    }
    if (env_.stop.stop_requested() && !accepted) {
      if (Status st = end(RunStatus::cancelled, ErrorType::cancelled, "cancelled during step " + step.id); !st) {
        return std::unexpected(st.error());
      }
      return false;
    }
    if (step_error_ && !accepted) {
      if (Status st = end(RunStatus::failed, ErrorType::execution_error, *step_error_); !st) return std::unexpected(st.error());
      return false;
    }
    emit(RunEventType::step_completed, current_index_, env_.proposer.name(),
         {{"step_id", step.id}, {"accepted", accepted}, {"attempts", attempts_}});
    if (Status st = kl_.flush(); !st) return std::unexpected(st.error());
    return accepted;
  }

  // A stage that throws (a bug, or bytes a library refuses) fails the step as an execution
  // error instead of reading as a refusal.
  template <typename F>
  std::unique_ptr<executor::StageAgent> stage(F f) {
    return std::make_unique<executor::FunctionAgent>([this, f](const executor::StageContext&) {
      try {
        return f();
      } catch (const std::exception& e) {
        return fail_stage(std::string("internal error: ") + e.what());
      }
    });
  }

  // The current content of the step's targets, for the executor.
  Json target_files(const BuildStep& step) {
    Json files = Json::object();
    auto tree_id = workspace_.repo().tree_of(head_);
    if (!tree_id) return files;
    auto tree = workspace_.repo().tree(*tree_id);
    if (!tree) return files;
    for (const auto& path : step.targets) {
      auto file = tree->read(path);
      if (!file || !*file) continue;
      const std::string& content = (*file)->content;
      files[path] = {{"sha256", sha256(content).str()}};
      if (is_valid_utf8(content)) files[path]["content"] = content;
      else files[path]["content_base64"] = base64_encode(content);
    }
    return files;
  }

  executor::StageResult fail_stage(std::string message) {
    step_error_ = message;
    return executor::StageResult::failure(std::move(message));
  }

  // Stage 1: the executor proposes; the kernel parses and records what it got.
  executor::StageResult propose(const BuildStep& step) {
    attempt_ = Attempt{};
    attempt_.number = ++attempts_;
    executor::ProposalRequest request;
    request.step = step.to_json();
    request.context = {{"attempt", attempt_.number},
                       {"plan_sha256", summary_.plan_sha256.str()},
                       {"base_commit", head_.hex()},
                       {"files", target_files(step)},
                       {"refusals", refusals_}};
    request.timeout = watchdog_->remaining();
    request.stop = step_stop_;
    emit(RunEventType::tool_called, current_index_, env_.proposer.name(), {{"step_id", step.id}, {"attempt", attempt_.number}});
    auto text = env_.proposer.propose(request);
    std::optional<std::string> executor_error;
    attempt_.evidence.step_id = step.id;
    attempt_.evidence.diff = nullptr;
    if (!text) {
      executor_error = text.error().message;
    } else {
      auto parsed = parse_proposal(step.id, *text);
      if (parsed) attempt_.evidence.diff = std::move(*parsed);
      else executor_error = parsed.error();
    }
    if (step_stop_.stop_requested()) return fail_stage("stopped while the executor was proposing");
    if (attempt_.evidence.diff.is_object()) {
      if (auto diff = Diff::from_json(attempt_.evidence.diff)) {
        attempt_.diff = std::move(*diff);
        gather_base(*attempt_.diff);
      }
    }
    auto evidence_bytes = canonicalize(attempt_.evidence.to_json());
    if (!evidence_bytes) return fail_stage("recording the proposal: " + evidence_bytes.error().message);
    auto blob = kl_.put_blob(*evidence_bytes);
    if (!blob) return fail_stage(blob.error().message);
    Json payload = {{"run_id", run_id()},
                    {"step_id", step.id},
                    {"attempt", attempt_.number},
                    {"executor", env_.proposer.name()},
                    {"evidence_blob", *blob},
                    {"diff_sha256", attempt_.diff ? Json(attempt_.diff->digest().str()) : Json(nullptr)},
                    {"error", executor_error ? Json(*executor_error) : Json(nullptr)}};
    auto rec = kl_.record(record_kind::proposal, payload, now());
    if (!rec) return fail_stage(rec.error().message);
    attempt_.proposal = *rec;
    executor::StageResult out;
    out.output = {{"attempt", attempt_.number}, {"proposal_seq", rec->seq}, {"parsed", attempt_.diff.has_value()}};
    return out;
  }

  // A Diff JSON stays JSON; anything else is tried as a git patch against the head. A
  // proposal that is neither is kept as text: decide() refuses it as malformed.
  std::expected<Json, std::string> parse_proposal(const std::string& step_id, const std::string& text) {
    auto json = parse_json(text);
    if (json && json->is_object()) return *json;
    auto diff = workspace_.diff_from_patch(text, head_.hex(), step_id);
    if (diff) return diff->to_json();
    if (text.size() <= 65536 && is_valid_utf8(text)) attempt_.evidence.diff = text;
    return std::unexpected(diff.error().message());
  }

  // The pre-images of every path the diff names, read from the head tree, and what the
  // real tree says about applying it (structural rules decide() cannot see).
  void gather_base(const Diff& diff) {
    auto tree_id = workspace_.repo().tree_of(head_);
    if (!tree_id) return;
    auto tree = workspace_.repo().tree(*tree_id);
    if (!tree) return;
    for (const auto& f : diff.files) {
      for (const std::string* p : {&f.path, f.old_path ? &*f.old_path : nullptr}) {
        if (!p || attempt_.evidence.base.contains(*p)) continue;
        BaseFileImage image;
        if (auto file = tree->read(*p); file && *file) {
          image.content = (*file)->content;
          image.mode = (*file)->mode;
        }
        attempt_.evidence.base.emplace(*p, std::move(image));
      }
    }
    if (auto checked = workspace_.check(diff, head_.hex()); !checked) attempt_.evidence.workspace_refusal = checked.error();
  }

  // Stage 2: the runner applies the diff in the sandbox and runs the checks.
  executor::StageResult run_checks(const BuildStep& step) {
    executor::StageResult out;
    if (!attempt_.diff || attempt_.evidence.workspace_refusal) {
      out.output = {{"ran", false}};
      return out;
    }
    // The tree under test is the diff on the branch tip; the runner layers it over the run's
    // start tree, whose checkout it materializes once per run: a step costs O(what the run
    // changed so far), not O(repository).
    auto applied = workspace_.apply(*attempt_.diff, head_.hex());
    if (!applied) return fail_stage("applying the diff: " + applied.error().message());
    attempt_.applied = *applied;
    RunRequest request;
    request.base_tree = start_tree_;
    request.tree = applied->tree;
    request.diff = &*attempt_.diff;
    request.checks = checks_for_step(plan_, *policy_, step, completed_);
    request.stop = step_stop_;
    auto ran = runner_.run(workspace_.repo(), request);
    if (step_stop_.stop_requested()) return fail_stage("stopped while the checks ran");
    if (!ran) {
      // The diff applied above, so this is the sandbox or the repository failing.
      return fail_stage("runner: " + ran.error().message());
    }
    attempt_.run = std::move(ran->result);
    Json result = attempt_.run->deterministic_json();
    Json payload = {{"run_id", run_id()},
                    {"step_id", step.id},
                    {"attempt", attempt_.number},
                    {"run_result_sha256", attempt_.run->deterministic_digest().str()},
                    {"run_result", result}};
    auto rec = kl_.record(record_kind::run_result, payload, now());
    if (!rec) return fail_stage(rec.error().message);
    attempt_.run_record = *rec;
    Json verdicts = Json::object();
    for (const auto& c : attempt_.run->checks) verdicts[c.name] = c.verdict;
    emit(RunEventType::tool_output, current_index_, "runner",
         {{"step_id", step.id}, {"attempt", attempt_.number}, {"checks", verdicts}});
    out.output = {{"ran", true}, {"run_result_seq", rec->seq}};
    return out;
  }

  // Stage 3: decide(), recorded; a refusal goes back to the executor.
  executor::StageResult verify(const BuildStep& step) {
    DecisionInput input{plan_, completed_, attempt_.evidence, attempt_.run ? &*attempt_.run : nullptr, *policy_};
    attempt_.verdict = decide(input);
    Json completed = Json::array();
    for (const auto& id : completed_) completed.push_back(id);
    Json payload = {{"run_id", run_id()},
                    {"step_id", step.id},
                    {"attempt", attempt_.number},
                    {"plan_sha256", summary_.plan_sha256.str()},
                    {"policy_sha256", summary_.policy_sha256.str()},
                    {"completed_steps", completed},
                    {"proposal_seq", attempt_.proposal.seq},
                    {"run_result_seq", attempt_.run_record ? Json(attempt_.run_record->seq) : Json(nullptr)},
                    {"verdict", attempt_.verdict.to_json()}};
    auto rec = kl_.record(record_kind::decision, payload, now());
    if (!rec) return fail_stage(rec.error().message);
    attempt_.decision = *rec;
    summary_.verdicts.push_back({step.id, attempt_.number, attempt_.verdict.accepted, attempt_.verdict.reason_codes()});
    emit(RunEventType::tool_output, current_index_, "kernel",
         {{"step_id", step.id},
          {"attempt", attempt_.number},
          {"accepted", attempt_.verdict.accepted},
          {"reasons", attempt_.verdict.reason_codes()}});
    executor::StageResult out;
    out.output = {{"accepted", attempt_.verdict.accepted}, {"reasons", attempt_.verdict.reason_codes()}};
    if (attempt_.verdict.accepted) {
      // Durable before the branch moves: a commit on the branch always has its decision.
      if (Status st = kl_.flush(); !st) return fail_stage(st.error().message);
      return out;
    }

    RefusalReport report;
    report.run_id = run_id();
    report.seed_sha256 = summary_.plan_sha256;
    report.step_id = step.id;
    report.attempt = attempt_.number;
    report.reasons = attempt_.verdict.reasons;
    report.evidence.push_back(attempt_.proposal.hash);
    if (attempt_.run_record) report.evidence.push_back(attempt_.run_record->hash);
    report.evidence.push_back(rec->hash);
    for (const auto& r : report.reasons) report.policy_suggestions.push_back(suggestion_for(r));
    Json report_json = report.to_json();
    auto refusal = kl_.record(record_kind::refusal, {{"run_id", run_id()}, {"subject", "proposal"}, {"report", report_json}}, now());
    if (!refusal) return fail_stage(refusal.error().message);
    // Durable before the executor hears of it and tries again.
    if (Status st = kl_.flush(); !st) return fail_stage(st.error().message);
    refusals_.push_back(report_json);
    env_.proposer.learn(report_json);
    out.effects.feedback.push_back(step.id + " attempt " + std::to_string(attempt_.number) + " refused: " +
                                   Json(attempt_.verdict.reason_codes()).dump());
    return out;
  }

  // Stage 4: the accepted change becomes a git commit on the plan's branch, then a commit
  // record naming everything it was decided from.
  executor::StageResult commit(const BuildStep& step) {
    if (!attempt_.applied) return fail_stage("an accepted diff without a tested tree");
    const AppliedDiff* applied = &*attempt_.applied;
    CommitOptions options;
    options.branch = plan_.branch;
    options.message = "warden: " + step.id + " " + std::string(step_action_name(step.action)) +
                      (step.description.empty() ? "" : ": " + step.description);
    options.record = attempt_.decision.hash;
    auto commit = workspace_.commit(*attempt_.diff, *applied, options, env_.clock);
    if (!commit) return fail_stage("committing: " + commit.error().message());
    CommitRecord record;
    record.run_id = run_id();
    record.step_id = step.id;
    record.attempt = static_cast<uint64_t>(attempt_.number);
    record.commit = commit->hex();
    record.tree = applied->tree.hex();
    record.parent = head_.hex();
    record.branch = summary_.branch;
    record.plan_sha256 = summary_.plan_sha256;
    record.proposal_sha256 = attempt_.diff->digest();
    record.run_result_sha256 = attempt_.run->deterministic_digest();
    record.policy_sha256 = summary_.policy_sha256;
    record.decision_seq = attempt_.decision.seq;
    auto rec = kl_.record(kCommitRecordKind, record.to_json(), now());
    if (!rec) return fail_stage(rec.error().message);
    head_ = *commit;
    completed_.insert(step.id);
    ++summary_.steps_completed;
    record_artifacts(step);
    executor::StageResult out;
    out.output = {{"commit", commit->hex()}, {"tree", applied->tree.hex()}};
    return out;
  }

  // Every file the accepted step wrote, as a typed artifact with its bytes in the blob store.
  void record_artifacts(const BuildStep& step) {
    std::vector<ResolvedFile> files;
    MemoryFileTree base;
    for (const auto& [path, image] : attempt_.evidence.base) {
      if (image.content) base.put(path, *image.content, image.mode);
    }
    auto resolved = resolve_diff(*attempt_.diff, base);
    if (!resolved) return;
    const std::string type = step.produces.empty() ? "file" : step.produces.front();
    for (const auto& f : *resolved) {
      if (!f.content) continue;
      auto digest = kl_.put_blob(*f.content);
      if (!digest) continue;
      Json info = {{"artifactId", env_.ids.next_id("art")},
                   {"type", type},
                   {"mimeType", mime_type_for(f.path)},
                   {"path", f.path},
                   {"sizeBytes", f.content->size()},
                   {"digest", *digest},
                   {"createdAt", now()}};
      step_artifacts_.push_back(info);
      emit(RunEventType::artifact_created, current_index_, std::nullopt, info);
    }
    // What the checks declared and left behind (a built binary, a report): the runner put
    // the bytes in the ledger's blob store as it ran.
    for (const auto& check : attempt_.run->checks) {
      if (check.runs.empty()) continue;
      for (const auto& a : check.runs.front().artifacts) {
        if (!a.present || !a.sha256) continue;
        Json info = {{"artifactId", env_.ids.next_id("art")},
                     {"type", a.type},
                     {"mimeType", mime_type_for(a.path, a.type)},
                     {"path", a.path},
                     {"sizeBytes", a.bytes},
                     {"digest", a.sha256->str()},
                     {"check", check.name},
                     {"createdAt", now()}};
        step_artifacts_.push_back(info);
        emit(RunEventType::artifact_created, current_index_, "runner", info);
      }
    }
  }

  // A step ran out of retries: a replacement plan, when the bound allows and the executor can.
  Result<bool> replan(const BuildStep& failed) {
    auto fail_with_refusals = [&](std::string why) -> Result<bool> {
      if (Status st = end(RunStatus::failed, ErrorType::execution_error,
                          "step " + failed.id + " was refused " + std::to_string(attempts_) + " times; " + why);
          !st) {
        return std::unexpected(st.error());
      }
      return false;
    };
    if (summary_.replans >= plan_.max_replans) return fail_with_refusals("no replans left");
    ++summary_.replans;
    Json completed = Json::array();
    for (const auto& id : completed_) completed.push_back(id);
    Json request = {{"plan", plan_.to_json()}, {"failed_step", failed.id}, {"completed_steps", completed}, {"refusals", refusals_}};
    emit(RunEventType::replan_triggered, current_index_, env_.proposer.name(),
         {{"failed_step", failed.id}, {"replan", summary_.replans}, {"max_replans", plan_.max_replans}});
    replan_events_.push_back("replan " + std::to_string(summary_.replans) + " after " + failed.id);
    auto text = env_.proposer.replan(request, std::chrono::milliseconds(options_.step_timeout_ms.value_or(plan_.step_timeout_ms)));
    if (env_.stop.stop_requested()) {
      if (Status st = end(RunStatus::cancelled, ErrorType::cancelled, "cancelled while replanning"); !st) {
        return std::unexpected(st.error());
      }
      return false;
    }
    if (!text) return fail_with_refusals(text.error().message);
    if (Status st = move(RunStatus::planning); !st) return std::unexpected(st.error());
    auto json = parse_json(*text);
    auto plan = json ? BuildPlan::from_json(*json) : Result<BuildPlan>(std::unexpected(json.error()));
    if (!plan) {
      if (Status st = refuse_unreadable_plan(*text, plan.error().message); !st) return std::unexpected(st.error());
      return false;
    }
    keep_kernel_fields(*plan);
    auto adopted = adopt_plan(std::move(*plan), PlanSource::executor);
    if (!adopted) return std::unexpected(adopted.error());
    if (!*adopted) return false;
    refusals_ = Json::array();
    if (Status st = move(RunStatus::running); !st) return std::unexpected(st.error());
    return true;
  }

  // The executor proposes steps; what the run is bound by stays the kernel's: the branch,
  // the bounds, the allowed paths, the intent, the invariants, the checks, and a final
  // checkpoint over every step of the new plan.
  void keep_kernel_fields(BuildPlan& p) const {
    p.name = plan_.name;
    p.blueprint_sha256 = plan_.blueprint_sha256;
    p.language = plan_.language;
    p.policy = plan_.policy;
    p.branch = plan_.branch;
    p.intent = plan_.intent;
    p.allowed_paths = plan_.allowed_paths;
    p.invariants = plan_.invariants;
    p.checks = plan_.checks;
    p.max_retries = plan_.max_retries;
    p.max_replans = plan_.max_replans;
    p.step_timeout_ms = plan_.step_timeout_ms;
    std::vector<std::string> every_step;
    for (const auto& s : p.steps) every_step.push_back(s.id);
    p.verification_checkpoints = plan_.verification_checkpoints;
    for (auto& cp : p.verification_checkpoints) cp.after = every_step;
  }

  // A replacement plan that is not even a plan: its text goes to the blob store, the refusal
  // to the ledger, and the run ends with PLANNING_ERROR.
  Status refuse_unreadable_plan(const std::string& text, const std::string& why) {
    std::string kept = is_valid_utf8(text) ? text : base64_encode(text);
    auto blob = kl_.put_blob(kept);
    if (!blob) return std::unexpected(blob.error());
    Json payload = {{"run_id", run_id()},
                    {"subject", "plan"},
                    {"error_type", error_type_name(ErrorType::planning_error)},
                    {"plan_sha256", sha256(text).str()},
                    {"proposal_seq", nullptr},
                    {"plan_blob", *blob},
                    {"reasons", Json::array({{{"code", "plan_malformed"}, {"detail", why}}})}};
    kl_.append(record_kind::refusal, payload, now());
    return end(RunStatus::failed, ErrorType::planning_error, "the executor's replacement plan is not a plan: " + why);
  }

  const BuildOptions& options_;
  BuildEnvironment& env_;
  LedgerWriter kl_;
  Workspace& workspace_;
  Runner& runner_;
  RunLifecycle life_;
  BuildSummary summary_;
  const Policy* policy_ = nullptr;
  BuildPlan plan_;
  std::set<std::string> completed_;
  ObjectId head_;
  ObjectId start_tree_;  // the run's base: every step's tree is tested as layers over it
  Json refusals_ = Json::array();  // of the current step
  Json replan_events_ = Json::array();
  Json step_artifacts_ = Json::array();
  std::optional<int64_t> current_index_;
  Attempt attempt_;
  int64_t attempts_ = 0;
  std::optional<std::string> step_error_;
  std::stop_token step_stop_;
  Watchdog* watchdog_ = nullptr;
};

// Run ids name runs in the ledger; two runs under one id would be one run to replay.
Result<bool> run_id_taken(const Ledger& ledger, const std::string& run_id) {
  auto snap = ledger.snapshot();
  if (!snap) return std::unexpected(snap.error());
  auto seqs = snap->run_records(run_id);  // the per-run index: no scan of the ledger
  if (!seqs) return std::unexpected(seqs.error());
  for (uint64_t seq : *seqs) {
    auto rec = snap->record_view(seq);
    if (!rec) return std::unexpected(rec.error());
    if (rec->kind == record_kind::run_status) return true;
  }
  return false;
}

Result<Ledger> open_ledger(const BuildOptions& options, BuildEnvironment& env) {
  std::error_code ec;
  if (!std::filesystem::exists(options.ledger_dir / "data.mdb", ec)) {
    LedgerCreateOptions create;
    create.origin = env.signer.name();
    create.verifier_key = env.signer.verifier().encoded();
    create.max_payload_bytes = uint64_t{8} << 20;
    if (Status st = Ledger::create(options.ledger_dir, create); !st) return std::unexpected(st.error());
  }
  auto ledger = Ledger::open(options.ledger_dir, Ledger::Mode::read_write, env.clock);
  if (!ledger) return std::unexpected(ledger.error());
  if (ledger->verifier_key() != env.signer.verifier().encoded()) {
    return fail(Errc::verification_failed, "the ledger " + options.ledger_dir.string() +
                                               " is signed by another key than the one given (" + ledger->verifier_key() + ")");
  }
  return ledger;
}

Result<BuildSummary> build(const BlueprintSpec* blueprint, std::optional<BuildPlan> given_plan, const Policy& policy,
                           const BuildOptions& options, BuildEnvironment& env) {
  auto ledger = open_ledger(options, env);
  if (!ledger) return std::unexpected(ledger.error());
  std::optional<std::filesystem::path> seed;
  if (blueprint && blueprint->seed) seed = options.blueprint_dir / *blueprint->seed;
  auto repo = open_or_seed_repository(options.repo_dir, seed, env.clock);
  if (!repo) return std::unexpected(repo.error());
  const std::string base_rev = !options.base.empty() ? options.base : blueprint ? blueprint->base : std::string("HEAD");
  auto base = repo->workspace.repo().resolve_commit(base_rev);
  if (!base) return fail(Errc::not_found, "base revision: " + base.error().message());
  // A branch that already moved past the base (an earlier build) would only be refused at
  // the first commit; say so before anything runs or is recorded.
  const std::string branch = given_plan ? given_plan->branch : blueprint->branch.value_or("warden/" + blueprint->name);
  if (auto tip = repo->workspace.repo().resolve_commit("refs/heads/" + branch); tip && !(*tip == *base)) {
    return fail(Errc::already_exists, "branch " + branch + " in " + options.repo_dir.string() + " is at " + tip->hex() +
                                          ", not at the base " + base->hex() +
                                          " (an earlier build?): build into a new repository or delete the branch");
  }

  auto profile = policy.sandbox_profile_with_programs();
  if (!profile) return std::unexpected(profile.error());
  RunnerOptions runner_options;
  runner_options.cache_dir = options.cache_dir;
  // Results are not reused across builds: a cached result would name output blobs this
  // ledger does not hold, and a golden run must record the same bytes cold or warm.
  runner_options.use_cache = false;
  runner_options.kernel_release_in_toolchain = !options.host_independent;
  auto runner = Runner::create(std::move(*profile), runner_options);
  if (!runner) return std::unexpected(runner.error());

  std::string run_id = options.run_id.empty() ? env.ids.next_id("run") : options.run_id;
  auto taken = run_id_taken(*ledger, run_id);
  if (!taken) return std::unexpected(taken.error());
  if (*taken) {
    return fail(Errc::already_exists, "run " + run_id + " is already in the ledger " + options.ledger_dir.string() +
                                          " (a logical clock numbers runs from 1 in every process): give --run-id");
  }
  Build b(options, env, *ledger, repo->workspace, *runner, run_id);
  // Whatever stops the build from here on, the run still ends in a terminal state, as far
  // as the ledger lets it be recorded.
  auto abandon = [&](const Error& error) -> Result<BuildSummary> {
    if (!b.ended()) (void)b.end(RunStatus::failed, ErrorType::execution_error, error.message);
    return std::unexpected(error);
  };
  if (Status st = b.start(blueprint, policy); !st) return abandon(st.error());
  std::optional<BuildPlan> plan = std::move(given_plan);
  if (!plan) {
    auto generated = generate_plan(*blueprint, policy);
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
    if (Status st = b.run_steps(*base); !st) return abandon(st.error());
  }
  return b.summary();
}

}  // namespace

Json BuildSummary::to_json() const {
  Json verdict_list = Json::array();
  for (const auto& v : verdicts) {
    verdict_list.push_back({{"step_id", v.step_id}, {"attempt", v.attempt}, {"accepted", v.accepted}, {"reasons", v.reasons}});
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
  return j;
}

Result<BuildSummary> run_build(const BlueprintSpec& blueprint, const BuildOptions& options, BuildEnvironment& env) {
  std::string name = !options.policy.empty() ? options.policy
                     : !blueprint.policy.empty() ? blueprint.policy
                                                 : std::string(default_policy_for(blueprint.language));
  auto policy = Policy::load(name);
  if (!policy) return std::unexpected(policy.error().with_context("policy " + name));
  return build(&blueprint, std::nullopt, *policy, options, env);
}

Result<BuildSummary> run_plan(const BuildPlan& plan, const Policy& policy, const BuildOptions& options, BuildEnvironment& env) {
  return build(nullptr, plan, policy, options, env);
}

}  // namespace warden::kernel
