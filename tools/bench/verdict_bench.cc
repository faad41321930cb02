// What a real fix that brings its regression test in an existing test file costs `warden
// propose`, next to what a person does without Warden: `git worktree add` at the parent, `git
// apply` of the commit's patch, and the project's suite run once. On a local clone of a real
// project (more-itertools), for its newest commit that changes a library file and only adds to
// an existing test file (chosen by the kernel's own structural comparison, so the choice is
// deterministic), or the commit given:
//   plain    git worktree add + git apply + the suite (no sandbox)
//   cold     warden propose on a base never tested (an empty cache): the base run, the
//            proposal's run and the oracle run (the base's tests with the base's test files)
//   cached   warden propose again on the same base (its run found in the cache)
//   compare  the structural comparison of every test file the commit changes, in-process,
//            against the cached proposal's wall time
// Targets: cached <= 1.1x plain, cold <= 1.3x plain, compare <= 5% of the proposal.
//
//   verdict_bench --repo DIR [--commit SHA] [--check CMD] [--runs N] [--jobs N]
// Exit 0 when every target holds, 1 when one does not, 2 when something could not run.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "common/subprocess.h"
#include "kernel/judge/test_file_change.h"

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

std::vector<std::string> environment() {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) env.emplace_back(*e);
  return env;
}

struct Ran {
  double ms = 0;
  int exit_code = 0;
  std::string out;
};

Ran run(const std::vector<std::string>& argv, const fs::path& cwd, std::chrono::minutes timeout = std::chrono::minutes(30)) {
  warden::SubprocessSpec spec;
  spec.argv = argv;
  spec.env = environment();
  spec.cwd = cwd;
  spec.timeout = timeout;
  spec.max_stdout = size_t{64} << 20;
  const auto start = Clock::now();
  auto r = warden::run_subprocess(spec);
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  if (!r) {
    std::cerr << "verdict_bench: " << argv[0] << ": " << r.error().message << "\n";
    std::exit(2);
  }
  return {ms, r->exit_code, r->out};
}

std::string must(const std::vector<std::string>& argv, const fs::path& cwd) {
  Ran r = run(argv, cwd);
  if (r.exit_code != 0) {
    std::cerr << "verdict_bench: `" << argv[0] << " " << (argv.size() > 1 ? argv[1] : "") << "` exited " << r.exit_code << "\n";
    std::exit(2);
  }
  return r.out;
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) {
    if (!l.empty()) out.push_back(l);
  }
  return out;
}

bool is_test_file(const std::string& path) {
  const std::string name = path.substr(path.rfind('/') + 1);
  return path.starts_with("tests/") && name.ends_with(".py") && name.starts_with("test_");
}

// The test files `commit` modifies (and none it adds or deletes), and whether it changes
// anything else: a fix with its test.
struct CommitShape {
  std::vector<std::string> modified_tests;
  bool changes_code = false;
  bool other_test_change = false;
};

CommitShape shape_of(const fs::path& repo, const std::string& commit) {
  CommitShape s;
  for (const std::string& l : lines(must({"git", "-C", repo.string(), "diff", "--name-status", "--no-renames", commit + "^", commit}, repo))) {
    const char status = l[0];
    const std::string path = l.substr(l.find('\t') + 1);
    if (is_test_file(path) || path.starts_with("tests/")) {
      if (status == 'M' && is_test_file(path)) s.modified_tests.push_back(path);
      else s.other_test_change = true;
    } else {
      s.changes_code = true;
    }
  }
  return s;
}

std::string show(const fs::path& repo, const std::string& rev, const std::string& path) {
  return must({"git", "-C", repo.string(), "show", rev + ":" + path}, repo);
}

