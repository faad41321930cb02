#include "kernel/audit/replay.h"

#include <stdlib.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <vector>

#include "common/clock.h"
#include "kernel/record/blob_refs.h"
#include "kernel/plan/blueprint.h"
#include "kernel/plan/build_plan.h"
#include "kernel/record/records.h"
#include "kernel/judge/decide.h"
#include "kernel/record/fleet_record.h"
#include "kernel/plan/held_out.h"
#include "kernel/judge/approval.h"
#include "kernel/record/held_out_reveal.h"
#include "kernel/judge/oracle_run.h"
#include "kernel/judge/plan_generate.h"
#include "kernel/record/plan_commit.h"
#include "kernel/judge/plan_verify.h"
#include "kernel/judge/policy.h"
#include "kernel/judge/step_checks.h"
#include "ledger/export.h"
#include "ledger/ledger.h"
#include "ledger/verify.h"
#include "diff/diff_apply.h"
#include "runner/workspace/git_repo.h"
#include "runner/check/local_runner.h"
#include "runner/check/remote_run.h"

namespace warden::kernel {

namespace {

// An export is replayed from a private copy imported into a temporary ledger.
class TempLedgerDir {
 public:
  static Result<TempLedgerDir> make() {
    std::string templ = (std::filesystem::temp_directory_path() / "warden-replay-XXXXXX").string();
    if (!::mkdtemp(templ.data())) return fail(Errc::io_error, "creating a temporary directory for replay");
    return TempLedgerDir(templ);
  }
  TempLedgerDir(TempLedgerDir&& o) noexcept : dir_(std::move(o.dir_)) { o.dir_.clear(); }
  TempLedgerDir& operator=(TempLedgerDir&&) = delete;
  ~TempLedgerDir() {
    std::error_code ec;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
  }
  std::filesystem::path ledger() const { return dir_ / "ledger"; }

 private:
  explicit TempLedgerDir(std::filesystem::path dir) : dir_(std::move(dir)) {}
  std::filesystem::path dir_;
};

struct RunFacts {
  std::optional<BlueprintSpec> blueprint;
  std::map<std::string, Policy> policies;     // by digest
  std::map<std::string, BuildPlan> proposed;  // by digest
  std::map<std::string, BuildPlan> committed; // by digest
  std::set<std::string> completed;            // from commit records
  std::optional<std::string> tip_tree;        // the last commit record's tree: the next step's parent
  std::optional<std::string> last_commit;     // and its commit
  std::optional<std::string> start_tree;      // the run's base tree (its run results name it)
  mutable std::optional<size_t> repo;         // its repository among Replayer::repos_: found once, on first need
  std::map<uint64_t, DecisionRecord> decisions;  // by seq
  std::optional<CommitRecord> intent;            // a commit intent its commit record has not confirmed yet
  std::optional<uint64_t> ended;                 // its first terminal run_status record
  std::set<Digest> reveal_at_end;                // held-out bundles its decisions rest on, revealed when it ends
};

// What the ledger says a branch should hold: the last commit it confirmed, and a later
// intent whose move was never confirmed (the process died, or the move was undone).
struct BranchFacts {
  std::optional<std::string> confirmed;
  std::optional<CommitRecord> pending;
  uint64_t last_seq = 0;  // the record that last moved it
};

class Replayer {
 public:
  Replayer(LedgerSnapshot& snap, const ReplayOptions& options, ReplayReport& report)
      : snap_(snap), options_(options), report_(report) {}

  Status run() {
    if (options_.repo && options_.repos) return fail(Errc::invalid_argument, "replay: give --repo or --repos, not both");
    if (options_.repo) {
      auto repo = GitRepo::open(*options_.repo);
      if (!repo) return fail(Errc::not_found, "replay --repo: " + repo.error().message());
      repos_.push_back({*options_.repo, std::move(*repo)});
    }
    if (options_.repos) {
      std::error_code ec;
      std::vector<std::filesystem::path> dirs;
      for (const auto& entry : std::filesystem::directory_iterator(*options_.repos, ec)) {
        if (entry.is_directory(ec)) dirs.push_back(entry.path());
      }
      if (ec) return fail(Errc::not_found, "replay --repos " + options_.repos->string() + ": " + ec.message());
      std::sort(dirs.begin(), dirs.end());
      for (const auto& dir : dirs) {
        auto repo = GitRepo::open(dir);
        if (repo) repos_.push_back({dir, std::move(*repo)});
      }
      if (repos_.empty()) return fail(Errc::not_found, "replay --repos " + options_.repos->string() + ": no git repository in it");
    }
    if (Status st = read_reveals(); !st) return st;
    for (uint64_t seq = 0; seq < snap_.size() && report_.ok(); ++seq) {
      auto rec = snap_.record(seq);
      if (!rec) return std::unexpected(rec.error());
      auto payload = parse_json(rec->payload);
      if (!payload || !payload->is_object()) {
        problem(seq, rec->kind, "payload is not a JSON object");
        break;
      }
      seq_ = seq;
      kind_ = rec->kind;
      if (Status st = visit(*payload); !st) return st;
      ++report_.records;
    }
    if (report_.ok()) check_run_end_reveals();
    if (report_.ok()) check_enrolments();
    if (!repos_.empty() && report_.ok()) check_branches();
    return {};
  }

