#include "kernel/build/step_stages.h"

#include <algorithm>
#include <functional>

#include "common/encoding.h"
#include "kernel/judge/approval.h"
#include "kernel/judge/oracle_run.h"
#include "kernel/record/records.h"
#include "kernel/judge/step_checks.h"

namespace warden::kernel {
namespace {

Error stage_error(std::string message) { return Error{Errc::internal, std::move(message)}; }

// What a WorkTicker says while `what` runs for the step.
WorkingNotice working(const StepContext& ctx, std::string what) {
  return WorkingNotice{.step_index = ctx.index,
                       .steps_total = static_cast<int64_t>(ctx.plan.steps.size()),
                       .step_id = ctx.step.id,
                       .what = std::move(what)};
}

// The head tree, read once per proposal: the targets the executor is shown and the
// pre-images decide() judges come from it.
std::optional<GitTree> head_tree(const StepContext& ctx) {
  auto tree_id = ctx.workspace.repo().tree_of(ctx.head);
  if (!tree_id) return std::nullopt;
  auto tree = ctx.workspace.repo().tree(*tree_id);
  if (!tree) return std::nullopt;
  return std::move(*tree);
}

// The current content of the step's targets, for the executor.
Json target_files(const StepContext& ctx, std::optional<GitTree>& tree) {
  Json files = Json::object();
  if (!tree) return files;
  for (const auto& path : ctx.step.targets) {
    auto file = tree->read(path);
    if (!file || !*file) continue;
    const std::string& content = (*file)->content;
    files[path] = {{"sha256", sha256(content).str()}};
    if (is_valid_utf8(content)) files[path]["content"] = content;
    else files[path]["content_base64"] = base64_encode(content);
  }
  return files;
}

// What the executor's answer is: a Diff JSON stays JSON (judged as received); anything else
// is tried as a git patch against the head. A patch that does not become a Diff there keeps
// its Refusal (malformed_patch, hunk_mismatch, hash_mismatch, ...: what `warden diff parse`
// says of it), and its text when that is short UTF-8, for decide() to give as the reason.
struct Parsed {
  Json diff_json;  // null when nothing usable was received
  std::optional<Diff> diff;
  std::optional<Refusal> refusal;
  std::optional<std::string> error;
};

Parsed parse_proposal(const StepContext& ctx, const std::string& text) {
  Parsed out;
  auto json = parse_json(text);
  if (json && json->is_object()) {
    out.diff_json = std::move(*json);
    if (auto diff = Diff::from_json(out.diff_json)) out.diff = std::move(*diff);
    return out;
  }
  auto diff = ctx.workspace.diff_from_patch(text, ctx.head.hex(), ctx.step.id);
  if (diff) {
    out.diff_json = diff->to_json();
    out.diff = std::move(*diff);
    return out;
  }
  if (text.size() <= 65536 && is_valid_utf8(text)) out.diff_json = text;
  out.error = diff.error().message();
  out.refusal = std::move(diff.error());
  return out;
}

// The pre-images of every path the diff names, read from the head tree, and what the real
// tree says about applying it (structural rules decide() cannot see).
void gather_base(const StepContext& ctx, const Diff& diff, std::optional<GitTree>& tree, ProposalEvidence& evidence) {
  if (!tree) return;
  read_pre_images(*tree, diff, evidence);
  if (auto checked = ctx.workspace.check(diff, ctx.head.hex()); !checked) evidence.workspace_refusal = checked.error();
}

// The runner's bodies into the ledger's blob store, each re-hashed: a result naming output
// the runner did not deliver (or delivered other bytes for) is not evidence an auditor can
// read, so it is not evidence at all.
Status keep_bodies(const StepContext& ctx, const RunResult& run, const RunBodies& bodies) {
  for (const Digest& d : run.named_blobs()) {
    auto body = bodies.find(d);
    if (body == bodies.end()) return fail(Errc::internal, "runner: its result names blob " + d.str() + " it did not deliver");
    auto stored = ctx.rec.ledger().put_blob(body->second);
    if (!stored) return std::unexpected(stored.error());
    if (*stored != d.str()) return fail(Errc::internal, "runner: the bytes it delivered as " + d.str() + " hash to " + *stored);
  }
  return {};
}

// Base checkouts the runner found changed since they were sealed, or left unfinished, and
// rebuilt (runner/check/base_checkout.h): someone reached the runner's cache. Recorded and shown.
void note_discarded_checkouts(const StepContext& ctx, const RunOutcome& ran) {
  for (const DiscardedCheckout& d : ran.discarded_checkouts) {
    ctx.rec.emit(RunEventType::tool_output, ctx.index, "runner",
                 {{"step_id", ctx.step.id}, {"base_checkout_discarded", {{"tree", d.tree}, {"reason", d.reason}}}});
  }
}

// How one of a step's check runs is named: in "still working" notices, when it is stopped,
// and in the error a failed or lying runner gives.
struct RunNames {
  std::string working;      // "base checks"
  std::string stopped;      // "stopped while the base's checks ran"
  std::string tree;         // "the base ": what the tree asked for is, in "not <tree>HEX"
  bool note_discarded = true;
};

// One check run on `runner`, held to its request: a runner only reports, and one that reports
// on another tree or another base than it was asked for (a bug, or a remote runner that lies)
// is not evidence about this step at all — replay holds every proposal's pre-images to the
// run's base as the results name it. Every run of a step (its base, the proposal, the oracle
// run, the held-out run) goes through here, so each is held to the same rule. `on_failure`
// turns a runner's own error into the stage's (the held-out run keeps its words sealed).
Result<RunOutcome> run_held_to_request(const StepContext& ctx, Runner& runner, const RunRequest& request,
                                       const RunNames& names,
                                       const std::function<Error(const std::string&)>& on_failure) {
  auto ran = [&] {
    WorkTicker ticker(ctx.on_working, working(ctx, names.working));
    return runner.run(ctx.workspace.repo(), request);
  }();
  if (ctx.stop.stop_requested()) return std::unexpected(stage_error(names.stopped));
  if (!ran) return std::unexpected(on_failure(ran.error().message()));
  if (names.note_discarded) note_discarded_checkouts(ctx, *ran);
  const std::string asked = request.tree ? request.tree->hex() : request.base_tree.hex();
  if (ran->result.tree != asked) {
    return std::unexpected(stage_error("runner: it reports on tree " + ran->result.tree + ", not " + names.tree + asked));
  }
  // A run of the base tree itself, with no diff, need not name a base (LocalRunner does not);
  // any other names the one it was asked for.
  const bool layered = request.diff || asked != request.base_tree.hex();
  const bool base_ok = ran->result.base_tree ? *ran->result.base_tree == request.base_tree.hex() : !layered;
  if (!base_ok) {
    return std::unexpected(stage_error("runner: it reports base tree " + ran->result.base_tree.value_or("(none)") +
                                       ", not the run's base " + request.base_tree.hex()));
  }
  // Results are comparable only within one environment: the policy's, or the host's /usr.
  if (ran->result.environment != ctx.policy.environment) {
    auto name = [](const std::optional<Digest>& d) { return d ? "environment " + d->str() : std::string("the host's /usr"); };
    return std::unexpected(stage_error("runner: it ran the checks in " + name(ran->result.environment) + ", not in " +
                                       name(ctx.policy.environment)));
  }
  return std::move(*ran);
}

// A runner's own error, as a stage's: `prefix` says which run it was.
std::function<Error(const std::string&)> runner_failed(std::string prefix) {
  return [prefix = std::move(prefix)](const std::string& why) { return stage_error(prefix + why); };
}

// The step's base tested: the accepted run that made the head when it covers the checks,
// else a run of its own (from the runner's cache when the tree was tested before), recorded.
Result<std::optional<BaseRun>> test_base(const StepContext& ctx, const std::vector<CheckSpec>& checks) {
  const std::vector<CheckSpec> wanted = test_checks(checks);
  if (wanted.empty()) return std::optional<BaseRun>();
  auto tree = ctx.workspace.repo().tree_of(ctx.head);
  if (!tree) return std::unexpected(stage_error("the base's tree: " + tree.error().message()));
  if (ctx.previous_run && ctx.previous_run->tree == *tree && covers(ctx.previous_run->run, wanted)) {
    return std::optional<BaseRun>(*ctx.previous_run);
  }
  RunRequest request;
  request.base_tree = ctx.start_tree;
  request.tree = *tree;
  request.checks = wanted;
  request.stop = ctx.stop;
  request.reuse = true;
  auto ran = run_held_to_request(ctx, ctx.runner, request,
                                 {"base checks", "stopped while the base's checks ran", "the base "},
                                 runner_failed("runner (the base's tests): "));
  if (!ran) return std::unexpected(ran.error());
  if (Status st = keep_bodies(ctx, ran->result, ran->bodies); !st) return std::unexpected(st.error());
  Json verdicts = Json::object();
  for (const auto& c : ran->result.checks) verdicts[c.name] = c.verdict;
  ctx.rec.emit(RunEventType::tool_output, ctx.index, "runner",
               {{"step_id", ctx.step.id}, {"base_tree", tree->hex()}, {"checks", verdicts}});
  BaseRunRecord record;
  record.run_id = ctx.rec.run_id();
  record.step_id = ctx.step.id;
  record.tree = tree->hex();
  record.run_result_sha256 = ran->result.deterministic_digest();
  record.run_result = ran->result.deterministic_json();
  record.attestations = attestations_json(ran->attestations);
  auto rec = ctx.rec.record_now(record);
  if (!rec) return std::unexpected(rec.error());
  return std::optional<BaseRun>(BaseRun{*tree, std::move(ran->result), rec->seq});
}

// The proposal's diff without its changes to tests and hooks (oracle_run.h), those its step's
// approvals admit aside; none when it changes none.
std::optional<Diff> without_test_changes(const StepContext& ctx, const Proposed& proposed) {
  return oracle_diff(*proposed.diff, proposed.evidence, ctx.policy.oracle,
                     admitted_tests(ctx.step.approvals, proposed.diff->digest(), ctx.policy.approvers).tests);
}

// The oracle run (oracle_run.h): when the proposal adds tests or hooks or changes a test file,
// its test checks again on its diff without those changes, recorded.
Result<std::optional<OracleRun>> test_oracle(const StepContext& ctx, const Proposed& proposed, const std::vector<CheckSpec>& checks) {
  if (checks.empty()) return std::optional<OracleRun>();
  std::optional<Diff> diff = without_test_changes(ctx, proposed);
  if (!diff) return std::optional<OracleRun>();
  auto applied = ctx.workspace.apply(*diff, ctx.head.hex());
  if (!applied) return std::unexpected(stage_error("applying the diff without its new tests: " + applied.error().message()));
  RunRequest request;
  request.base_tree = ctx.start_tree;
  request.tree = applied->tree;
  request.diff = &*diff;
  request.checks = checks;
  request.stop = ctx.stop;
  auto ran = run_held_to_request(ctx, ctx.runner, request,
                                 {"oracle checks", "stopped while the base's tests ran on the proposal", ""},
                                 runner_failed("runner (the oracle run): "));
  if (!ran) return std::unexpected(ran.error());
  if (Status st = keep_bodies(ctx, ran->result, ran->bodies); !st) return std::unexpected(st.error());
  Json verdicts = Json::object();
  for (const auto& c : ran->result.checks) verdicts[c.name] = c.verdict;
  ctx.rec.emit(RunEventType::tool_output, ctx.index, "runner",
               {{"step_id", ctx.step.id}, {"attempt", proposed.number}, {"oracle_run", true}, {"checks", verdicts}});
  OracleRunRecord record;
  record.run_id = ctx.rec.run_id();
  record.step_id = ctx.step.id;
  record.attempt = proposed.number;
  record.run_result_sha256 = ran->result.deterministic_digest();
  record.run_result = ran->result.deterministic_json();
  record.attestations = attestations_json(ran->attestations);
  auto rec = ctx.rec.record_now(record);
  if (!rec) return std::unexpected(rec.error());
  return std::optional<OracleRun>(OracleRun{std::move(ran->result), rec->seq});
}

// The held-out run (held_out.h): the plan's held-out checks on the proposal's tree with the
// bundle laid over it — without the proposal's changes to tests and hooks, as in the oracle
// run: a new test module imported beside the held-out ones could rebind the code they test. Its result is sealed in the vault, never in the blob store, an event or
// the ledger before the reveal; the held_out_run record commits to it by digest and says
// whether every held-out test passed, all the executor hears.
Result<HeldOutRun> test_held_out(const StepContext& ctx, const Proposed& proposed, const AppliedDiff& applied) {
  const HeldOutSpec& spec = *ctx.plan.held_out;
  if (!ctx.held_out || !ctx.vault || ctx.held_out->digest() != spec.sha256) {
    return std::unexpected(stage_error("the plan holds held-out checks, but their bundle " + spec.sha256.str() + " is not open"));
  }
  const std::optional<Diff> without_tests = without_test_changes(ctx, proposed);
  ObjectId tree = applied.tree;
  if (without_tests) {
    auto stripped = ctx.workspace.apply(*without_tests, ctx.head.hex());
    if (!stripped) return std::unexpected(stage_error("applying the diff without its test changes: " + stripped.error().message()));
    tree = stripped->tree;
  }
  RunRequest request;
  request.base_tree = ctx.start_tree;
  request.tree = tree;
  request.diff = without_tests ? &*without_tests : &*proposed.diff;
  request.checks = spec.checks;
  request.stop = ctx.stop;
  for (const HeldOutFile& f : ctx.held_out->files) request.overlay.push_back({held_out_path(*ctx.held_out, f), f.mode, f.content});
  Runner& runner = ctx.held_out_runner ? *ctx.held_out_runner : ctx.runner;
  // The runner's own words may name a held-out file: only the owner's vault hears them.
  auto ran = run_held_to_request(ctx, runner, request,
                                 {"held-out checks", "stopped while the held-out checks ran", "", false},
                                 [&](const std::string& why) {
                                   (void)ctx.vault->note_error(spec.sha256, why);
                                   return stage_error("runner: the held-out run could not run (why is in the bundle's "
                                                      "errors.log, sealed beside the ledger)");
                                 });
  if (!ran) return std::unexpected(ran.error());
  SealedRun sealed{ran->result.deterministic_digest(), ran->result.deterministic_json(), {}};
  for (const Digest& d : ran->result.named_blobs()) {
    auto body = ran->bodies.find(d);
    if (body == ran->bodies.end()) return std::unexpected(stage_error("runner: its result names blob " + d.str() + " it did not deliver"));
    if (sha256(body->second) != d) return std::unexpected(stage_error("runner: the bytes it delivered as " + d.str() + " hash otherwise"));
    sealed.bodies.emplace(d, body->second);
  }
  if (Status st = ctx.vault->seal_run(spec.sha256, sealed); !st) return std::unexpected(st.error());
  HeldOutRunRecord record;
  record.run_id = ctx.rec.run_id();
  record.step_id = ctx.step.id;
  record.attempt = proposed.number;
  record.held_out_sha256 = spec.sha256;
  record.result_commitment = sealed_result_commitment(ctx.held_out->salt, sealed.run_result_sha256);
  record.passed = held_out_failures(ran->result, *ctx.held_out) == 0;
  // A check that never reaches where the bundle is laid fails every proposal, the honest one
  // too; its owner reads why in the vault (the executor hears only that it failed).
  for (const CheckResult& c : ran->result.checks) {
    if (!c.tests.empty() && !reports_the_bundle(c, *ctx.held_out)) {
      (void)ctx.vault->note_error(spec.sha256, "held-out check " + c.name + " reported no test of the bundle (does its command reach " +
                                                   ctx.held_out->at + "?): it fails every proposal");
    }
  }
  auto rec = ctx.rec.record_now(record);
  if (!rec) return std::unexpected(rec.error());
  ctx.rec.emit(RunEventType::tool_output, ctx.index, "runner",
               {{"step_id", ctx.step.id}, {"attempt", proposed.number}, {"held_out_run", true}, {"passed", record.passed}});
  return HeldOutRun{record.passed, rec->seq};
}

}  // namespace

void read_pre_images(GitTree& tree, const Diff& diff, ProposalEvidence& evidence) {
  for (const auto& f : diff.files) {
    for (const std::string* p : {&f.path, f.old_path ? &*f.old_path : nullptr}) {
      if (!p || evidence.base.contains(*p)) continue;
      BaseFileImage image;
      if (auto file = tree.read(*p); file && *file) {
        image.content = (*file)->content;
        image.mode = (*file)->mode;
      }
      evidence.base.emplace(*p, std::move(image));
    }
  }
}

std::vector<CheckSpec> test_checks(const std::vector<CheckSpec>& checks) {
  std::vector<CheckSpec> out;
  for (const CheckSpec& c : checks) {
    if (c.report_format != "none") out.push_back(c);
  }
  return out;
}

bool covers(const RunResult& run, const std::vector<CheckSpec>& wanted) {
  for (const CheckSpec& spec : wanted) {
    auto it = std::find_if(run.checks.begin(), run.checks.end(), [&](const CheckResult& c) { return c.name == spec.name; });
    if (it == run.checks.end() || it->spec_sha256 != spec.digest()) return false;
  }
  return true;
}

executor::ProposalRequest proposal_request(const StepContext& ctx, int64_t number) {
  std::optional<GitTree> tree = head_tree(ctx);
  executor::ProposalRequest request;
  request.step = ctx.step.to_json();
  request.context = {{"attempt", number},
                     {"plan_sha256", ctx.plan_sha256.str()},
                     {"base_commit", ctx.head.hex()},
                     {"files", target_files(ctx, tree)},
                     {"refusals", ctx.refusals}};
  request.timeout = ctx.time_left();
  request.stop = ctx.stop;
  return request;
}

void announce_proposal(const StepContext& ctx, int64_t number, bool again) {
  Json data = {{"step_id", ctx.step.id}, {"attempt", number}};
  if (again) data["again"] = true;
  ctx.rec.emit(RunEventType::tool_called, ctx.index, ctx.proposer.name(), std::move(data));
}

Answer read_answer(const StepContext& ctx, const Checked<std::string>& text, std::optional<std::string> identity) {
  Answer out;
  out.identity = std::move(identity);
  out.evidence.step_id = ctx.step.id;
  out.evidence.diff = nullptr;
  if (!text) {
    out.error = text.error().detail;
    out.evidence.executor_refusal = text.error();
    return out;
  }
  Parsed parsed = parse_proposal(ctx, *text);
  out.evidence.diff = std::move(parsed.diff_json);
  out.diff = std::move(parsed.diff);
  out.evidence.patch_refusal = std::move(parsed.refusal);
  out.error = std::move(parsed.error);
  return out;
}

Result<Proposed> record_proposal(const StepContext& ctx, int64_t number, Answer answer) {
  Proposed out;
  out.number = number;
  out.evidence = std::move(answer.evidence);
  out.diff = std::move(answer.diff);
  std::optional<GitTree> tree = head_tree(ctx);
  if (out.diff) gather_base(ctx, *out.diff, tree, out.evidence);

  auto evidence_bytes = canonicalize(out.evidence.to_json());
  if (!evidence_bytes) return std::unexpected(stage_error("recording the proposal: " + evidence_bytes.error().message));
  auto blob = ctx.rec.ledger().put_blob(*evidence_bytes);
  if (!blob) return std::unexpected(blob.error());
  ProposalRecord record;
  record.run_id = ctx.rec.run_id();
  record.step_id = ctx.step.id;
  record.attempt = number;
  record.executor = ctx.proposer.name();
  record.executor_sandbox = ctx.proposer.confinement();
  record.executor_identity = std::move(answer.identity);
  record.evidence_blob = Digest::parse(*blob).value();
  if (out.diff) record.diff_sha256 = out.diff->digest();
  record.error = std::move(answer.error);
  auto rec = ctx.rec.record_now(record);
  if (!rec) return std::unexpected(rec.error());
  out.record = *rec;
  return out;
}

Result<Proposed> propose(const StepContext& ctx, int64_t number) {
  executor::ProposalRequest request = proposal_request(ctx, number);
  announce_proposal(ctx, number);
  auto text = [&] {
    WorkTicker ticker(ctx.on_working, working(ctx, "executor"));
    return ctx.proposer.propose(request);
  }();
  Answer answer = read_answer(ctx, text, ctx.proposer.answered_by());
  if (ctx.stop.stop_requested()) return std::unexpected(stage_error("stopped while the executor was proposing"));
  return record_proposal(ctx, number, std::move(answer));
}

Result<std::optional<Tested>> run_checks(const StepContext& ctx, const Proposed& proposed, std::optional<BaseRun>& base) {
  if (!proposed.diff || proposed.evidence.workspace_refusal) return std::optional<Tested>();
  const std::vector<CheckSpec> checks = checks_for_step(ctx.plan, ctx.policy, ctx.step, ctx.completed);
  if (!base) {
    auto tested = test_base(ctx, checks);
    if (!tested) return std::unexpected(tested.error());
    base = std::move(*tested);
  }
  // The tree under test is the diff on the branch tip; the runner layers it over the run's
  // start tree, whose checkout it materializes once per run: a step costs O(what the run
  // changed so far), not O(repository).
  auto applied = ctx.workspace.apply(*proposed.diff, ctx.head.hex());
  if (!applied) return std::unexpected(stage_error("applying the diff: " + applied.error().message()));
  RunRequest request;
  request.base_tree = ctx.start_tree;
  request.tree = applied->tree;
  request.diff = &*proposed.diff;
  request.checks = checks;
  request.stop = ctx.stop;
  // The diff applied above, so a runner error is the sandbox or the repository failing.
  auto ran = run_held_to_request(ctx, ctx.runner, request,
                                 {"checks", "stopped while the checks ran", "the tree under test "},
                                 runner_failed("runner: "));
  if (!ran) return std::unexpected(ran.error());

  if (Status st = keep_bodies(ctx, ran->result, ran->bodies); !st) return std::unexpected(st.error());

  Tested out{*applied, std::move(ran->result), {}, std::nullopt};
  RunResultRecord record;
  record.run_id = ctx.rec.run_id();
  record.step_id = ctx.step.id;
  record.attempt = proposed.number;
  record.run_result_sha256 = out.run.deterministic_digest();
  record.run_result = out.run.deterministic_json();
  record.attestations = attestations_json(ran->attestations);
  auto rec = ctx.rec.record_now(record);
  if (!rec) return std::unexpected(rec.error());
  out.record = *rec;
  Json verdicts = Json::object();
  for (const auto& c : out.run.checks) verdicts[c.name] = c.verdict;
  ctx.rec.emit(RunEventType::tool_output, ctx.index, "runner",
               {{"step_id", ctx.step.id}, {"attempt", proposed.number}, {"checks", verdicts}});
  if (std::vector<CheckSpec> again = oracle_checks(checks, base && base_passed_a_test(base->run)); !again.empty()) {
    auto oracle = test_oracle(ctx, proposed, again);
    if (!oracle) return std::unexpected(oracle.error());
    out.oracle = std::move(*oracle);
  }
  if (ctx.plan.held_out && ctx.plan.held_out->judges(ctx.step.id)) {
    auto held_out = test_held_out(ctx, proposed, out.applied);
    if (!held_out) return std::unexpected(held_out.error());
    out.held_out = *held_out;
  }
  return std::optional<Tested>(std::move(out));
}

Result<Verified> verify(const StepContext& ctx, const Proposed& proposed, const Tested* tested, const BaseRun* base) {
  // The base run counts only beside a run of the proposal: without one there is nothing to compare.
  const BaseRun* compared = tested ? base : nullptr;
  DecisionInput input{ctx.plan, ctx.completed, proposed.evidence, tested ? &tested->run : nullptr, ctx.policy,
                      compared ? &compared->run : nullptr,
                      tested && tested->oracle ? &tested->oracle->run : nullptr,
                      tested && tested->held_out ? std::optional<bool>(tested->held_out->passed) : std::nullopt};
  Verified out;
  DecisionRecord record;
  record.run_id = ctx.rec.run_id();
  record.step_id = ctx.step.id;
  record.attempt = proposed.number;
  record.plan_sha256 = ctx.plan_sha256;
  record.policy_sha256 = ctx.policy_sha256;
  record.completed_steps.assign(ctx.completed.begin(), ctx.completed.end());
  record.proposal_seq = proposed.record.seq;
  if (tested) record.run_result_seq = tested->record.seq;
  if (compared) record.base_run_seq = compared->seq;
  if (tested && tested->oracle) record.oracle_run_seq = tested->oracle->seq;
  if (tested && tested->held_out) record.held_out_run_seq = tested->held_out->seq;
  record.verdict = decide(input);
  auto rec = ctx.rec.record_now(record);
  if (!rec) return std::unexpected(rec.error());
  out.decided = Decided{record.verdict, *rec};
  const Verdict& verdict = out.decided.verdict;
  ctx.rec.emit(RunEventType::tool_output, ctx.index, "kernel",
               {{"step_id", ctx.step.id},
                {"attempt", proposed.number},
                {"accepted", verdict.accepted},
                {"reasons", verdict.reason_codes()}});
  // The decision is durable (record_now); an accepted one is followed by the commit intent.
  if (verdict.accepted) return out;

  ProposalRefusalRecord refusal;
  refusal.run_id = ctx.rec.run_id();
  RefusalReport& report = refusal.report;
  report.run_id = ctx.rec.run_id();
  report.seed_sha256 = ctx.plan_sha256;
  report.step_id = ctx.step.id;
  report.attempt = proposed.number;
  report.reasons = verdict.reasons;
  report.evidence.push_back(proposed.record.hash);
  if (tested) report.evidence.push_back(tested->record.hash);
  report.evidence.push_back(rec->hash);
  for (const auto& r : report.reasons) report.policy_suggestions.push_back(suggestion_for(r));
  if (Status recorded = ctx.rec.record(refusal); !recorded) return std::unexpected(recorded.error());
  // Durable before the executor hears of it and tries again.
  if (Status st = ctx.rec.flush(); !st) return std::unexpected(st.error());
  out.refusal_report = report;
  ctx.proposer.learn(report.to_json());
  return out;
}

Result<Committed> commit(const StepContext& ctx, const Attempt& attempt) {
  if (!attempt.tested || !attempt.proposed.diff || !attempt.decided) {
    return std::unexpected(stage_error("an accepted diff without a tested tree"));
  }
  const AppliedDiff& applied = attempt.tested->applied;
  CommitOptions options;
  options.branch = ctx.plan.branch;
  options.message = "warden: " + ctx.step.id + " " + std::string(step_action_name(ctx.step.action)) +
                    (ctx.step.description.empty() ? "" : ": " + ctx.step.description);
  options.record = attempt.decided->record.hash;
  auto made = ctx.workspace.write_commit(*attempt.proposed.diff, applied, options, ctx.rec.clock());
  if (!made) return std::unexpected(stage_error("committing: " + made.error().message()));
  CommitRecord record;
  record.run_id = ctx.rec.run_id();
  record.step_id = ctx.step.id;
  record.attempt = static_cast<uint64_t>(attempt.number());
  record.commit = made->hex();
  record.tree = applied.tree.hex();
  record.parent = ctx.head.hex();
  record.branch = "refs/heads/" + ctx.plan.branch;
  record.plan_sha256 = ctx.plan_sha256;
  record.proposal_sha256 = attempt.proposed.diff->digest();
  record.run_result_sha256 = attempt.tested->run.deterministic_digest();
  record.policy_sha256 = ctx.policy_sha256;
  record.decision_seq = attempt.decided->record.seq;
  if (attempt.tested->held_out) record.held_out_sha256 = ctx.plan.held_out->sha256;

  // Write-ahead: the intent is durable before the branch moves, so the branch never holds a
  // commit the ledger does not justify; the commit record confirms the move after it.
  GitRepo& repo = ctx.workspace.repo();
  auto before = repo.branch_tip(ctx.plan.branch);
  if (!before) return std::unexpected(stage_error("reading the branch: " + before.error().message()));
  // Another writer on the same repository (a second run) moving the branch is the run's
  // precondition failing, not Warden failing: both say branch_moved.
  if (*before && !(**before == ctx.head)) {
    return std::unexpected(Error{Errc::failed_precondition, "branch_moved: the branch " + record.branch + " is at " +
                                                                (*before)->hex() + ", not at the step's base " +
                                                                ctx.head.hex() + ": another writer moved it"});
  }
  if (auto intent = ctx.rec.record_now(CommitIntentRecord{record}); !intent) {
    return std::unexpected(intent.error().with_context("recording the commit intent (the branch was not moved)"));
  }
  if (auto moved = repo.move_branch(ctx.plan.branch, *before, *made); !moved) {
    Errc code = moved.error().code == RefusalCode::branch_moved ? Errc::failed_precondition : Errc::internal;
    return std::unexpected(Error{code, "moving the branch: " + moved.error().message()});
  }
  auto rec = ctx.rec.record_now(record);
  if (!rec) {
    // The ledger would not confirm the move: undo it, so the branch stays at the last commit
    // the ledger confirmed (the recorded intent tells an auditor the move was attempted).
    auto back = repo.move_branch(ctx.plan.branch, *made, *before);
    return std::unexpected(rec.error().with_context(
        back ? "recording the commit (the branch was moved back to " + ctx.head.hex() + ")"
             : "recording the commit; moving the branch back also failed (" + back.error().message() +
                   "): the branch holds " + made->hex() + ", which the ledger records only as an intent"));
  }
  return Committed{*made, *rec};
}

}  // namespace warden::kernel