bool only_adds(const fs::path& repo, const std::string& commit, const CommitShape& s) {
  for (const std::string& path : s.modified_tests) {
    auto c = warden::kernel::compare_test_file(path, show(repo, commit + "^", path), show(repo, commit, path));
    if (c.unreadable || !c.findings.empty()) return false;
  }
  return !s.modified_tests.empty();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"warden propose of a real fix with its test, next to git worktree + git apply + the suite"};
  std::string repo_arg, commit, check = "python3 -B -m unittest discover -s tests -t .";
  int runs = 1, jobs = 0;
  app.add_option("--repo", repo_arg, "A git repository (a local mirror of more-itertools)")->required();
  app.add_option("--commit", commit, "The commit to propose (default: the newest fix that only adds to an existing test file)");
  app.add_option("--check", check, "The project's test command")->capture_default_str();
  app.add_option("--runs", runs, "Repetitions (medians are reported)")->capture_default_str();
  app.add_option("--jobs", jobs, "warden propose --jobs (default: Warden's)");
  CLI11_PARSE(app, argc, argv);

  const fs::path work = fs::temp_directory_path() / ("warden-verdict-bench-" + std::to_string(::getpid()));
  fs::remove_all(work);
  fs::create_directories(work);
  const fs::path mirror = fs::absolute(repo_arg);
  const fs::path repo = work / "repo";
  must({"git", "clone", "-q", "--no-checkout", mirror.string(), repo.string()}, work);

  if (commit.empty()) {
    for (const std::string& c : lines(must({"git", "-C", repo.string(), "rev-list", "--no-merges", "--max-count=400", "HEAD", "--", "tests"}, repo))) {
      CommitShape s = shape_of(repo, c);
      if (s.changes_code && !s.other_test_change && only_adds(repo, c, s)) {
        commit = c;
        break;
      }
    }
    if (commit.empty()) {
      std::cerr << "verdict_bench: no commit in the last 400 that changes code and only adds to a test file\n";
      return 2;
    }
  }
  const CommitShape shape = shape_of(repo, commit);
  const std::string parent = must({"git", "-C", repo.string(), "rev-parse", commit + "^"}, repo).substr(0, 40);
  const std::string patch = must({"git", "-C", repo.string(), "format-patch", "-1", "--stdout", commit}, repo);
  std::ofstream(work / "fix.patch", std::ios::binary) << patch;
  must({"git", "-C", repo.string(), "checkout", "-q", parent}, repo);
  std::printf("verdict_bench: %s (%s), %zu test file(s) gaining tests, check `%s`\n", commit.substr(0, 12).c_str(),
              lines(must({"git", "-C", repo.string(), "log", "-1", "--format=%s", commit}, repo)).at(0).c_str(),
              shape.modified_tests.size(), check.c_str());

  std::vector<double> plain, cold, cached;
  for (int i = 0; i < runs; ++i) {
    const fs::path wt = work / ("wt" + std::to_string(i));
    const auto start = Clock::now();
    must({"git", "-C", repo.string(), "worktree", "add", "-q", "--detach", wt.string(), parent}, repo);
    must({"git", "-C", wt.string(), "apply", (work / "fix.patch").string()}, wt);
    // The interpreter the sandbox runs (the host's /usr), not one a user's PATH puts first.
    Ran suite = run({"/usr/bin/env", "PATH=/usr/bin:/bin", "/bin/sh", "-c", check}, wt);
    plain.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
    if (suite.exit_code != 0) {
      std::cerr << "verdict_bench: the suite fails at the commit (exit " << suite.exit_code << ")\n";
      return 2;
    }
    must({"git", "-C", repo.string(), "worktree", "remove", "--force", wt.string()}, repo);

    const fs::path cache = work / ("cache" + std::to_string(i));
    for (int k = 0; k < 2; ++k) {
      const std::string n = std::to_string(i) + "-" + std::to_string(k);
      std::vector<std::string> args = {WARDEN_BINARY, "propose", (work / "fix.patch").string(), "--repo", repo.string(), "--base",
                                       parent, "--check", check, "--ledger", (work / ("ledger" + n)).string(), "--branch",
                                       "bench/" + n, "--cache", cache.string(), "--step-timeout", "1800", "--json"};
      if (jobs > 0) args.insert(args.end(), {"--jobs", std::to_string(jobs)});
      Ran r = run(args, work);
      if (r.exit_code != 0) {
        std::cerr << "verdict_bench: warden propose exited " << r.exit_code << ":\n" << r.out << "\n";
        return 2;
      }
      (k == 0 ? cold : cached).push_back(r.ms);
    }
  }

  // The structural comparison alone, as decide() makes it for each test file.
  std::vector<std::pair<std::string, std::string>> images;
  for (const std::string& path : shape.modified_tests) images.emplace_back(show(repo, parent, path), show(repo, commit, path));
  constexpr int kRepeat = 20;
  std::vector<double> compare;
  for (int r = 0; r < kRepeat; ++r) {
    const auto start = Clock::now();
    for (size_t k = 0; k < images.size(); ++k) {
      auto c = warden::kernel::compare_test_file(shape.modified_tests[k], images[k].first, images[k].second);
      if (!c.findings.empty() || c.unreadable) {
        std::cerr << "verdict_bench: the commit changes a base test; give one that only adds\n";
        return 2;
      }
    }
    compare.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  }
  uint64_t bytes = 0;
  for (const auto& [before, after] : images) bytes += before.size() + after.size();
  fs::remove_all(work);

  const double p = median(plain), c0 = median(cold), c1 = median(cached), cmp = median(compare);
  const bool cached_ok = c1 <= 1.1 * p, cold_ok = c0 <= 1.3 * p, compare_ok = cmp <= 0.05 * c1;
  std::printf("  plain: worktree + apply + suite     median %9.0f ms\n", p);
  std::printf("  warden propose, base never tested   median %9.0f ms  %.2fx  (target <= 1.3x) %s\n", c0, c0 / p, cold_ok ? "PASS" : "FAIL");
  std::printf("  warden propose, base run cached     median %9.0f ms  %.2fx  (target <= 1.1x) %s\n", c1, c1 / p, cached_ok ? "PASS" : "FAIL");
  std::printf("  structural comparison (%llu KiB)      median %9.2f ms  %.3f%% of the cached proposal (target <= 5%%) %s\n",
              static_cast<unsigned long long>(bytes / 1024), cmp, 100 * cmp / c1, compare_ok ? "PASS" : "FAIL");
  return cached_ok && cold_ok && compare_ok ? 0 : 1;
}
