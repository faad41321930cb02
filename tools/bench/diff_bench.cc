// diff_bench: parse + verify + apply + write tree for a 3-file patch on repositories of
// 1,000, 10,000 and 100,000 files, next to `git apply --cached && git write-tree` on the
// same patch and the same repository in the same run, and the `warden` process's start-up.
//
//   Warden in-process   Workspace::diff_from_patch + Workspace::apply (the kernel's path)
//   Warden command      `warden diff apply PATCH`: one process, from the same patch git gets
//   git                 `git apply --cached PATCH` then `git write-tree` (index reset beforehand,
//                       untimed, with `git read-tree`)
//   start-up            `warden --version`, and `warden diff check PATCH` on the 1,000-file
//                       repository, whole process; `git --version` beside them
//
// Targets: Warden (in-process, the path the kernel takes for every proposal) and the Warden
// command both faster than git at every size; Warden's in-process time at 100,000 files within
// 1.5x of its time at 1,000 (the cost follows the diff, not the repository); `warden --version`
// and `warden diff check` on 1,000 files each under 5 ms. Each figure is the median of --runs
// runs. Repositories are built with `git fast-import` in a temp dir that is removed at exit.
//
//   cmake --build build --target diff_bench warden && build/diff_bench [--runs N] [--json]
//   build/diff_bench --quick        CI smoke run: 1,000 and 5,000 files, always exits 0
#include <stdlib.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "common/canonical_json.h"
#include "runner/workspace/workspace.h"
#include "tools/bench/bench_repo.h"
#include "tools/bench/median.h"

