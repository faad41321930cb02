// sandbox_bench: what isolation costs, in one run on one machine.
//
//   spawn             posix_spawn + waitpid of /bin/true, no sandbox at all
//   bare bwrap        bwrap with exactly the argv and seccomp program the sandbox uses for
//                     the default profile, forked (and dropped to the sandbox's uid, as the
//                     sandbox does when root) and waited for: nothing of Warden's
//   sandboxed /bin/true   Sandbox::run: the same bwrap plus Warden's reaper, limits, pipes,
//                     capture and digests (workspace bound directly)
//   ... on an overlay     the same with the overlay workspace a check gets (user + mount
//                     namespace and an overlayfs mount before bwrap)
//   one-shot CLI      `warden sandbox exec --workspace WS -- /bin/true` as a whole process (with
//                     its remembered preflight) against bare bwrap with the argv it runs
//   workspace preparation for 1,000 / 10,000 / 100,000-file repositories and a 3-file diff:
//                     apply the diff (tree objects), tree_sha256, and the diff layer, with the
//                     base checkout already cached (its one-time materialization is shown too)
//   cache hit         Runner::run for a tree whose result is recorded
//   cgroup limits     Sandbox::run of /bin/true with a cgroup per run (pids, memory, CPU)
//                     against the same without, interleaved; and RunCgroup create + remove
//                     alone; the run's own tmpfs for its writable layer shown beside
//
// Targets: sandboxed /bin/true within 1.3x of bare bwrap; the one-shot CLI within 1.5x; preparation at 100,000 files within
// 2x of 1,000; a cache hit under 1 ms; a run's cgroup adds at most 1 ms. Medians of --runs runs; the three start-up figures are
// measured interleaved, one of each per round.
//
//   cmake --build build --target sandbox_bench && build/sandbox_bench [--runs N] [--json]
//   build/sandbox_bench --quick        CI smoke run: 1,000 and 2,000 files, always exits 0
#include <fcntl.h>
#include <spawn.h>
#include <grp.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "runner/check/local_runner.h"
#include "runner/sandbox/run_cgroup.h"
#include "runner/workspace/workspace.h"
#include "tools/bench/bench_repo.h"
#include "tools/bench/median.h"

extern char** environ;

namespace {

namespace fs = std::filesystem;
using warden::bench::make_patch;
using warden::bench::make_repo;
using warden::bench::median_ms;
using Clock = std::chrono::steady_clock;
using warden::Json;

[[noreturn]] void die(const std::string& what) {
  std::cerr << "sandbox_bench: " << what << "\n";
  std::exit(2);
}

void spawn_and_wait(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  if (posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ) != 0) die("cannot spawn " + argv[0]);
  posix_spawn_file_actions_destroy(&actions);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) die(argv[0] + " failed");
}

// bwrap as the sandbox starts it, minus everything Warden adds around it: `argv` is
// sandbox.command_line() of a request without descriptors of its own, so bwrap reads the
// seccomp program on 3 and the profile's files from 4 on. bwrap exits once the command has,
// while its namespace init still tears the sandbox down; with `until_gone` the bench (a child
// subreaper) also waits for that init, as Warden does before it calls a run ended.
void bare_bwrap(const std::vector<std::string>& argv, const warden::Sandbox& sandbox, bool until_gone = false) {
  const std::string& seccomp = sandbox.seccomp_program();
  const warden::SandboxHost& host = sandbox.host();
  int mem = memfd_create("bench-seccomp", MFD_CLOEXEC);
  if (mem < 0 || write(mem, seccomp.data(), seccomp.size()) != static_cast<ssize_t>(seccomp.size())) die("memfd");
  lseek(mem, 0, SEEK_SET);
  auto files = sandbox.profile_files();
  if (!files) die(files.error().message);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    int null_fd = open("/dev/null", O_RDWR);
    dup2(null_fd, 0);
    dup2(null_fd, 1);
    // Moved above the target range first, so no dup2 overwrites a source still needed.
    int high = fcntl(mem, F_DUPFD_CLOEXEC, 100);
    std::vector<int> file_high;
    for (const auto& f : *files) file_high.push_back(fcntl(f.get(), F_DUPFD_CLOEXEC, 100));
    dup2(high, 3);
    for (size_t i = 0; i < file_high.size(); ++i) dup2(file_high[i], 4 + static_cast<int>(i));
    if (host.drop && (setgroups(0, nullptr) != 0 || setresgid(host.gid, host.gid, host.gid) != 0 ||
                      setresuid(host.uid, host.uid, host.uid) != 0)) {
      _exit(126);
    }
    char* env[] = {nullptr};
    execve(args[0], args.data(), env);
    _exit(127);
  }
  close(mem);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) die("bare bwrap failed: status " + std::to_string(status));
  while (until_gone && (waitpid(-1, nullptr, 0) > 0 || errno == EINTR)) {
  }
}

