// LocalRunner: the Runner (runner.h) that evaluates on this host, once per proposal: given
// a repository, the base tree, the tree under test (or a Diff to apply to the base, verified
// here with resolve_diff), and check specs, it returns a RunResult — from the result cache
// when the same tree, checks, profile and toolchain were run before, otherwise by running
// every check in the bubblewrap sandbox on an overlay workspace:
//   base checkout   read-only, one per base tree id, materialized once, sealed and verified
//                   before reuse (base_checkout.h)
//   diff layer      the files the tree under test changes, O(changed files) (diff_layer.h)
//   upper layer     empty, one per run: every write a check makes lands here and is dropped
// The layers and the upper and work directories sit in directories only Warden can reach
// (other processes of the sandbox's uid can neither read nor change them); the sandbox's
// child opens them by descriptor (sandbox_process.h).
// A sandbox whose preflight fails refuses the whole request (refusal "sandbox_unavailable").
// Owns its sandbox, and shares its result cache and base checkouts (under
// RunnerOptions::cache_dir, which several processes may share: the cache is LMDB, base
// checkouts are written atomically) with its siblings. Not thread-safe: one LocalRunner per
// thread; sibling() makes another for another thread (a merge queue's jobs).
#pragma once

#include <memory>
#include <mutex>

#include <filesystem>
#include <optional>
#include <vector>

#include "runner/check/base_checkout.h"
#include "runner/check/diff_layer.h"
#include "runner/check/report_channel.h"
#include "runner/check/result_cache.h"
#include "runner/environment/environment.h"
#include "runner/environment/environment_store.h"
#include "runner/check/runner.h"
#include "runner/sandbox/sandbox.h"

namespace warden {

struct RunnerOptions {
  // checkouts/ holds base checkouts (base_checkout.h), store/ the LMDB result cache and
  // tree-hash memo. Both are Warden's alone (private_dir.h: 0700, refused when another uid
  // owns them or others may write into them), and so is the directory itself, but for read
  // and search bits, which it keeps (an older Warden's base/ may be in it); the sandbox reaches
  // base checkouts only through the descriptors its child opens.
  std::filesystem::path cache_dir;
  // Results come from and go to the cache for every request; off, only for a request that
  // asks for reuse (RunRequest::reuse).
  bool use_cache = true;
  bool kernel_release_in_toolchain = true;  // toolchain.h: off for golden runs
  // Checks run in this environment (runner/environment) instead of on the host's /usr: it is
  // found by digest in `env_store` (empty: EnvironmentStore::default_dir()), scanned again,
  // and refused (not_found, corrupt) when it is not there or not what its digest says.
  std::optional<Digest> environment;
  std::filesystem::path env_store;
  // Where the host's file digests are remembered (toolchain.h); empty: the host-wide default.
  std::filesystem::path file_digests;
  // A fresh nonce per run of a check with an authenticated report (report_channel.h). It is
  // the run's one random input and never recorded; injectable so tests can write a right MAC.
  NonceSource nonce_source = random_nonce;
};

// A workspace ready for runs: the layers an overlay stacks (topmost first).
struct PreparedWorkspace {
  ObjectId base_tree, tree;
  Digest tree_sha256;
  std::filesystem::path base_dir;
  std::optional<DiscardedCheckout> discarded;  // the base checkout was rebuilt (base_checkout.h)
  // Absent when the tree is the base itself. The layer is its tree/ directory, owned by the
  // sandbox's uid inside a directory only Warden reaches (the child opens it by descriptor).
  std::optional<ScratchDir> layer;
  LayerStats layer_stats;
  std::vector<std::string> lowers() const;
};

class LocalRunner final : public Runner {
 public:
  static Result<LocalRunner> create(SandboxProfile profile, RunnerOptions options, SandboxHost host = SandboxHost::detect());

  Sandbox& sandbox() { return *sandbox_; }
  const Json& toolchain() const { return toolchain_; }
  const Digest& toolchain_sha256() const { return toolchain_sha256_; }
  // The environment checks run in; none on the host's /usr.
  const std::optional<Environment>& environment() const { return environment_; }

  Checked<RunOutcome> run(GitRepo& repo, const RunRequest& request) override;

  // Another runner like this one, for another thread: the same profile, host, options,
  // toolchain identity and preflight verdict (so the runs of both record the same), this
  // runner's result cache and base checkouts (LMDB allows one environment per process, and a
  // base checkout is made and verified once), and a sandbox of its own.
  Result<LocalRunner> sibling();
  // Whether runs at the same time are kept apart: each in a pids cgroup of its own. Without
  // one, RLIMIT_NPROC is one budget per host uid, and one run's processes could make another's
  // fork fail: what a check does would depend on what ran beside it.
  bool isolates_concurrent_runs() const { return sandbox_->host().cgroups.has("pids"); }

  // The steps of run(), public for the CLI and the benchmark.
  // The tree a request names: its tree, or the diff applied to its base (every hash of the
  // diff checked again: a runner trusts no one's word that a diff applies), or the base.
  static Checked<ObjectId> tree_under_test(GitRepo& repo, const RunRequest& request);
  Checked<Digest> tree_hash(GitRepo& repo, const ObjectId& tree);
  Digest cache_key(const ObjectId& tree, const Digest& tree_sha256, const std::vector<CheckSpec>& checks) const;
  Checked<PreparedWorkspace> prepare(GitRepo& repo, const ObjectId& base_tree, const ObjectId& tree,
                                     const std::vector<OverlayFile>& overlay = {});
  Result<std::optional<ResultCache::Hit>> cached(const Digest& key) {
    std::lock_guard lock(stores_->mu);
    return stores_->cache->get(key);
  }

 private:
  LocalRunner() = default;
  // `from`: the earlier results the spec's tests_from names, in its order.
  CheckResult run_check(const PreparedWorkspace& ws, const CheckSpec& spec, const std::vector<const CheckResult*>& from);
  CheckRun run_once(const PreparedWorkspace& ws, const CheckSpec& spec, const std::vector<const CheckResult*>& from);
  // Keeps a captured body for the current request's outcome; returns its digest.
  Digest keep(std::string bytes);
  std::stop_token stop_;         // the current request's
  RunBodies* bodies_ = nullptr;  // the current request's outcome's

  // What siblings share; `mu` guards both (cache lookups are short, and a base checkout is
  // made once, by whichever sibling needs it first).
  struct Stores {
    std::mutex mu;
    std::optional<ResultCache> cache;
    std::optional<BaseCheckouts> bases;
    std::optional<EnvironmentStore> environments;  // environment_'s store: each run holds it there
  };

  std::optional<Sandbox> sandbox_;
  RunnerOptions options_;
  std::shared_ptr<Stores> stores_;
  Json toolchain_;
  Digest toolchain_sha256_;
  std::optional<Environment> environment_;
};

}  // namespace warden
