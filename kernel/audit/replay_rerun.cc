// Replay's --rerun (replay_internal.h): a recorded run's checks run again by a runner of the
// recorded policy, on the tree the recorded diff gives, and the results compared.
#include <algorithm>
#include <string>
#include <vector>

#include "diff/diff_apply.h"
#include "kernel/audit/replay_internal.h"
#include "kernel/judge/step_checks.h"
#include "runner/environment/environment_recipe.h"
#include "runner/environment/environment_store.h"

namespace warden::kernel::detail {

Result<Replayer::RerunSite> Replayer::rerun_site(const std::string& policy_name, const std::string& policy_sha256, const RunFacts& run,
                                                 const Diff& tested, const RunResult& expected) {
  if (repos_.empty()) return fail(Errc::invalid_argument, "--rerun needs --repo or --repos");
  GitRepo* repo = run.start_tree ? repo_of(run, *run.start_tree) : (repos_.size() == 1 ? &repos_[0].repo : nullptr);
  if (!repo) return fail(Errc::not_found, "rerun: the run's base tree is not in " + where());
  auto policy = policy_for_rerun(policy_name, policy_sha256, run);
  if (!policy) return std::unexpected(policy.error());
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
Status Replayer::rerun_checks(RerunSite& site, std::vector<CheckSpec> checks, std::vector<OverlayFile> overlay, const RunResult& expected) {
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

// The runner again, on the same base and diff with the same checks: the deterministic
// part of its result must be the same bytes.
Status Replayer::rerun(const BuildPlan& plan, const std::string& policy_name, const std::string& policy_sha256,
                       const std::string& step_id, const RunFacts& run, const ProposalEvidence& evidence,
                       const RunResult& expected) {
  const BuildStep* step = plan.find(step_id);
  if (!step) return fail(Errc::corrupt, "rerun: the step is not in the plan");
  auto diff = Diff::from_json(evidence.diff);
  if (!diff) return fail(Errc::corrupt, "rerun: the recorded diff does not parse");
  auto site = rerun_site(policy_name, policy_sha256, run, *diff, expected);
  if (!site) return std::unexpected(site.error());
  auto policy = policy_for_rerun(policy_name, policy_sha256, run);
  if (!policy) return std::unexpected(policy.error());
  return rerun_checks(*site, checks_for_step(plan, *policy, *step, run.completed), {}, expected);
}

// The recorded policy with its check programs' bytes. The ledger names the programs by
// digest only: the bytes are this Warden's built-in programs, which must be the very ones
// recorded (the policy's digest covers their digests), whatever the policy is called — a
// built-in one, a file, or the one `warden propose` made from its --check flags.
Result<Policy> Replayer::policy_for_rerun(const std::string& policy_name, const std::string& policy_sha256,
                                          const RunFacts& run) const {
  auto it = run.policies.find(policy_sha256);
  if (it == run.policies.end()) return fail(Errc::not_found, "rerun: the run's policy " + policy_name + " is not recorded");
  Policy policy = it->second;
  policy.programs.clear();
  const auto& builtin = builtin_check_programs();
  if (auto named = run.policy_programs.find(policy_sha256); named != run.policy_programs.end() && named->second.is_object()) {
    for (const auto& [file, digest] : named->second.items()) {
      if (auto b = builtin.find(file); b != builtin.end()) policy.programs.emplace(file, std::string(b->second));
    }
  }
  if (policy.digest().str() != policy_sha256) {
    return fail(Errc::not_found, "rerun: policy " + policy_name + " with the recorded programs is not available here");
  }
  return policy;
}

// The held-out run again, with the revealed bundle laid where it was.
Status Replayer::rerun_held_out(const BuildPlan& plan, const std::string& policy_name, const std::string& policy_sha256,
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

Result<Runner*> Replayer::runner_for(const Policy& policy, bool kernel_release) {
  auto key = policy.digest().str() + (kernel_release ? "+release" : "");
  if (auto it = runners_.find(key); it != runners_.end()) return &it->second;
  auto profile = policy.sandbox_profile_with_programs();
  if (!profile) return std::unexpected(profile.error());
  if (policy.environment) {
    if (Status st = find_or_rebuild(*policy.environment, policy.environment_recipe); !st) return std::unexpected(st.error());
  }
  RunnerOptions o;
  o.cache_dir = options_.cache_dir;
  o.use_cache = false;
  o.kernel_release_in_toolchain = kernel_release;
  o.environment = policy.environment;
  o.env_store = options_.env_store;
  auto runner = LocalRunner::create(std::move(*profile), o);
  if (!runner) return std::unexpected(runner.error());
  return &runners_.emplace(key, std::move(*runner)).first->second;
}

// The recorded environment, from the store, or built again from the recorded recipe; a rerun
// on anything else would not be the recorded run.
Status Replayer::find_or_rebuild(const Digest& environment, const Json& recipe_record) {
  auto store = EnvironmentStore::open(options_.env_store.empty() ? EnvironmentStore::default_dir() : options_.env_store);
  if (!store) return std::unexpected(store.error().with_context("rerun"));
  auto held = store->find(environment);
  if (!held) return std::unexpected(held.error().with_context("rerun"));
  if (*held) return {};
  if (!recipe_record.is_object()) {
    return fail(Errc::not_found, "rerun: the run's checks ran in environment " + environment.str() + ", which the store " +
                                     store->dir().string() + " does not hold and the ledger records no recipe for; "
                                     "import it there (warden env import) or give --env-store");
  }
  if (!options_.rebuild_environments) {
    return fail(Errc::not_found, "rerun: the run's checks ran in environment " + environment.str() + ", which the store " +
                                     store->dir().string() +
                                     " does not hold; --rebuild-environments builds it from the ledger's recipe (its prepare "
                                     "steps run with network), or give --env-store");
  }
  auto recipe = EnvironmentRecipe::from_record(recipe_record);
  if (!recipe) return std::unexpected(recipe.error().with_context("rerun: the recorded recipe"));
  auto built = build_recipe(*store, *recipe, {});
  if (!built) return std::unexpected(built.error().with_context("rerun: building the recorded environment again"));
  if (built->environment.digest != environment) {
    return fail(Errc::verification_failed, "rerun: the recorded recipe now builds environment " + built->environment.digest.str() +
                                               ", not the recorded " + environment.str() +
                                               " (its packages resolved to other versions); the rerun would not be the recorded run");
  }
  return {};
}

}  // namespace warden::kernel::detail
