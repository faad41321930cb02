// The run's course (build_loop_internal.h): its lifecycle from queued to a terminal state, the
// plan it adopts, its steps in order, replacement plans, and the seal at its end; run_build()
// and run_plan(), and the summary they return.
#include "kernel/build/build_loop.h"
#include "kernel/build/run_environment.h"

#include <algorithm>
#include <set>

#include "kernel/build/build_loop_internal.h"
#include "kernel/judge/checkout_attributes.h"
#include "kernel/judge/plan_generate.h"
#include "kernel/record/held_out_reveal.h"
#include "kernel/record/plan_commit.h"
#include "kernel/record/replan.h"

namespace warden::kernel {

namespace detail {

// queued -> planning: records the blueprint (when there is one) and the policy.
Status Build::start(const BlueprintSpec* blueprint, const Policy& policy) {
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
Result<bool> Build::adopt_plan(BuildPlan plan, PlanSource source, const std::optional<PlanAuthor>& author) {
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
Status Build::run_steps(const ObjectId& base_commit) {
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

Status Build::end(RunStatus terminal, ErrorType type, std::string message) {
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
void Build::note_base_attributes() {
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

Status Build::move(RunStatus to) {
  if (Status st = life_.move(to); !st) return st;
  summary_.status = to;
  return status_record();
}

Status Build::status_record() {
  RunStatusRecord r{run_id(), life_.status(), life_.error_type(), life_.error()};
  return rec_.record(r);
}

// verifying -> completed: the branch must hold exactly what the ledger says was accepted.
Status Build::finish() {
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
Status Build::seal() {
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

// The run has ended (its last status is in the ledger): a bundle that judged this run alone
// is published now, before anyone else can propose against it. A bundle its owner reveals
// (a plan given with --plan may carry one) stays sealed.
Status Build::reveal_held_out_at_end() {
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

// A step ran out of retries: a replacement plan, when the bound allows and the executor can.
Result<bool> Build::replan(const BuildStep& failed) {
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

}  // namespace detail

namespace {

using detail::Build;

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
  if (Status st = settle_environment(*policy, options.environment.empty() ? blueprint.environment : options.environment,
                                     options.environment.empty() ? options.blueprint_dir : std::filesystem::current_path(),
                                     session.env_store);
      !st) {
    return std::unexpected(st.error());
  }
  return build(&blueprint, std::nullopt, *policy, options, session, proposer);
}

Result<BuildSummary> run_plan(const BuildPlan& plan, const Policy& policy, const BuildOptions& options,
                              KernelSession& session, executor::Proposer& proposer) {
  return build(nullptr, plan, policy, options, session, proposer);
}

}  // namespace warden::kernel
