// Replay's plans and decisions (replay_internal.h): each plan generated or verified again,
// each decision recomputed with decide() from the records it names, read back here.
#include <map>
#include <set>
#include <string>
#include <vector>

#include "kernel/audit/replay_internal.h"
#include "kernel/judge/decide.h"
#include "kernel/judge/plan_generate.h"
#include "kernel/judge/plan_verify.h"
#include "kernel/record/plan_commit.h"

namespace warden::kernel::detail {

Status Replayer::on_blueprint(const BlueprintRecord& r) {
  auto bp = BlueprintSpec::from_json(r.blueprint);
  if (!bp) {
    problem("the recorded blueprint does not parse: " + bp.error().message);
    return {};
  }
  if (bp->digest() != r.blueprint_sha256) problem("blueprint_sha256 does not match the blueprint");
  facts(r.run_id).blueprint = std::move(*bp);
  return {};
}

Status Replayer::on_policy(const PolicyRecord& r) {
  auto canonical = canonicalize(r.policy);
  if (!canonical || sha256(*canonical) != r.policy_sha256) {
    problem("policy_sha256 does not match the recorded policy");
    return {};
  }
  // The record names the check programs by digest; decisions need only the rules.
  Json rules = r.policy;
  rules.erase("programs");
  auto policy = Policy::parse(rules.dump(), "recorded policy");
  if (!policy) {
    problem("the recorded policy does not parse: " + policy.error().message);
    return {};
  }
  facts(r.run_id).policies.emplace(r.policy_sha256.str(), std::move(*policy));
  facts(r.run_id).policy_programs.emplace(r.policy_sha256.str(), r.policy.value("programs", Json::object()));
  policy_seqs_.emplace(seq_, std::pair{r.run_id.value_or(std::string()), r.policy_sha256.str()});
  return {};
}

Status Replayer::on_plan_proposal(const PlanProposalRecord& r) {
  auto plan = BuildPlan::from_json(r.plan);
  if (!plan) {
    proposal_plans_.emplace(seq_, std::nullopt);  // its refusal is checked below
    return {};
  }
  if (plan->digest() != r.plan_sha256) {
    problem("plan_sha256 does not match the proposed plan");
    return {};
  }
  RunFacts& run = facts(r.run_id);
  if (r.source == PlanSource::generated) {
    // The kernel's own plan: generated again, it must come out the same.
    if (!run.blueprint || run.policies.empty()) {
      problem("a generated plan without a recorded blueprint and policy");
      return {};
    }
    // The held-out digest is the build's input (a salted bundle), not derived; the rest is.
    auto again = generate_plan(*run.blueprint, run.policies.rbegin()->second,
                               plan->held_out ? std::optional<Digest>(plan->held_out->sha256) : std::nullopt);
    if (!again || again->digest() != plan->digest()) {
      problem("the blueprint generates a different plan than the one recorded");
      return {};
    }
  }
  proposal_plans_.emplace(seq_, *plan);
  run.proposed.emplace(plan->digest().str(), std::move(*plan));
  return {};
}

const Policy* Replayer::policy_of(RunFacts& run, const std::string& digest) {
  auto it = run.policies.find(digest);
  return it == run.policies.end() ? nullptr : &it->second;
}

Status Replayer::on_plan_commit(const PlanCommitRecord& r) { return on_plan_verdict(r.run_id, r.proposal_seq, true); }

Status Replayer::on_plan_refusal(const PlanRefusalRecord& r) {
  if (!r.proposal_seq) {
    ++report_.plans;
    facts(r.run_id);
    // A replacement plan that was not a plan at all: its text must indeed not parse.
    auto text = r.plan_blob ? snap_.blob(*r.plan_blob) : Result<std::string>(std::unexpected(Error{Errc::corrupt, ""}));
    auto json = text ? parse_json(*text) : Result<Json>(std::unexpected(Error{Errc::corrupt, ""}));
    if (!text) problem("a plan refusal without a proposal names no stored plan text");
    else if (json && BuildPlan::from_json(*json)) problem("refused as unreadable, but the recorded text is a plan");
    return {};
  }
  return on_plan_verdict(r.run_id, *r.proposal_seq, false);
}

// The policy a plan was judged under. In a run: the run's one policy (a run with two has
// none it can be judged under, wherever the second stands: a writer could append a weaker
// one right before a plan of its own). Outside a run: the policy recorded right before the
// proposal (`warden plan commit` writes each commit's own, and commits may name others).
Status Replayer::on_plan_verdict(const std::optional<std::string>& run_id, uint64_t proposal_seq, bool committed) {
  ++report_.plans;
  RunFacts& run = facts(run_id);
  auto it = proposal_plans_.find(proposal_seq);
  if (it == proposal_plans_.end()) {
    problem("names plan proposal " + std::to_string(proposal_seq) + ", which is not an earlier plan_proposal");
    return {};
  }
  const Policy* judged_under = nullptr;
  if (run_id) {
    if (run.policies.size() == 1) judged_under = &run.policies.begin()->second;
  } else if (auto before = proposal_seq > 0 ? policy_seqs_.find(proposal_seq - 1) : policy_seqs_.end();
             before != policy_seqs_.end() && before->second.first.empty()) {
    judged_under = policy_of(run, before->second.second);
  }
  if (!judged_under) {
    problem(run_id ? "a plan verdict in a run needs exactly one recorded policy in it"
                   : "a plan verdict outside a run needs its policy recorded right before its proposal");
    return {};
  }
  const Policy& policy = *judged_under;
  bool valid = it->second && verify_plan(*it->second, policy).empty();
  if (valid != committed) {
    problem(committed ? "the plan was committed, but verify_plan refuses it" : "the plan was refused, but verify_plan accepts it");
    return {};
  }
  if (committed) run.committed.emplace(it->second->digest().str(), *it->second);
  return {};
}

Status Replayer::on_decision(const DecisionRecord& d) {
  ++report_.decisions;
  RunFacts& run = facts(d.run_id);
  auto plan = run.committed.find(d.plan_sha256.str());
  if (plan == run.committed.end()) {
    problem("decides against a plan that was never committed in its run");
    return {};
  }
  const Policy* policy = policy_of(run, d.policy_sha256.str());
  if (!policy) {
    problem("decides under a policy that is not recorded in its run");
    return {};
  }
  const std::vector<std::string> derived(run.completed.begin(), run.completed.end());
  if (d.completed_steps != derived) {
    problem("completed_steps " + Json(d.completed_steps).dump() + " differ from the run's commit records " +
            Json(derived).dump());
    return {};
  }
  auto evidence = proposal_evidence(d.proposal_seq, d.step_id);
  if (!evidence) {
    problem(evidence.error().message);
    return {};
  }
  // Results are comparable only within one environment: each run a decision rests on names
  // the one its policy does (none: the host's /usr), as the kernel required when it decided.
  auto other_environment = [&](const RunResult& r, const char* what, uint64_t seq) {
    if (r.environment == policy->environment) return false;
    auto name = [](const std::optional<Digest>& e) { return e ? "environment " + e->str() : std::string("the host's /usr"); };
    problem(std::string(what) + " " + std::to_string(seq) + " ran in " + name(r.environment) + ", but the policy names " +
            name(policy->environment));
    return true;
  };
  std::optional<RunResult> run_result;
  if (d.run_result_seq) {
    auto rr = recorded_run_result(*d.run_result_seq, d.step_id);
    if (!rr) {
      problem(rr.error().message);
      return {};
    }
    run_result = std::move(*rr);
    if (other_environment(*run_result, "run result", *d.run_result_seq)) return {};
    // Every step of a run is tested over the run's one base tree; a run result naming another
    // would move the tree the pre-images are held to.
    if (!run.start_tree) {
      run.start_tree = run_result->base_tree;
    } else if (run_result->base_tree != run.start_tree) {
      problem("run result " + std::to_string(*d.run_result_seq) + " was tested over base tree " +
              run_result->base_tree.value_or("(none)") + ", but the run's base is " + *run.start_tree);
      return {};
    }
    if (options_.rerun) {
      if (Status st = rerun(plan->second, policy->name, d.policy_sha256.str(), d.step_id, run, *evidence, *run_result);
          !st) {
        problem(st.error().message);
        return {};
      }
    }
  }
  std::optional<RunResult> base_run;
  if (d.base_run_seq) {
    if (!run_result) {
      problem("names a base run but no run of the proposal");
      return {};
    }
    auto base = recorded_base_run(*d.base_run_seq, d.run_id);
    if (!base) {
      problem(base.error().message);
      return {};
    }
    // The base run must be of the tree the step built on, or it proves nothing about what
    // the proposal had to keep passing.
    const std::optional<std::string>& parent = run.tip_tree ? run.tip_tree : run.start_tree;
    if (!parent || base->tree != *parent) {
      problem("base run " + std::to_string(*d.base_run_seq) + " tested tree " + base->tree + ", but the step builds on " +
              parent.value_or("(unknown)"));
      return {};
    }
    if (other_environment(*base, "base run", *d.base_run_seq)) return {};
    base_run = std::move(*base);
  }
  std::optional<RunResult> oracle_run;
  if (d.oracle_run_seq) {
    auto record = earlier<OracleRunRecord>(*d.oracle_run_seq, "oracle_run_seq");
    auto oracle = record ? run_result_of(record->run_result, record->run_result_sha256, *d.oracle_run_seq)
                         : Result<RunResult>(std::unexpected(record.error()));
    if (!oracle) {
      problem(oracle.error().message);
      return {};
    }
    if (record->run_id != d.run_id || record->step_id != d.step_id || record->attempt != d.attempt) {
      problem("oracle run " + std::to_string(*d.oracle_run_seq) + " is another attempt's");
      return {};
    }
    // decide() holds its diff to the proposal's without its new tests; its base must be the run's.
    if (oracle->base_tree != run.start_tree) {
      problem("oracle run " + std::to_string(*d.oracle_run_seq) + " was tested over another base tree");
      return {};
    }
    if (other_environment(*oracle, "oracle run", *d.oracle_run_seq)) return {};
    oracle_run = std::move(*oracle);
  }
  std::optional<bool> held_out_passed;
  if (d.held_out_run_seq) {
    auto passed = held_out_verdict(d, plan->second, *policy, run, *evidence);
    if (!passed) {
      problem(passed.error().message);
      return {};
    }
    held_out_passed = *passed;
  }
  if (Status st = check_pre_images(run, *evidence); !st) {
    problem(st.error().message);
    return {};
  }
  DecisionInput input{plan->second, run.completed, *evidence, run_result ? &*run_result : nullptr, *policy,
                      base_run ? &*base_run : nullptr, oracle_run ? &*oracle_run : nullptr, held_out_passed};
  Verdict again = decide(input);
  if (again != d.verdict) {
    problem("decide() gives " + again.to_json().dump() + " but the ledger records " + d.verdict.to_json().dump());
    return {};
  }
  run.decisions.emplace(seq_, d);
  return {};
}

Result<ProposalEvidence> Replayer::proposal_evidence(uint64_t seq, const std::string& step_id) {
  auto proposal = earlier<ProposalRecord>(seq, "proposal_seq");
  if (!proposal) return std::unexpected(proposal.error());
  if (proposal->step_id != step_id) return fail(Errc::corrupt, "the proposal is for another step");
  auto blob = snap_.blob(proposal->evidence_blob);
  if (!blob) return fail(Errc::corrupt, "the proposal's evidence blob is missing: " + blob.error().message);
  auto json = parse_json(*blob);
  if (!json) return fail(Errc::corrupt, "the proposal's evidence is not JSON");
  auto evidence = ProposalEvidence::from_json(*json);
  if (!evidence) return fail(Errc::corrupt, "the proposal's evidence does not parse: " + evidence.error().message);
  return evidence;
}

Result<RunResult> Replayer::recorded_run_result(uint64_t seq, const std::string& step_id) {
  auto record = earlier<RunResultRecord>(seq, "run_result_seq");
  if (!record) return std::unexpected(record.error());
  if (record->step_id != step_id) return fail(Errc::corrupt, "the run result is for another step");
  return run_result_of(record->run_result, record->run_result_sha256, seq);
}

// A decision's base run: a base_run record, or the run_result record of the accepted run
// that made the tree — of the same run either way.
Result<RunResult> Replayer::recorded_base_run(uint64_t seq, const std::string& run_id) {
  auto rec = snap_.record(seq);
  if (rec && rec->kind == record_kind::run_result) {
    auto record = earlier<RunResultRecord>(seq, "base_run_seq");
    if (!record) return std::unexpected(record.error());
    if (record->run_id != run_id) return fail(Errc::corrupt, "the base run is another run's");
    return run_result_of(record->run_result, record->run_result_sha256, seq);
  }
  auto record = earlier<BaseRunRecord>(seq, "base_run_seq");
  if (!record) return std::unexpected(record.error());
  if (record->run_id != run_id) return fail(Errc::corrupt, "the base run is another run's");
  auto rr = run_result_of(record->run_result, record->run_result_sha256, seq);
  if (rr && rr->tree != record->tree) return fail(Errc::corrupt, "the base run record names tree " + record->tree + ", its result " + rr->tree);
  return rr;
}

// A recorded run result, read back and held to its digest; every output body, report and
// artifact it names must be in the ledger, where an auditor reads why a check ended so.
Result<RunResult> Replayer::run_result_of(const Json& json, const Digest& digest, uint64_t seq) {
  auto rr = RunResult::from_json(json);
  if (!rr) return fail(Errc::corrupt, "the run result does not parse: " + rr.error().message);
  if (rr->deterministic_digest() != digest) return fail(Errc::corrupt, "run_result_sha256 does not match the recorded run result");
  for (const Digest& d : rr->named_blobs()) {
    if (auto blob = snap_.blob(d); !blob) {
      return fail(Errc::corrupt, "the run result at " + std::to_string(seq) + " names output " + d.str() +
                                     ", which is not in the ledger's blob store");
    }
  }
  return rr;
}

}  // namespace warden::kernel::detail