 private:
  void problem(uint64_t seq, std::string kind, std::string message) {
    if (!report_.problem) report_.problem = ReplayProblem{seq, std::move(kind), std::move(message)};
  }
  void problem(std::string message) { problem(seq_, kind_, std::move(message)); }

  RunFacts& facts(const std::string& run_id) {
    auto [it, fresh] = runs_.try_emplace(run_id);
    if (fresh) ++report_.runs;
    return it->second;
  }
  RunFacts& facts(const std::optional<std::string>& run_id) { return facts(run_id.value_or(std::string())); }

  // The record as its type (records.h); a record that does not read back is a problem at
  // its seq, and replay goes no further.
  template <typename R, typename Visit>
  Status typed(const Json& p, Visit visit) {
    auto record = R::from_json(p);
    if (!record) {
      problem(record.error().message);
      return {};
    }
    return (this->*visit)(*record);
  }

  // Every held-out reveal (held_out_reveal.h), read and held to its commitment before the
  // records are replayed: a reveal follows the decisions it is for. A reveal that does not match
  // is a problem at its own seq.
  Status read_reveals() {
    for (uint64_t seq = 0; seq < snap_.size(); ++seq) {
      auto rec = snap_.record(seq);
      if (!rec) return std::unexpected(rec.error());
      if (rec->kind != record_kind::held_out_reveal) continue;
      auto payload = parse_json(rec->payload);
      auto record = payload ? HeldOutRevealRecord::from_json(*payload) : Result<HeldOutRevealRecord>(std::unexpected(payload.error()));
      auto revealed = record ? read_reveal(*record, [&](const Digest& d) { return snap_.blob(d); })
                             : Result<RevealedBundle>(std::unexpected(record.error()));
      if (!revealed) {
        bad_reveals_.emplace(seq, revealed.error().message);
        continue;
      }
      reveal_seqs_.try_emplace(record->held_out_sha256, seq);
      RevealedBundle& into = reveals_[record->held_out_sha256];
      into.bundle = std::move(revealed->bundle);
      into.runs.merge(revealed->runs);
    }
    return {};
  }

  Status on_reveal(const HeldOutRevealRecord&) {
    if (auto bad = bad_reveals_.find(seq_); bad != bad_reveals_.end()) problem("the held-out reveal does not match: " + bad->second);
    return {};
  }

  Status on_run_status(const RunStatusRecord& r) {
    RunFacts& run = facts(r.run_id);
    if (is_terminal(r.status) && !run.ended) run.ended = seq_;
    return {};
  }

  // A bundle that judged one build run is revealed when the run ends: an ended run whose
  // decisions rest on one with no reveal after its end has decisions no one can check.
  void check_run_end_reveals() {
    for (const auto& [id, run] : runs_) {
      if (!run.ended) continue;
      for (const Digest& bundle : run.reveal_at_end) {
        auto revealed = reveal_seqs_.find(bundle);
        if (revealed == reveal_seqs_.end() || revealed->second < *run.ended) {
          problem(*run.ended, std::string(record_kind::run_status),
                  "run " + id + " ended here, and its decisions rest on the held-out bundle " + bundle.str() +
                      ", but no reveal of it follows the run's end");
          return;
        }
      }
    }
  }

