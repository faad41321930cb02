// The replayer behind replay() (replay.h), private to kernel/audit: one pass over a verified
// ledger snapshot, each record held to what the kernel would have written. Its parts, each in
// a file of its own:
//   replay.cc               the walk over the records, record kinds, the fleet's events and
//                           runners' signatures, and replay() itself
//   replay_decisions.cc     plans and decisions re-derived (verify_plan, generate_plan,
//                           decide()) from the records they name
//   replay_held_out.cc      held-out reveals, held to their commitments and to the decisions
//                           that used their bundles
//   replay_rerun.cc         --rerun: the recorded checks run again in the sandbox
//   replay_repositories.cc  commit intents and commits, pre-images and branches, against the
//                           repositories given with --repo or --repos
// One Replayer per replay() call, on the calling thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "kernel/audit/replay.h"
#include "kernel/judge/policy.h"
#include "kernel/judge/proposal_evidence.h"
#include "kernel/plan/blueprint.h"
#include "kernel/plan/build_plan.h"
#include "kernel/plan/held_out.h"
#include "kernel/record/fleet_record.h"
#include "kernel/record/held_out_reveal.h"
#include "kernel/record/records.h"
#include "ledger/ledger.h"
#include "runner/check/local_runner.h"
#include "runner/workspace/git_repo.h"

namespace warden::kernel::detail {

struct RunFacts {
  std::optional<BlueprintSpec> blueprint;
  std::map<std::string, Policy> policies;     // by digest
  std::map<std::string, Json> policy_programs;  // by the policy's digest: its programs' digests, as recorded
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

  Status run();

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

  template <typename R>
  Status readable(const R&) {
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

  // The walk and the fleet (replay.cc).
  Status visit(const Json& p);
  Status on_run_status(const RunStatusRecord& r);
  Status on_fleet_event(const FleetEventRecord& r);
  template <typename R>
  Status attested(const R& r);
  void check_enrolments();

  // Plans and decisions (replay_decisions.cc), and the records a decision names, read back.
  Status on_blueprint(const BlueprintRecord& r);
  Status on_policy(const PolicyRecord& r);
  Status on_plan_proposal(const PlanProposalRecord& r);
  const Policy* policy_of(RunFacts& run, const std::string& digest);
  Status on_plan_commit(const PlanCommitRecord& r);
  Status on_plan_refusal(const PlanRefusalRecord& r);
  Status on_plan_verdict(const std::optional<std::string>& run_id, uint64_t proposal_seq, bool committed);
  Status on_decision(const DecisionRecord& d);
  Result<ProposalEvidence> proposal_evidence(uint64_t seq, const std::string& step_id);
  Result<RunResult> recorded_run_result(uint64_t seq, const std::string& step_id);
  Result<RunResult> recorded_base_run(uint64_t seq, const std::string& run_id);
  Result<RunResult> run_result_of(const Json& json, const Digest& digest, uint64_t seq);

  // Held-out bundles (replay_held_out.cc).
  Status read_reveals();
  Status on_reveal(const HeldOutRevealRecord&);
  void check_run_end_reveals();
  Result<bool> held_out_verdict(const DecisionRecord& d, const BuildPlan& plan, const Policy& policy, const RunFacts& facts_of_run,
                                const ProposalEvidence& evidence);

  // What a rerun runs on: the recorded diff on the tree it is re-derived to give (the diff on
  // the run's last accepted tree, the base before the first commit; never the tree a record
  // claims), by a runner of the recorded policy.
  struct RerunSite {
    Runner* runner = nullptr;
    GitRepo* repo = nullptr;
    Diff diff;
    ObjectId base, tree;
  };

  // --rerun (replay_rerun.cc).
  Result<RerunSite> rerun_site(const std::string& policy_name, const std::string& policy_sha256, const RunFacts& run,
                               const Diff& tested, const RunResult& expected);
  Status rerun_checks(RerunSite& site, std::vector<CheckSpec> checks, std::vector<OverlayFile> overlay, const RunResult& expected);
  Status rerun(const BuildPlan& plan, const std::string& policy_name, const std::string& policy_sha256,
               const std::string& step_id, const RunFacts& run, const ProposalEvidence& evidence,
               const RunResult& expected);
  Status rerun_held_out(const BuildPlan& plan, const std::string& policy_name, const std::string& policy_sha256,
                        const RunFacts& run, const Diff& tested, const HeldOutBundle& bundle, const RunResult& expected);
  Result<Runner*> runner_for(const Policy& policy, bool kernel_release);
  Status find_or_rebuild(const Digest& environment, const Json& recipe_record);
  Result<Policy> policy_for_rerun(const std::string& policy_name, const std::string& policy_sha256, const RunFacts& run) const;

  // Commits and the repositories (replay_repositories.cc).
  size_t repo_index(const RunFacts& run, const std::string& object);
  GitRepo* repo_of(const RunFacts& run, const std::string& object);
  std::string where() const;
  Status check_pre_images(const RunFacts& run, const ProposalEvidence& evidence);
  Status on_commit_intent(const CommitIntentRecord& intent);
  Status on_commit(const CommitRecord& c);
  bool commit_allowed(RunFacts& run, const CommitRecord& c);
  void check_branches();

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

}  // namespace warden::kernel::detail