namespace {

namespace fs = std::filesystem;
using warden::bench::make_patch;
using warden::bench::make_repo;
using warden::bench::median_ms;
using warden::bench::run_command;
using Clock = std::chrono::steady_clock;

[[noreturn]] void die(const std::string& what) {
  std::cerr << "diff_bench: " << what << "\n";
  std::exit(2);
}

struct SizeResult {
  uint64_t files = 0;
  double warden_ms = 0, warden_cli_ms = 0, git_ms = 0, check_ms = -1;  // check: at 1,000 files only
  std::string tree;
};

SizeResult measure(const fs::path& work, uint64_t files, int runs, const std::string& warden_bin, bool warden_only) {
  fs::path repo = work / ("repo-" + std::to_string(files));
  make_repo(repo, files);
  fs::path patch_file = work / ("change-" + std::to_string(files) + ".patch");
  std::string patch = make_patch(files);
  std::ofstream(patch_file, std::ios::binary) << patch;

  SizeResult r;
  r.files = files;
  auto ws = warden::Workspace::open(repo);
  if (!ws) die(ws.error().message());
  r.warden_ms = median_ms(runs, [&] {
    auto diff = ws->diff_from_patch(patch, "main", "bench");
    if (!diff) die(diff.error().message());
    auto applied = ws->apply(*diff, "main");
    if (!applied) die(applied.error().message());
    r.tree = applied->tree.hex();
  });

  if (warden_only) return r;
  fs::path tree_out = work / "tree.out";
  r.warden_cli_ms = median_ms(runs, [&] {
    run_command({warden_bin, "diff", "apply", patch_file.string(), "--repo", repo.string(), "--base", "main"}, "",
                tree_out.string());
  });
  std::string cli_tree;
  std::ifstream(tree_out) >> cli_tree;
  if (cli_tree != r.tree) die("`warden diff apply` wrote tree " + cli_tree + ", in-process " + r.tree);
  if (r.files == 1000) {
    r.check_ms = median_ms(runs, [&] {
      run_command({warden_bin, "diff", "check", patch_file.string(), "--repo", repo.string(), "--base", "main"}, "",
                  "/dev/null");
    });
  }

  std::vector<double> git_ms;
  for (int i = 0; i < runs; ++i) {
    run_command({"git", "-C", repo.string(), "read-tree", "main"});  // reset the index: untimed
    auto start = Clock::now();
    run_command({"git", "-C", repo.string(), "apply", "--cached", patch_file.string()});
    run_command({"git", "-C", repo.string(), "write-tree"}, "", tree_out.string());
    git_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  }
  std::sort(git_ms.begin(), git_ms.end());
  r.git_ms = git_ms[git_ms.size() / 2];
  std::string git_tree;
  std::ifstream(tree_out) >> git_tree;
  if (git_tree != r.tree) die("tree ids differ at " + std::to_string(files) + " files: warden " + r.tree + ", git " + git_tree);
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false, json = false, warden_only = false;
  int runs = 15;
  std::vector<uint64_t> sizes;
  CLI::App app{"Warden's patch pipeline against git apply --cached && git write-tree"};
  app.add_flag("--quick", quick, "1,000 and 5,000 files, 5 runs; always exits 0 unless a step fails");
  app.add_option("--runs", runs, "Runs per figure (median reported)")->check(CLI::Range(1, 1000));
  app.add_flag("--json", json, "Print one JSON object instead of a table");
  app.add_option("--sizes", sizes, "Repository sizes in files (default 1000 10000 100000)");
  app.add_flag("--warden-only", warden_only, "Time Warden in-process only (for profiling)");
  CLI11_PARSE(app, argc, argv);
  if (quick) runs = std::min(runs, 5);
  if (sizes.empty()) sizes = quick ? std::vector<uint64_t>{1000, 5000} : std::vector<uint64_t>{1000, 10000, 100000};

  std::string warden_bin = (fs::read_symlink("/proc/self/exe").parent_path() / "warden").string();
  if (!fs::exists(warden_bin)) die("build the warden target first: " + warden_bin + " is missing");
  std::string tmpl = (fs::temp_directory_path() / "diff-bench-XXXXXX").string();
  if (!mkdtemp(tmpl.data())) die("cannot create a temp dir");
  fs::path work = tmpl;

  std::vector<SizeResult> results;
  for (uint64_t n : sizes) {
    std::cerr << "diff_bench: " << n << " files...\n";
    results.push_back(measure(work, n, runs, warden_bin, warden_only));
  }
  fs::remove_all(work);

  double version_ms = -1, git_version_ms = -1;
  if (!warden_only) {
    version_ms = median_ms(runs, [&] { run_command({warden_bin, "--version"}, "", "/dev/null"); });
    git_version_ms = median_ms(runs, [&] { run_command({"git", "--version"}, "", "/dev/null"); });
  }
  double check_ms = -1;
  for (const auto& r : results) {
    if (r.check_ms >= 0) check_ms = r.check_ms;
  }

  double scaling = results.back().warden_ms / results.front().warden_ms;
  bool ok = scaling <= 1.5;
  for (const auto& r : results) ok = ok && r.warden_ms < r.git_ms && (warden_only || r.warden_cli_ms < r.git_ms);
  if (!warden_only) ok = ok && version_ms < 5 && (check_ms < 0 || check_ms < 5);
  auto verdict = [](bool pass) { return pass ? "PASS" : "FAIL"; };
  if (json) {
    warden::Json out = {{"runs", runs},       {"scaling", scaling},           {"ok", ok},
                        {"version_ms", version_ms}, {"git_version_ms", git_version_ms}, {"check_1000_ms", check_ms},
                        {"sizes", warden::Json::array()}};
    for (const auto& r : results) {
      out["sizes"].push_back({{"files", r.files}, {"warden_ms", r.warden_ms}, {"warden_cli_ms", r.warden_cli_ms},
                              {"git_ms", r.git_ms}, {"tree", r.tree}});
    }
    std::cout << out.dump() << "\n";
  } else {
    std::printf("3-file patch, median of %d runs; trees identical to git's at every size\n\n", runs);
    std::printf("%10s %18s %17s %14s   %s\n", "files", "warden in-process", "warden command", "git (2 procs)",
                "faster than git (in-process, command)");
    for (const auto& r : results) {
      std::printf("%10llu %15.3f ms %14.2f ms %11.2f ms   %s %s\n", static_cast<unsigned long long>(r.files), r.warden_ms,
                  r.warden_cli_ms, r.git_ms, verdict(r.warden_ms < r.git_ms),
                  warden_only ? "-" : verdict(r.warden_cli_ms < r.git_ms));
    }
    std::printf("\nin-process time at %llu files / at %llu files: %.2fx (target <= 1.5x)  %s\n",
                static_cast<unsigned long long>(results.back().files),
                static_cast<unsigned long long>(results.front().files), scaling, verdict(scaling <= 1.5));
    if (!warden_only) {
      std::printf("\nstart-up, whole process\n");
      std::printf("warden --version                    %8.2f ms   (target < 5 ms)  %s   context: git --version %.2f ms\n",
                  version_ms, verdict(version_ms < 5), git_version_ms);
      if (check_ms >= 0) {
        std::printf("warden diff check, 1000 files       %8.2f ms   (target < 5 ms)  %s\n", check_ms, verdict(check_ms < 5));
      }
    }
  }
  return quick || ok ? 0 : 1;
}
