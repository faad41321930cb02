// What the base run costs `warden propose`, and that it is paid once per base tree: a small
// Python project whose unittest suite takes --test-seconds, and two proposals on the same
// base, each into its own ledger and branch. The first tests the base and the proposal, at once
// where there are two cores (--jobs); the second finds the base's run in the runner's cache and
// tests only the proposal. Beside them, the suite run once by a plain `python3 -m unittest` (no
// sandbox): the floor one proposal cannot go below.
//
//   propose_bench [--test-seconds S] [--runs N] [--quick]
// Exit 0 when every second proposal took no longer than its first (within 5% and 50 ms), 1 when
// one did not, 2 when something could not run.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "tools/bench/bench_process.h"

namespace fs = std::filesystem;
using warden::bench::timed;

namespace {

void write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

// The project: mathlib.ops with a unittest suite whose one slow test sleeps `seconds`.
void make_project(const fs::path& repo, double seconds) {
  write(repo / "mathlib/__init__.py", "");
  write(repo / "mathlib/ops.py", "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n");
  write(repo / "tests/__init__.py", "");
  write(repo / "tests/test_ops.py",
        "import time\nimport unittest\n\nfrom mathlib.ops import add, mul\n\n\nclass TestOps(unittest.TestCase):\n"
        "    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n\n"
        "    def test_mul(self):\n        self.assertEqual(mul(2, 3), 6)\n\n"
        "    def test_slow(self):\n        time.sleep(" + std::to_string(seconds) + ")\n");
  timed({"git", "init", "-q", "-b", "main", repo.string()}, repo.parent_path());
  timed({"git", "-C", repo.string(), "add", "-A"}, repo);
  timed({"git", "-C", repo.string(), "-c", "user.name=bench", "-c", "user.email=bench@example.com", "commit", "-qm", "base"}, repo);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"warden propose twice on one base: the second reuses the base's test run"};
  double test_seconds = 1.0;
  int runs = 3;
  bool quick = false;
  app.add_option("--test-seconds", test_seconds, "How long the project's test suite takes")->capture_default_str();
  app.add_option("--runs", runs, "Pairs of proposals, each pair on a fresh project")->capture_default_str();
  app.add_flag("--quick", quick, "One pair on a 0.3 s suite (CI)");
  CLI11_PARSE(app, argc, argv);
  if (quick) {
    test_seconds = 0.3;
    runs = 1;
  }

  const fs::path work = fs::temp_directory_path() / ("warden-propose-bench-" + std::to_string(::getpid()));
  fs::remove_all(work);
  const std::string check = "python3 -B -m unittest discover -s tests -t . -v";
  std::vector<double> first, second, plain;
  bool ok = true;
  for (int i = 0; i < runs; ++i) {
    const fs::path dir = work / std::to_string(i);
    const fs::path repo = dir / "repo";
    fs::create_directories(repo);
    make_project(repo, test_seconds);
    // One patch, proposed twice: each proposal into a ledger and branch of its own, one cache.
    write(repo / "mathlib/ops.py", "def add(a, b):\n    return b + a\n\n\ndef mul(a, b):\n    return a * b\n");
    std::string patch;
    timed({"git", "-C", repo.string(), "diff"}, repo, 0, &patch);
    timed({"git", "-C", repo.string(), "checkout", "-q", "--", "."}, repo);
    write(dir / "fix.patch", patch);

    plain.push_back(timed({"python3", "-B", "-m", "unittest", "discover", "-s", "tests", "-t", "."}, repo));
    for (int k = 0; k < 2; ++k) {
      const std::string n = std::to_string(k);
      double ms = timed({WARDEN_BINARY, "propose", (dir / "fix.patch").string(), "--repo", repo.string(), "--base", "main",
                         "--check", check, "--ledger", (dir / ("ledger" + n)).string(), "--branch", "bench/" + n, "--cache",
                         (dir / "cache").string(), "--json"},
                        dir);
      (k == 0 ? first : second).push_back(ms);
    }
    ok = ok && second.back() <= first.back() * 1.05 + 50;
  }
  fs::remove_all(work);

  std::printf("warden propose on one base, test suite %.1f s, %d pair(s)\n", test_seconds, runs);
  std::printf("  plain unittest run (no sandbox)      median %8.0f ms\n", median(plain));
  std::printf("  first proposal (base + proposal)     median %8.0f ms  %.2fx the plain run\n", median(first),
              median(first) / median(plain));
  std::printf("  second proposal (base from cache)    median %8.0f ms  %.2fx the plain run\n", median(second),
              median(second) / median(plain));
  std::printf("  saved by reusing the base's run      median %8.0f ms  (target: the second no slower than the first) %s\n",
              median(first) - median(second), ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}