  Status visit(const Json& p) {
    if (kind_ == record_kind::held_out_reveal) return typed<HeldOutRevealRecord>(p, &Replayer::on_reveal);
    if (kind_ == record_kind::held_out_run) return typed<HeldOutRunRecord>(p, &Replayer::readable<HeldOutRunRecord>);
    if (kind_ == record_kind::blueprint) return typed<BlueprintRecord>(p, &Replayer::on_blueprint);
    if (kind_ == record_kind::policy) return typed<PolicyRecord>(p, &Replayer::on_policy);
    if (kind_ == record_kind::plan_proposal) return typed<PlanProposalRecord>(p, &Replayer::on_plan_proposal);
    if (kind_ == record_kind::plan_commit) return typed<PlanCommitRecord>(p, &Replayer::on_plan_commit);
    if (kind_ == record_kind::refusal && refusal_subject(p) == PlanRefusalRecord::subject) {
      return typed<PlanRefusalRecord>(p, &Replayer::on_plan_refusal);
    }
    if (kind_ == record_kind::decision) return typed<DecisionRecord>(p, &Replayer::on_decision);
    if (kind_ == record_kind::commit_intent) return typed<CommitIntentRecord>(p, &Replayer::on_commit_intent);
    if (kind_ == record_kind::commit) return typed<CommitRecord>(p, &Replayer::on_commit);
    // The rest are judged where a decision or commit names them; here they must at least
    // read back as their kind, so no record of the kernel's is outside its schema.
    if (kind_ == record_kind::refusal) return typed<ProposalRefusalRecord>(p, &Replayer::readable<ProposalRefusalRecord>);
    if (kind_ == record_kind::proposal) return typed<ProposalRecord>(p, &Replayer::readable<ProposalRecord>);
    if (kind_ == record_kind::run_result) return typed<RunResultRecord>(p, &Replayer::attested<RunResultRecord>);
    if (kind_ == record_kind::base_run) return typed<BaseRunRecord>(p, &Replayer::attested<BaseRunRecord>);
    if (kind_ == record_kind::oracle_run) return typed<OracleRunRecord>(p, &Replayer::attested<OracleRunRecord>);
    if (kind_ == record_kind::run_status) return typed<RunStatusRecord>(p, &Replayer::on_run_status);
    if (kind_ == record_kind::run_event) return typed<RunEvent>(p, &Replayer::readable<RunEvent>);
    if (kind_ == record_kind::step_evidence) return typed<StepEvidenceRecord>(p, &Replayer::readable<StepEvidenceRecord>);
    if (kind_ == record_kind::speculation) return typed<SpeculationRecord>(p, &Replayer::readable<SpeculationRecord>);
    if (kind_ == record_kind::fleet_event) return typed<FleetEventRecord>(p, &Replayer::on_fleet_event);
    return {};
  }

  // The fleet's history, copied from its store: never part of a decision, but its events must
  // follow one another. A store's first event (1) may come again: that store began anew (a
  // Redis flushed, an LMDB directory replaced), which the server also logs.
  Status on_fleet_event(const FleetEventRecord& r) {
    uint64_t& last = fleet_seqs_[r.store];
    if (r.store_seq != 1 && r.store_seq != last + 1) {
      problem("fleet event " + std::to_string(r.store_seq) + " of store " + r.store + " follows event " +
              std::to_string(last) + ": events are missing or repeated");
      return {};
    }
    last = r.store_seq;
    // An enrolment: the key a runner signs with, as the server pinned it.
    const Json& e = r.event;
    if (e.value("type", "") == "registered" && e.contains("key") && e["key"].is_string() && e.contains("owner") &&
        e["owner"].is_string()) {
      enrolled_.insert({e.value("agent", ""), e["owner"].get<std::string>(), e["key"].get<std::string>()});
    }
    return {};
  }

  template <typename R>
  Status readable(const R&) {
    return {};
  }

  // A result remote runners ran carries their signatures (runner/check/remote_run.h): each must be
  // its key's over exactly the recorded result, by runners of distinct identities, so no
  // record claims a runner, or a quorum, that did not sign it. Each key must also be the one
  // the fleet's record says the runner enrolled with (check_enrolments, once the whole ledger
  // is read: the server copies the fleet's events into the ledger on its own schedule).
  template <typename R>
  Status attested(const R& r) {
    if (!r.attestations) return {};
    std::set<std::string> agents, owners;
    for (const Json& j : *r.attestations) {
      auto a = ResultAttestation::from_json(j);
      if (!a) {
        problem(a.error().message);
        return {};
      }
      if (Status st = verify_attestation(*a, r.run_result_sha256); !st) {
        problem(st.error().message);
        return {};
      }
      signers_.push_back({seq_, kind_, {a->agent_id, a->owner, a->key}});
      if (!agents.insert(a->agent_id).second || !owners.insert(a->owner).second) {
        problem("runner " + a->agent_id + " (" + a->owner + ") signs the result twice: a quorum's runners are of distinct identities");
        return {};
      }
    }
    if (agents.empty()) problem("an empty attestations list");
    return {};
  }

  Status on_blueprint(const BlueprintRecord& r) {
    auto bp = BlueprintSpec::from_json(r.blueprint);
    if (!bp) {
      problem("the recorded blueprint does not parse: " + bp.error().message);
      return {};
    }
    if (bp->digest() != r.blueprint_sha256) problem("blueprint_sha256 does not match the blueprint");
    facts(r.run_id).blueprint = std::move(*bp);
    return {};
  }

  Status on_policy(const PolicyRecord& r) {
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
    policy_seqs_.emplace(seq_, std::pair{r.run_id.value_or(std::string()), r.policy_sha256.str()});
    return {};
  }

