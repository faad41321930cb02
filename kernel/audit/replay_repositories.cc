// Replay's commits and repositories (replay_internal.h): each commit intent and commit held to
// the accepted decision it names, and, with --repo or --repos, the pre-images, commits and
// branches held to the repositories.
#include <string>

#include "kernel/audit/replay_internal.h"

namespace warden::kernel::detail {

// Which of repos_ holds `object` (a tree or commit of `run`): with one repository, that
// one; with several, the run's repository so far if it holds the object, else the first
// that does, which becomes the run's (two repositories built from one blueprint can share
// their first trees and commits). SIZE_MAX when none holds it.
size_t Replayer::repo_index(const RunFacts& run, const std::string& object) {
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

GitRepo* Replayer::repo_of(const RunFacts& run, const std::string& object) {
  const size_t i = repo_index(run, object);
  return i < repos_.size() ? &repos_[i].repo : nullptr;
}

std::string Replayer::where() const {
  return repos_.size() == 1 && !options_.repos ? std::string("the repository")
                                               : "any repository under " + options_.repos->string();
}

// decide() judged the proposal against the pre-images the kernel recorded; with the
// repository at hand they must be the files of the tree the proposal was made on (the
// run's last accepted tree, or its start tree before the first commit).
Status Replayer::check_pre_images(const RunFacts& run, const ProposalEvidence& evidence) {
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

// A commit intent must be exactly what an accepted decision allows on the run's tip.
Status Replayer::on_commit_intent(const CommitIntentRecord& intent) {
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
Status Replayer::on_commit(const CommitRecord& c) {
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
bool Replayer::commit_allowed(RunFacts& run, const CommitRecord& c) {
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

// The world against the log: every branch the ledger moved must be where the ledger last
// put it. A tip at an unconfirmed intent is a move that was interrupted: allowed, and said.
void Replayer::check_branches() {
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

}  // namespace warden::kernel::detail