// Lets the machine go quiet between timed runs: a sandbox's teardown goes on in the kernel's
// workers after its processes are gone (the network namespace, RCU callbacks), and would
// otherwise land in whichever run comes next, so the order of an interleaved round would
// favour one side.
void settle() { std::this_thread::sleep_for(std::chrono::milliseconds(5)); }

// What per-run limits cost: the same in-process run with and without a cgroup of its own.
struct CgroupCost {
  bool measured = false;  // false: this host offers no cgroup (`why`)
  std::string why;
  double with_ms = 0, without_ms = 0;  // Sandbox::run of /bin/true, medians
  double setup_ms = 0;                 // RunCgroup::create + destruction alone, median
  double scratch_ms = 0, tmpfs_scratch_ms = 0;  // a run's scratch directory, plain and as its own tmpfs
  double added_ms() const { return with_ms - without_ms; }
  bool ok() const { return !measured || added_ms() <= 1.0; }
};

CgroupCost cgroup_cost(const warden::SandboxProfile& profile, const warden::SandboxHost& host, const fs::path& work,
                       int runs) {
  CgroupCost cost;
  if (!host.cgroups.usable()) {
    cost.why = host.cgroups.unavailable();
    return cost;
  }
  cost.measured = true;
  warden::SandboxHost plain = host;
  plain.cgroups = warden::CgroupHost::none("benchmark: without cgroups");
  auto with = warden::Sandbox::create(profile, host);
  auto without = warden::Sandbox::create(profile, plain);
  if (!with || !without) die("cannot create the sandboxes");
  if (!with->preflight().ok || !without->preflight().ok) die("preflight failed");
  fs::path ws = work / "cgroup-ws";
  if (auto st = warden::make_owned_dir(ws, host.uid, host.gid); !st) die(st.error().message);
  warden::SandboxRequest req;
  req.argv = {"/bin/true"};
  req.workspace_dir = ws;
  auto run = [&](warden::Sandbox& s) {
    auto r = s.run(req);
    if (!r || r->exit_code != 0) die("sandboxed /bin/true failed");
  };
  for (int i = 0; i < 3; ++i) {
    run(*with);
    run(*without);
  }
  std::vector<double> with_t, without_t;
  for (int i = 0; i < runs; ++i) {
    auto start = Clock::now();
    run(*with);
    with_t.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
    start = Clock::now();
    run(*without);
    without_t.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  cost.with_ms = median(with_t);
  cost.without_ms = median(without_t);
  const warden::ResourceLimits& l = profile.limits;
  cost.setup_ms = median_ms(std::max(runs, 101), [&] {
    auto cg = warden::RunCgroup::create(host.cgroups, {l.processes, l.memory_bytes, l.cpu_quota_percent});
    if (!cg) die(cg.error().message);
  });
  cost.scratch_ms = median_ms(std::max(runs, 101), [&] {
    if (!warden::ScratchDir::create(host.scratch_root, "warden-bench-", 0711)) die("scratch");
  });
  if (host.run_tmpfs) {
    cost.tmpfs_scratch_ms = median_ms(std::max(runs, 101), [&] {
      if (!with->run_scratch("warden-bench-")) die("tmpfs scratch");
    });
  }
  return cost;
}

void print_cgroup_cost(const CgroupCost& c) {
  std::printf("\nper-run cgroup limits (pids, memory, CPU)\n");
  if (!c.measured) {
    std::printf("  not measured: no usable cgroup here (%s)\n", c.why.c_str());
    return;
  }
  std::printf("%-44s %9.3f ms\n", "sandboxed /bin/true with a cgroup per run", c.with_ms);
  std::printf("%-44s %9.3f ms\n", "sandboxed /bin/true without", c.without_ms);
  std::printf("%-44s %9.3f ms   (target <= 1 ms)  %s\n", "added by the cgroup", c.added_ms(), c.ok() ? "PASS" : "FAIL");
  std::printf("%-44s %9.3f ms   (create, limits, remove)\n", "RunCgroup alone", c.setup_ms);
  std::printf("%-44s %9.3f ms   plain directory %.3f ms\n", "a run's scratch as its own tmpfs", c.tmpfs_scratch_ms, c.scratch_ms);
}

Json cgroup_cost_json(const CgroupCost& c) {
  return {{"measured", c.measured},
          {"with_cgroup_ms", c.with_ms},
          {"without_cgroup_ms", c.without_ms},
          {"cgroup_added_ms", c.added_ms()},
          {"run_cgroup_alone_ms", c.setup_ms},
          {"scratch_ms", c.scratch_ms},
          {"tmpfs_scratch_ms", c.tmpfs_scratch_ms},
          {"ok", c.ok()}};
}

// The one-shot CLI against bare bwrap with the argv it runs: `warden sandbox exec
// --workspace WS -- /bin/true` as a whole process (start-up, profile, remembered preflight,
// reaper, bwrap), and bwrap started directly with the same argv and seccomp program.
struct OneShot {
  double cli_ms = 0, bare_ms = 0;
  double bare_until_gone_ms = 0;  // context: bare bwrap and its namespace init both reaped
};

OneShot measure_one_shot(const fs::path& warden, const fs::path& work, const warden::SandboxHost& host, int runs) {
  auto profile = warden::SandboxProfile::load("default");
  if (!profile) die(profile.error().message);
  auto sandbox = warden::Sandbox::create(*profile, host);
  if (!sandbox) die(sandbox.error().message);
  fs::path ws = work / "one-shot-ws";
  if (auto st = warden::make_owned_dir(ws, host.uid, host.gid); !st) die(st.error().message);
  warden::SandboxRequest req;
  req.argv = {"/bin/true"};
  req.workspace_dir = ws;
  std::vector<std::string> bwrap_argv = sandbox->command_line(req);
  std::vector<std::string> cli = {warden.string(), "sandbox", "exec", "--cache", (work / "cache").string(),
                                  "--workspace", ws.string(), "--", "/bin/true"};
  // Orphans of a bare bwrap come to the bench, so it can wait for the whole sandbox.
  if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0) die("prctl(PR_SET_CHILD_SUBREAPER)");
  // The first call probes and remembers the verdict; every measured one finds it.
  for (int i = 0; i < 3; ++i) {
    spawn_and_wait(cli);
    bare_bwrap(bwrap_argv, *sandbox, true);
  }
  std::vector<double> cli_t, bare_t, gone_t;
  auto timed = [](std::vector<double>& into, auto&& f) {
    auto start = Clock::now();
    f();
    into.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  };
  for (int i = 0; i < runs; ++i) {
    settle();
    timed(cli_t, [&] { spawn_and_wait(cli); });
    settle();
    timed(bare_t, [&] { bare_bwrap(bwrap_argv, *sandbox); });
    // The bare run's init, still dying, is reaped here, before the next measurement.
    while (waitpid(-1, nullptr, 0) > 0 || errno == EINTR) {
    }
    settle();
    timed(gone_t, [&] { bare_bwrap(bwrap_argv, *sandbox, true); });
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  return {median(cli_t), median(bare_t), median(gone_t)};
}

struct PrepResult {
  uint64_t files = 0;
  double cold_ms = 0, prepare_ms = 0;
};

}  // namespace

