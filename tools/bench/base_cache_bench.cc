// base_cache_bench: what verifying a cached base checkout costs before it is reused
// (runner/check/base_checkout.h): the stat walk of the checkout compared with its seal, for a
// repository of --files files (10,000 by default; two directory levels, see bench_repo.h).
//
//   make        write the checkout and its seal (once per tree and machine)
//   verify      a new BaseCheckouts (as a new process has) finding the sealed entry and
//               walking it: what every process pays on its first use of a cached base
//   reuse       the same BaseCheckouts again: an entry this process verified is not re-walked
//
// Medians of --runs runs.
//
//   cmake --build build --target base_cache_bench && build/base_cache_bench [--files N] [--runs N]
//   build/base_cache_bench --quick     CI smoke run: 1,000 files, always exits 0
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "runner/check/base_checkout.h"
#include "runner/sandbox/scratch_dir.h"
#include "tools/bench/bench_repo.h"
#include "tools/bench/median.h"

namespace {

namespace fs = std::filesystem;
using warden::bench::make_repo;
using warden::bench::median_ms;

[[noreturn]] void die(const std::string& what) {
  std::cerr << "base_cache_bench: " << what << "\n";
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"What verifying a cached base checkout costs"};
  uint64_t files = 10'000;
  int runs = 11;
  bool quick = false;
  app.add_option("--files", files, "Files in the repository");
  app.add_option("--runs", runs, "Runs per figure (the median is reported)");
  app.add_flag("--quick", quick, "CI smoke run: 1,000 files, 3 runs");
  CLI11_PARSE(app, argc, argv);
  if (quick) {
    files = 1'000;
    runs = 3;
  }

  auto work = warden::ScratchDir::create("/tmp", "warden-base-cache-bench-", 0700);
  if (!work) die(work.error().message);
  const fs::path repo_dir = work->path() / "repo";
  make_repo(repo_dir, files);
  auto repo = warden::GitRepo::open(repo_dir);
  if (!repo) die(repo.error().message());
  auto commit = repo->resolve_commit("main");
  if (!commit) die(commit.error().message());
  auto tree = repo->tree_of(*commit);
  if (!tree) die(tree.error().message());
  const warden::SandboxHost host = warden::SandboxHost::detect();

  int made = 0;
  double make_ms = median_ms(runs, [&] {
    // A fresh cache each time: the cost of the first use on a machine.
    const fs::path cache = work->path() / ("cache-" + std::to_string(made++));
    warden::BaseCheckouts bases(cache / "checkouts", host);
    auto got = bases.get(*repo, *tree);
    if (!got || !got->made) die("make: " + (got ? std::string("not made") : got.error().message()));
  });
  const fs::path cache = work->path() / "cache-0";
  double verify_ms = median_ms(runs, [&] {
    warden::BaseCheckouts bases(cache / "checkouts", host);
    auto got = bases.get(*repo, *tree);
    if (!got || got->made || got->discarded) die("verify: the sealed entry was not reused");
  });
  warden::BaseCheckouts warm(cache / "checkouts", host);
  if (!warm.get(*repo, *tree)) die("reuse");
  double reuse_ms = median_ms(runs, [&] {
    if (!warm.get(*repo, *tree)) die("reuse");
  });

  std::printf("base checkout of %llu files, medians of %d runs\n", static_cast<unsigned long long>(files), runs);
  std::printf("  make (write + seal)           %9.2f ms\n", make_ms);
  std::printf("  verify (stat walk vs seal)    %9.2f ms   %.2f us/file\n", verify_ms, verify_ms * 1000.0 / static_cast<double>(files));
  std::printf("  reuse (verified here before)  %9.3f ms\n", reuse_ms);
  return 0;
}