  Status on_plan_proposal(const PlanProposalRecord& r) {
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

  const Policy* policy_of(RunFacts& run, const std::string& digest) {
    auto it = run.policies.find(digest);
    return it == run.policies.end() ? nullptr : &it->second;
  }

  Status on_plan_commit(const PlanCommitRecord& r) { return on_plan_verdict(r.run_id, r.proposal_seq, true); }

  Status on_plan_refusal(const PlanRefusalRecord& r) {
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
  Status on_plan_verdict(const std::optional<std::string>& run_id, uint64_t proposal_seq, bool committed) {
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

  Status on_decision(const DecisionRecord& d) {
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
    std::optional<RunResult> run_result;
    if (d.run_result_seq) {
      auto rr = recorded_run_result(*d.run_result_seq, d.step_id);
      if (!rr) {
        problem(rr.error().message);
        return {};
      }
      run_result = std::move(*rr);
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

  // Whether the held-out tests passed, as a decision used it: the held_out_run record's, held to
  // the revealed result when the bundle is revealed (else the decision is pending reveal).
  Result<bool> held_out_verdict(const DecisionRecord& d, const BuildPlan& plan, const Policy& policy, const RunFacts& facts_of_run,
                                const ProposalEvidence& evidence) {
    auto record = earlier<HeldOutRunRecord>(*d.held_out_run_seq, "held_out_run_seq");
    if (!record) return std::unexpected(record.error());
    const std::string at = "held-out run " + std::to_string(*d.held_out_run_seq);
    if (record->run_id != d.run_id || record->step_id != d.step_id || record->attempt != d.attempt) {
      return fail(Errc::verification_failed, at + " is another attempt's");
    }
    if (!plan.held_out || plan.held_out->sha256 != record->held_out_sha256) {
      return fail(Errc::verification_failed, at + " ran a bundle the plan does not commit to");
    }
    // Public before this decision, the tests judged nothing: a retry could have been fitted to them.
    if (auto first = reveal_seqs_.find(record->held_out_sha256); first != reveal_seqs_.end() && first->second < seq_) {
      return fail(Errc::verification_failed, at + " used the bundle " + record->held_out_sha256.str() +
                                                 " after its reveal at record " + std::to_string(first->second));
    }
    if (plan.held_out->reveal == HeldOutReveal::at_run_end) facts(d.run_id).reveal_at_end.insert(record->held_out_sha256);
    auto bundle = reveals_.find(record->held_out_sha256);
    if (bundle == reveals_.end()) {
      ++report_.pending_reveal;
      return record->passed;
    }
    auto result = bundle->second.runs.find(record->result_commitment);
    if (result == bundle->second.runs.end()) {
      return fail(Errc::verification_failed, at + ": the reveal of " + record->held_out_sha256.str() + " holds no run " +
                                                 record->result_commitment.str() + " commits to");
    }
    const RunResult& run = result->second;
    // The held-out run tests the proposal without its changes to tests and hooks (a new test
    // module could rebind what the held-out tests call), as the oracle run does.
    auto diff = Diff::from_json(evidence.diff);
    if (!diff) return fail(Errc::verification_failed, at + ": the proposal's diff does not parse");
    const BuildStep* step = plan.find(d.step_id);
    std::set<std::string> approved;
    if (step && !step->approvals.empty()) approved = admitted_tests(step->approvals, diff->digest(), policy.approvers).tests;
    const std::optional<Diff> without_tests = oracle_diff(*diff, evidence, policy.oracle, approved);
    const Diff& tested = without_tests ? *without_tests : *diff;
    if (run.diff_sha256 != tested.digest()) {
      return fail(Errc::verification_failed, at + " is of another diff than the proposal's without its test changes");
    }
    const int64_t failures = held_out_failures(run, bundle->second.bundle);
    if ((failures == 0) != record->passed) {
      return fail(Errc::verification_failed, at + " records that the held-out tests " + (record->passed ? "passed" : "did not pass") +
                                                 ", but its revealed result has " + std::to_string(failures) + " not passing");
    }
    if (options_.rerun) {
      if (Status st = rerun_held_out(plan, policy.name, d.policy_sha256.str(), facts_of_run, tested, bundle->second.bundle, run); !st) {
        return std::unexpected(st.error());
      }
    }
    ++report_.revealed;
    return record->passed;
  }

  // Which of repos_ holds `object` (a tree or commit of `run`): with one repository, that
  // one; with several, the run's repository so far if it holds the object, else the first
  // that does, which becomes the run's (two repositories built from one blueprint can share
  // their first trees and commits). SIZE_MAX when none holds it.
  size_t repo_index(const RunFacts& run, const std::string& object) {
    if (repos_.size() <= 1) return 0;
    auto id = ObjectId::parse(object);
    if (!id) return SIZE_MAX;
    if (run.repo && repos_[*run.repo].repo.has_object(*id)) return *run.repo;
    for (size_t i = 0; i < repos_.size(); ++i) {
      if (repos_[i].repo.has_object(*id)) {
        run.repo = i;
        return i;
      }
    }
    return SIZE_MAX;
  }
  GitRepo* repo_of(const RunFacts& run, const std::string& object) {
    const size_t i = repo_index(run, object);
    return i < repos_.size() ? &repos_[i].repo : nullptr;
  }
  std::string where() const {
    return repos_.size() == 1 && !options_.repos ? std::string("the repository")
                                                 : "any repository under " + options_.repos->string();
  }

  // decide() judged the proposal against the pre-images the kernel recorded; with the
  // repository at hand they must be the files of the tree the proposal was made on (the
  // run's last accepted tree, or its start tree before the first commit).
  Status check_pre_images(const RunFacts& run, const ProposalEvidence& evidence) {
    if (repos_.empty()) return {};
    const std::optional<std::string>& parent_hex = run.tip_tree ? run.tip_tree : run.start_tree;
    if (!parent_hex) return {};
    GitRepo* repo = repo_of(run, *parent_hex);
    if (!repo) return fail(Errc::not_found, "tree " + *parent_hex + " is not in " + where());
    auto parent = ObjectId::parse(*parent_hex);
    auto tree = parent ? repo->tree(*parent) : Checked<GitTree>(std::unexpected(parent.error()));
    if (!tree) return fail(Errc::not_found, "tree " + *parent_hex + " is not in the repository");
    for (const auto& [path, image] : evidence.base) {
      auto file = tree->read(path);
      std::optional<std::string> actual;
      if (file && *file) actual = (*file)->content;
      if (actual != image.content) {
        return fail(Errc::verification_failed, "the recorded pre-image of " + path + " is not its content in tree " +
                                                   *parent_hex + ", the tree the proposal was made on");
      }
    }
    return {};
  }

  // The record at `seq`, read as R, when it is an earlier record of R's kind.
  template <typename R>
  Result<R> earlier(uint64_t seq, const std::string& field) {
    auto rec = snap_.record(seq);
    if (!rec || rec->kind != R::kind || seq >= seq_) {
      return fail(Errc::corrupt, field + " " + std::to_string(seq) + " is not an earlier " + std::string(R::kind) + " record");
    }
    auto payload = parse_json(rec->payload);
    if (!payload) return fail(Errc::corrupt, "record " + std::to_string(seq) + " is not JSON");
    auto typed = R::from_json(*payload);
    if (!typed) return fail(Errc::corrupt, "record " + std::to_string(seq) + ": " + typed.error().message);
    return typed;
  }

  Result<ProposalEvidence> proposal_evidence(uint64_t seq, const std::string& step_id) {
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

  Result<RunResult> recorded_run_result(uint64_t seq, const std::string& step_id) {
    auto record = earlier<RunResultRecord>(seq, "run_result_seq");
    if (!record) return std::unexpected(record.error());
    if (record->step_id != step_id) return fail(Errc::corrupt, "the run result is for another step");
    return run_result_of(record->run_result, record->run_result_sha256, seq);
  }

  // A decision's base run: a base_run record, or the run_result record of the accepted run
  // that made the tree — of the same run either way.
  Result<RunResult> recorded_base_run(uint64_t seq, const std::string& run_id) {
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
  Result<RunResult> run_result_of(const Json& json, const Digest& digest, uint64_t seq) {
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

  // The runner again, on the same base and diff with the same checks: the deterministic
  // part of its result must be the same bytes.
  // What a rerun runs on: the recorded diff on the tree it is re-derived to give (the diff on
  // the run's last accepted tree, the base before the first commit; never the tree a record
  // claims), by a runner of the recorded policy.
  struct RerunSite {
    Runner* runner = nullptr;
    GitRepo* repo = nullptr;
    Diff diff;
    ObjectId base, tree;
  };

  Result<RerunSite> rerun_site(const std::string& policy_name, const std::string& policy_sha256, const RunFacts& run,
                               const Diff& tested, const RunResult& expected) {
    if (repos_.empty()) return fail(Errc::invalid_argument, "--rerun needs --repo or --repos");
    GitRepo* repo = run.start_tree ? repo_of(run, *run.start_tree) : (repos_.size() == 1 ? &repos_[0].repo : nullptr);
    if (!repo) return fail(Errc::not_found, "rerun: the run's base tree is not in " + where());
    // The ledger names the check programs by digest only; their bytes come from the policy
    // of that name here, which must be the very same policy.
    auto policy = Policy::load(policy_name);
    if (!policy || policy->digest().str() != policy_sha256) {
      return fail(Errc::not_found, "rerun: policy " + policy_name + " with the recorded programs is not available here");
    }
    // A golden run recorded its toolchain without the host kernel's release; ask for the same.
    const std::string kernel = expected.toolchain.value("kernel", "");
    const bool with_release = std::count(kernel.begin(), kernel.end(), ' ') >= 2;
    auto runner = runner_for(*policy, with_release);
    if (!runner) return std::unexpected(runner.error());
    auto base = ObjectId::parse(expected.base_tree.value_or(""));
    if (!base) return fail(Errc::corrupt, "rerun: the recorded run result names no base tree");
    auto parent = ObjectId::parse(run.tip_tree.value_or(base->hex()));
    if (!parent) return fail(Errc::corrupt, "rerun: no parent tree");
    auto parent_tree = repo->tree(*parent);
    if (!parent_tree) return fail(Errc::not_found, "rerun: tree " + parent->hex() + " is not in the repository");
    auto files = resolve_diff(tested, *parent_tree);
    if (!files) return fail(Errc::verification_failed, "rerun: the diff does not apply to its parent: " + files.error().message());
    auto tree = repo->write_tree(*parent, *files);
    if (!tree) return fail(Errc::io_error, "rerun: " + tree.error().message());
    if (tree->hex() != expected.tree) {
      return fail(Errc::verification_failed, "rerun: the diff on its parent gives tree " + tree->hex() +
                                                 ", the run result says it tested " + expected.tree);
    }
    return RerunSite{*runner, repo, tested, *base, *tree};
  }

  // Runs `checks` (with `overlay` laid over the tree) again; the result must be the recorded one.
  Status rerun_checks(RerunSite& site, std::vector<CheckSpec> checks, std::vector<OverlayFile> overlay, const RunResult& expected) {
    RunRequest request;
    request.base_tree = site.base;
    request.tree = site.tree;
    request.diff = &site.diff;
    request.checks = std::move(checks);
    request.overlay = std::move(overlay);
    auto again = site.runner->run(*site.repo, request);
    if (!again) return fail(Errc::verification_failed, "rerun: the runner refused: " + again.error().message());
    ++report_.reruns;
    if (again->result.deterministic_digest() != expected.deterministic_digest()) {
      return fail(Errc::verification_failed, "rerun: the runner's result differs: recorded " +
                                                 expected.deterministic_digest().str() + ", now " +
                                                 again->result.deterministic_digest().str());
    }
    return {};
  }

  Status rerun(const BuildPlan& plan, const std::string& policy_name, const std::string& policy_sha256,
               const std::string& step_id, const RunFacts& run, const ProposalEvidence& evidence,
               const RunResult& expected) {
    const BuildStep* step = plan.find(step_id);
    if (!step) return fail(Errc::corrupt, "rerun: the step is not in the plan");
    auto diff = Diff::from_json(evidence.diff);
    if (!diff) return fail(Errc::corrupt, "rerun: the recorded diff does not parse");
    auto site = rerun_site(policy_name, policy_sha256, run, *diff, expected);
    if (!site) return std::unexpected(site.error());
    auto policy = Policy::load(policy_name);
    if (!policy) return std::unexpected(policy.error());
    return rerun_checks(*site, checks_for_step(plan, *policy, *step, run.completed), {}, expected);
  }

  // The held-out run again, with the revealed bundle laid where it was.
  Status rerun_held_out(const BuildPlan& plan, const std::string& policy_name, const std::string& policy_sha256,
                        const RunFacts& run, const Diff& tested, const HeldOutBundle& bundle, const RunResult& expected) {
    auto site = rerun_site(policy_name, policy_sha256, run, tested, expected);
    if (!site) return std::unexpected(site.error().with_context("the held-out run"));
    std::vector<OverlayFile> overlay;
    for (const HeldOutFile& f : bundle.files) overlay.push_back({held_out_path(bundle, f), f.mode, f.content});
    if (Status st = rerun_checks(*site, plan.held_out->checks, std::move(overlay), expected); !st) {
      return std::unexpected(st.error().with_context("the held-out run"));
    }
    return {};
  }

  Result<Runner*> runner_for(const Policy& policy, bool kernel_release) {
    auto key = policy.digest().str() + (kernel_release ? "+release" : "");
    if (auto it = runners_.find(key); it != runners_.end()) return &it->second;
    auto profile = policy.sandbox_profile_with_programs();
    if (!profile) return std::unexpected(profile.error());
    RunnerOptions o;
    o.cache_dir = options_.cache_dir;
    o.use_cache = false;
    o.kernel_release_in_toolchain = kernel_release;
    auto runner = LocalRunner::create(std::move(*profile), o);
    if (!runner) return std::unexpected(runner.error());
    return &runners_.emplace(key, std::move(*runner)).first->second;
  }

  // A commit intent must be exactly what an accepted decision allows on the run's tip.
  Status on_commit_intent(const CommitIntentRecord& intent) {
    const CommitRecord& c = intent.commit;
    RunFacts& run = facts(c.run_id);
    if (run.intent) {
      problem("a second commit intent before the run's intent for " + run.intent->commit + " was confirmed");
      return {};
    }
    if (!commit_allowed(run, c)) return {};
    run.intent = c;
    BranchFacts& branch = branches_[{repo_index(run, c.commit), c.branch}];
    branch.pending = c;
    branch.last_seq = seq_;
    return {};
  }

  // The commit record confirms its intent; nothing else may move a branch.
  Status on_commit(const CommitRecord& c) {
    ++report_.commits;
    RunFacts& run = facts(c.run_id);
    if (!run.intent) {
      problem("commits " + c.commit + " without a commit intent recorded before the branch moved");
      return {};
    }
    if (!(*run.intent == c)) {
      problem("differs from its commit intent (" + run.intent->commit + " on " + run.intent->branch + ")");
      return {};
    }
    run.intent.reset();
    if (!repos_.empty()) {
      GitRepo* repo = repo_of(run, c.commit);
      if (!repo) {
        problem("commit " + c.commit + " is not in " + where());
        return {};
      }
      auto commit = ObjectId::parse(c.commit);
      auto tree = commit ? repo->tree_of(*commit) : Checked<ObjectId>(std::unexpected(commit.error()));
      if (!tree) {
        problem("commit " + c.commit + " is not in the repository");
        return {};
      }
      if (tree->hex() != c.tree) {
        problem("commit " + c.commit + " has tree " + tree->hex() + ", the record says " + c.tree);
        return {};
      }
    }
    run.completed.insert(c.step_id);
    run.tip_tree = c.tree;
    run.last_commit = c.commit;
    BranchFacts& branch = branches_[{repo_index(run, c.commit), c.branch}];
    branch.confirmed = c.commit;
    branch.pending.reset();
    branch.last_seq = seq_;
    return {};
  }

  // What a commit (or its intent) claims, held to the accepted decision it names and the run.
  bool commit_allowed(RunFacts& run, const CommitRecord& c) {
    auto d = run.decisions.find(c.decision_seq);
    if (d == run.decisions.end()) {
      problem("names decision " + std::to_string(c.decision_seq) + ", which is not a replayed decision of its run");
      return false;
    }
    const DecisionRecord& decision = d->second;
    if (!decision.verdict.accepted) {
      problem("commits a proposal whose decision refused it");
      return false;
    }
    if (decision.step_id != c.step_id || static_cast<uint64_t>(decision.attempt) != c.attempt ||
        decision.plan_sha256 != c.plan_sha256 || decision.policy_sha256 != c.policy_sha256) {
      problem("differs from its decision in step, attempt, plan or policy");
      return false;
    }
    auto evidence = proposal_evidence(decision.proposal_seq, c.step_id);
    auto diff = evidence ? Diff::from_json(evidence->diff) : Checked<Diff>(std::unexpected(Refusal{}));
    if (!diff || diff->digest() != c.proposal_sha256) {
      problem("proposal_sha256 is not the decided diff's digest");
      return false;
    }
    if (!decision.run_result_seq) {
      problem("commits a proposal that never ran");
      return false;
    }
    std::optional<Digest> held_out;
    if (decision.held_out_run_seq) {
      auto ran = earlier<HeldOutRunRecord>(*decision.held_out_run_seq, "held_out_run_seq");
      if (ran) held_out = ran->held_out_sha256;
    }
    if (held_out != c.held_out_sha256) {
      problem("held_out_sha256 is not the bundle of the decision's held-out run");
      return false;
    }
    auto rr = recorded_run_result(*decision.run_result_seq, c.step_id);
    if (!rr || rr->deterministic_digest() != c.run_result_sha256) {
      problem("run_result_sha256 is not the decided run result's digest");
      return false;
    }
    if (rr->tree != c.tree) {
      problem("commits tree " + c.tree + ", but the checks ran on " + rr->tree);
      return false;
    }
    if (run.last_commit && c.parent != *run.last_commit) {
      problem("commit's parent " + c.parent + " is not the run's previous commit " + *run.last_commit);
      return false;
    }
    if (run.completed.contains(c.step_id)) {
      problem("commits step " + c.step_id + " a second time");
      return false;
    }
    return true;
  }

  // Every runner that signs a result must have enrolled with that key under that identity:
  // a signature by a key the fleet never pinned proves nothing about who ran the checks. A
  // ledger whose fleet events name no key at all was written before enrolments recorded
  // them: its signatures are still checked against their records, and the enrolment is
  // said to be unchecked. (Like every record, enrolments are only as good as the ledger's
  // signed checkpoints: verify them against a key you trust.)
  void check_enrolments() {
    for (const Signer& s : signers_) {
      if (enrolled_.contains(s.enrolment)) continue;
      const auto& [agent, owner, key] = s.enrolment;
      if (enrolled_.empty()) {
        report_.warnings.push_back("record " + std::to_string(s.seq) + " (" + s.kind + "): runner " + agent +
                                   "'s key could not be checked against its enrolment: the ledger's fleet events "
                                   "name no enrolment keys (written before they did)");
        continue;
      }
      problem(s.seq, s.kind,
              "runner " + agent + " (" + owner + ") signs with key " + key +
                  ", but no fleet event in the ledger records that runner enrolling with that key and identity");
      return;
    }
  }

  // The world against the log: every branch the ledger moved must be where the ledger last
  // put it. A tip at an unconfirmed intent is a move that was interrupted: allowed, and said.
  void check_branches() {
    for (const auto& [key, b] : branches_) {
      const auto& [index, ref] = key;
      if (index >= repos_.size()) continue;  // its commits are in no repository: reported at them
      auto tip = repos_[index].repo.resolve_commit(ref);
      const std::string tip_hex = tip ? tip->hex() : std::string();
      ++report_.branches;
      if (b.confirmed && tip_hex == *b.confirmed) continue;
      if (b.pending && tip_hex == b.pending->commit) {
        report_.warnings.push_back(ref + " is at " + tip_hex + ", whose commit intent (run " + b.pending->run_id +
                                   ", step " + b.pending->step_id +
                                   ") was never confirmed: the run stopped between moving the branch and recording it");
        continue;
      }
      // Before any confirmed commit, an undone first move leaves the branch at the intent's
      // parent, or (a branch the run created) absent.
      if (!b.confirmed && b.pending && (tip_hex == b.pending->parent || !tip)) continue;
      const std::string expected = b.confirmed ? *b.confirmed : b.pending->parent;
      problem(b.last_seq, std::string(record_kind::commit),
              tip ? ref + " is at " + tip_hex + ", but the last commit the ledger accepted for it is " + expected +
                        ": the branch moved without a decision"
                  : ref + " does not exist in the repository, but the ledger accepted " + expected + " for it");
      return;
    }
  }

  LedgerSnapshot& snap_;
  const ReplayOptions& options_;
  ReplayReport& report_;
  std::map<std::string, RunFacts> runs_;
  std::map<std::string, uint64_t> fleet_seqs_;  // the last fleet event seen of each store
  using Enrolment = std::tuple<std::string, std::string, std::string>;  // agent, owner, key
  struct Signer {
    uint64_t seq;
    std::string kind;
    Enrolment enrolment;
  };
  std::set<Enrolment> enrolled_;  // from the fleet's registered events
  std::vector<Signer> signers_;   // every attestation, by record
  std::map<std::pair<size_t, std::string>, BranchFacts> branches_;  // by repository (repo_index) and full ref name
  std::map<uint64_t, std::optional<BuildPlan>> proposal_plans_;
  std::map<uint64_t, std::pair<std::string, std::string>> policy_seqs_;  // policy record seq -> run, policy digest
  std::map<std::string, LocalRunner> runners_;
  struct Repository {
    std::filesystem::path dir;
    GitRepo repo;
  };
  std::vector<Repository> repos_;  // --repo's one, or --repos's, in name order
  std::map<Digest, uint64_t> reveal_seqs_;          // each bundle's first reveal that matches its commitment
  std::map<Digest, RevealedBundle> reveals_;        // held-out bundles revealed anywhere in the ledger
  std::map<uint64_t, std::string> bad_reveals_;     // reveals that do not match, by seq
  uint64_t seq_ = 0;
  std::string kind_;
};

}  // namespace

Result<ReplayReport> replay(const std::filesystem::path& path, const ReplayOptions& options) {
  ReplayReport report;
  VerifyOptions verify = options.verify;
  verify.blob_references = &blob_references();
  auto verified = verify_path(path, verify);
  if (!verified) return std::unexpected(verified.error());
  report.key_source = verified->key_source;
  report.warnings = verified->warnings;
  report.signed_size = verified->signed_size;
  report.unsigned_records = verified->unsigned_records;
  report.root_hex = verified->root.hex();
  if (!verified->ok()) {
    const auto& p = *verified->problem;
    report.problem = ReplayProblem{p.seq.value_or(0), p.object, p.message};
    return report;
  }
  std::optional<TempLedgerDir> temp;
  std::filesystem::path dir = path;
  std::error_code ec;
  if (!std::filesystem::exists(path / "data.mdb", ec)) {
    auto made = TempLedgerDir::make();
    if (!made) return std::unexpected(made.error());
    temp.emplace(std::move(*made));
    auto imported = import_ledger(path, temp->ledger(), verify);
    if (!imported) return std::unexpected(imported.error());
    dir = temp->ledger();
  }
  SystemClock clock;  // read-only: never asked for a time
  auto ledger = Ledger::open(dir, Ledger::Mode::read_only, clock);
  if (!ledger) return std::unexpected(ledger.error());
  auto snap = ledger->snapshot();
  if (!snap) return std::unexpected(snap.error());
  Replayer replayer(*snap, options, report);
  if (Status st = replayer.run(); !st) return std::unexpected(st.error());
  return report;
}

}  // namespace warden::kernel