int main(int argc, char** argv) {
  bool quick = false, json = false, one_shot_only = false;
  int runs = 31;
  std::vector<uint64_t> sizes;
  std::string warden_binary = (fs::read_symlink("/proc/self/exe").parent_path() / "warden").string();
  CLI::App app{"What sandboxing, workspaces and the result cache cost"};
  app.add_option("--warden", warden_binary, "The warden binary for the one-shot figure")->capture_default_str();
  app.add_flag("--quick", quick, "1,000 and 2,000 files, 5 runs; always exits 0 unless a step fails");
  app.add_option("--runs", runs, "Runs per figure (median reported)")->check(CLI::Range(1, 10000));
  app.add_flag("--json", json, "Print one JSON object instead of a table");
  app.add_flag("--one-shot", one_shot_only, "Only the one-shot CLI against bare bwrap (quick to repeat while tuning it)");
  app.add_option("--sizes", sizes, "Repository sizes in files (default 1000 10000 100000)");
  CLI11_PARSE(app, argc, argv);
  if (quick) runs = std::min(runs, 5);
  if (sizes.empty()) sizes = quick ? std::vector<uint64_t>{1000, 2000} : std::vector<uint64_t>{1000, 10000, 100000};

  auto work_dir = warden::ScratchDir::create(fs::temp_directory_path(), "sandbox-bench-", 0711);
  if (!work_dir) die(work_dir.error().message);
  const fs::path work = work_dir->path();
  auto profile = warden::SandboxProfile::load("default");
  if (!profile) die(profile.error().message);
  warden::SandboxHost host = warden::SandboxHost::detect();
  if (one_shot_only) {
    const OneShot o = measure_one_shot(warden_binary, work, host, runs);
    const double ratio = o.cli_ms / o.bare_ms;
    if (json) {
      std::cout << warden::Json{{"runs", runs}, {"one_shot_cli_ms", o.cli_ms}, {"one_shot_bare_bwrap_ms", o.bare_ms},
                                {"one_shot_bare_bwrap_until_gone_ms", o.bare_until_gone_ms}, {"one_shot_vs_bwrap", ratio},
                                {"ok", ratio <= 1.5}}.dump(2) << "\n";
    } else {
      std::printf("median of %d runs each\n%-44s %9.3f ms\n%-44s %9.3f ms   %.2fx bare bwrap (target <= 1.5x)  %s\n", runs,
                  "bare bwrap, the one-shot CLI's argv", o.bare_ms, "warden sandbox exec -- /bin/true (process)", o.cli_ms,
                  ratio, ratio <= 1.5 ? "PASS" : "FAIL");
      std::printf("%-44s %9.3f ms   (context: the CLI %.2fx that)\n", "bare bwrap, until its namespace init is gone", o.bare_until_gone_ms,
                  o.cli_ms / o.bare_until_gone_ms);
    }
    return quick || ratio <= 1.5 ? 0 : 1;
  }

  // 1. Process start-up costs.
  auto sandbox = warden::Sandbox::create(*profile, host);
  if (!sandbox) die(sandbox.error().message);
  if (!sandbox->preflight().ok) die("preflight failed: " + sandbox->preflight().failures());
  fs::path ws = work / "ws";
  if (auto st = warden::make_owned_dir(ws, host.uid, host.gid); !st) die(st.error().message);
  warden::SandboxRequest req;
  req.argv = {"/bin/true"};
  req.workspace_dir = ws;
  std::vector<std::string> bwrap_argv = sandbox->command_line(req);
  auto sandboxed = [&] {
    auto r = sandbox->run(req);
    if (!r || r->exit_code != 0) die("sandboxed /bin/true failed");
  };
  // Interleaved warm-up of all three, so none is measured cold.
  for (int i = 0; i < 3; ++i) {
    spawn_and_wait({"/bin/true"});
    bare_bwrap(bwrap_argv, *sandbox);
    sandboxed();
  }
  // Interleaved, one of each per round, so a change in the machine's load hits all three alike.
  std::vector<double> spawn_t, bwrap_t, sandbox_t;
  auto timed = [](std::vector<double>& into, auto&& f) {
    auto start = Clock::now();
    f();
    into.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  };
  for (int i = 0; i < runs; ++i) {
    timed(spawn_t, [&] { spawn_and_wait({"/bin/true"}); });
    settle();
    timed(bwrap_t, [&] { bare_bwrap(bwrap_argv, *sandbox); });
    settle();
    timed(sandbox_t, sandboxed);
    settle();
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  double spawn_ms = median(spawn_t), bwrap_ms = median(bwrap_t), sandbox_ms = median(sandbox_t);
  const OneShot one_shot = measure_one_shot(warden_binary, work, host, runs);
  const double one_shot_ratio = one_shot.cli_ms / one_shot.bare_ms;

  // The same on an overlay workspace: a one-file lower layer and a fresh upper per run.
  fs::path lower = work / "lower";
  if (auto st = warden::make_owned_dir(lower, host.uid, host.gid); !st) die(st.error().message);
  double overlay_ms = median_ms(runs, [&] {
    auto run_dir = warden::ScratchDir::create(work, "run-", 0711);
    if (!run_dir) die(run_dir.error().message);
    for (const char* sub : {"upper", "work", "merged"}) {
      if (auto st = warden::make_owned_dir(*run_dir / sub, host.uid, host.gid); !st) die(st.error().message);
    }
    warden::SandboxRequest o;
    o.argv = {"/bin/true"};
    o.overlay = warden::OverlaySpec{{lower.string()}, (*run_dir / "upper").string(), (*run_dir / "work").string(),
                                    (*run_dir / "merged").string()};
    auto r = sandbox->run(o);
    if (!r || r->exit_code != 0) die("sandboxed /bin/true on an overlay failed");
  });

  // 2. Workspace preparation, and 3. a cache hit, per repository size.
  warden::RunnerOptions options;
  options.cache_dir = work / "cache";
  auto runner = warden::LocalRunner::create(*profile, options, host);
  if (!runner) die(runner.error().message);
  // Every repository and its one-time base checkout first, then a sync, so the measured
  // preparations do not compete with the writeback of those big writes.
  struct Repo {
    std::optional<warden::Workspace> ws;
    warden::Diff diff;
    warden::ObjectId base_tree;
  };
  std::vector<Repo> repos(sizes.size());
  std::vector<PrepResult> prep(sizes.size());
  for (size_t k = 0; k < sizes.size(); ++k) {
    uint64_t n = sizes[k];
    std::cerr << "sandbox_bench: " << n << " files...\n";
    fs::path repo_dir = work / ("repo-" + std::to_string(n));
    make_repo(repo_dir, n);
    auto ws_repo = warden::Workspace::open(repo_dir);
    if (!ws_repo) die(ws_repo.error().message());
    repos[k].ws.emplace(std::move(*ws_repo));
    auto diff = repos[k].ws->diff_from_patch(make_patch(n), "main", "bench");
    if (!diff) die(diff.error().message());
    repos[k].diff = std::move(*diff);
    warden::GitRepo& repo = repos[k].ws->repo();
    auto base_tree = repo.tree_of(*repo.resolve_commit("main"));
    if (!base_tree) die("no base tree");
    repos[k].base_tree = *base_tree;
    prep[k].files = n;
    auto cold_start = Clock::now();
    auto cold = runner->prepare(repo, *base_tree, *base_tree);
    if (!cold) die(cold.error().message());
    prep[k].cold_ms = std::chrono::duration<double, std::milli>(Clock::now() - cold_start).count();
  }
  // (sync flushes the whole system's dirty data, which can take long on a shared machine:
  // the CI smoke run skips it.)
  if (!quick) ::sync();

  double hit_ms = 0;
  for (size_t k = 0; k < sizes.size(); ++k) {
    warden::GitRepo& repo = repos[k].ws->repo();
    const warden::ObjectId& base_tree = repos[k].base_tree;
    warden::RunRequest request{base_tree, std::nullopt, &repos[k].diff, {warden::CheckSpec::shell("true", "true")}, {}};
    auto prepare_once = [&] {
      auto tree = runner->tree_under_test(repo, request);
      if (!tree) die(tree.error().message());
      auto prepared = runner->prepare(repo, base_tree, *tree);
      if (!prepared) die(prepared.error().message());
      // Three files and the directories above them, never more.
      if (prepared->layer_stats.written == 0 || prepared->layer_stats.written > 9) {
        die("unexpected layer: " + std::to_string(prepared->layer_stats.written) + " entries");
      }
    };
    for (int i = 0; i < 3; ++i) prepare_once();  // warm libgit2's caches and the page cache
    prep[k].prepare_ms = median_ms(runs, prepare_once);
    if (k == 0) {
      auto tree = runner->tree_under_test(repo, request);
      warden::RunRequest cached{base_tree, *tree, nullptr, request.checks, {}};
      auto first = runner->run(repo, cached);
      if (!first || !first->result.all_passed()) die("the check did not pass");
      hit_ms = median_ms(runs, [&] {
        auto hit = runner->run(repo, cached);
        if (!hit || !hit->cache_hit) die("expected a cache hit");
      });
    }
  }

  const CgroupCost cgroups = cgroup_cost(*profile, host, work, runs);

  double sandbox_ratio = sandbox_ms / bwrap_ms;
  double prep_ratio = prep.back().prepare_ms / prep.front().prepare_ms;
  bool ok = sandbox_ratio <= 1.3 && prep_ratio <= 2.0 && hit_ms < 1.0 && cgroups.ok() && one_shot_ratio <= 1.5;
  if (json) {
    warden::Json out = {{"runs", runs},
                        {"spawn_ms", spawn_ms},
                        {"bare_bwrap_ms", bwrap_ms},
                        {"sandboxed_true_ms", sandbox_ms},
                        {"sandboxed_true_overlay_ms", overlay_ms},
                        {"sandbox_vs_bwrap", sandbox_ratio},
                        {"one_shot_cli_ms", one_shot.cli_ms},
                        {"one_shot_bare_bwrap_ms", one_shot.bare_ms},
                        {"one_shot_bare_bwrap_until_gone_ms", one_shot.bare_until_gone_ms},
                        {"one_shot_vs_bwrap", one_shot_ratio},
                        {"cache_hit_ms", hit_ms},
                        {"prepare_scaling", prep_ratio},
                        {"ok", ok},
                        {"cgroup_limits", cgroup_cost_json(cgroups)},
                        {"sizes", warden::Json::array()}};
    for (const auto& p : prep) {
      out["sizes"].push_back({{"files", p.files}, {"prepare_ms", p.prepare_ms}, {"cold_checkout_ms", p.cold_ms}});
    }
    std::cout << out.dump(2) << "\n";
  } else {
    auto verdict = [](bool pass) { return pass ? "PASS" : "FAIL"; };
    std::printf("median of %d runs each\n\n", runs);
    std::printf("%-44s %9.3f ms\n", "posix_spawn /bin/true (no sandbox)", spawn_ms);
    std::printf("%-44s %9.3f ms\n", "bare bwrap, same profile argv + seccomp", bwrap_ms);
    std::printf("%-44s %9.3f ms   %.2fx bare bwrap (target <= 1.3x)  %s\n", "sandboxed /bin/true (Sandbox::run)",
                sandbox_ms, sandbox_ratio, verdict(sandbox_ratio <= 1.3));
    std::printf("%-44s %9.3f ms   (context: + user/mount ns and overlayfs)\n", "sandboxed /bin/true, overlay workspace",
                overlay_ms);
    std::printf("%-44s %9.3f ms\n", "bare bwrap, the one-shot CLI's argv", one_shot.bare_ms);
    std::printf("%-44s %9.3f ms   %.2fx bare bwrap (target <= 1.5x)  %s\n", "warden sandbox exec -- /bin/true (process)",
                one_shot.cli_ms, one_shot_ratio, verdict(one_shot_ratio <= 1.5));
    std::printf("%-44s %9.3f ms   (context: the CLI %.2fx that)\n", "bare bwrap, until its namespace init is gone",
                one_shot.bare_until_gone_ms, one_shot.cli_ms / one_shot.bare_until_gone_ms);
    std::printf("\nworkspace preparation, 3-file diff (apply + tree_sha256 + diff layer; base cached)\n");
    for (const auto& p : prep) {
      std::printf("%10llu files %9.3f ms   (one-time base checkout: %.0f ms)\n", static_cast<unsigned long long>(p.files),
                  p.prepare_ms, p.cold_ms);
    }
    std::printf("preparation at %llu files / at %llu files: %.2fx (target <= 2x)  %s\n",
                static_cast<unsigned long long>(prep.back().files), static_cast<unsigned long long>(prep.front().files),
                prep_ratio, verdict(prep_ratio <= 2.0));
    std::printf("\n%-44s %9.3f ms   (target < 1 ms)  %s\n", "result cache hit (Runner::run)", hit_ms, verdict(hit_ms < 1.0));
    print_cgroup_cost(cgroups);
  }
  return quick || ok ? 0 : 1;
}
