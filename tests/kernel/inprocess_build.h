// What the in-process tests of the build loop and the merge queue share: a FakeRunner behind
// the Runner seam (runner/check/runner.h, handed to the kernel as KernelSession::runner), a
// blueprint of plain file changes under a one-check policy, one build driven through
// kernel::run_build with a logical clock, and readers of what the build left behind (the
// ledger's typed records, the branch through the git CLI).
//
// The fake decides the way the policy's check would (`! grep -rqs BAD src`): a check fails
// when a file of the tree under test says BAD. It reads that tree from the repository the
// kernel hands it, so what it judged is exactly the tree the kernel asked about, and a test
// can say which tree that was. No sandbox, no subprocess: only git objects and the ledger.
//
// Header-only: every tests/kernel/*_test.cc is its own executable.
#pragma once

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "executor/plan_proposer.h"
#include "kernel/build/build_loop.h"
#include "kernel/plan/blueprint.h"
#include "kernel/record/records.h"
#include "ledger/ledger.h"
#include "ledger/note.h"
#include "runner/check/runner.h"
#include "tests/support/files.h"
#include "tests/support/git_fixture.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace warden::test {

namespace fs = std::filesystem;

// What the policy's check greps for: a file under test saying it fails the check.
inline constexpr std::string_view kBad = "BAD";

// One request as the fake received it, copied out (the request's diff pointer does not
// outlive the call), with the files of the tree under test as the fake read them.
struct SeenRun {
  std::string base_tree;
  std::optional<std::string> tree;
  std::optional<Digest> diff_sha256;
  std::vector<std::string> checks;  // the checks' names, in the order asked
  bool reuse = false;
  std::map<std::string, std::string> files;  // path -> content of the tree under test
};

// A Runner that evaluates nothing: it reads the tree under test and answers every check with
// "failed" when a file there says BAD, "passed" otherwise. A check with a report format also
// reports one test per file under src/ (id: the path), failing when that file says BAD.
// Thread-safe (the merge queue's workers share it when `concurrent` is set).
class FakeRunner final : public Runner {
 public:
  explicit FakeRunner(bool concurrent = false) : concurrent_(concurrent) {}

  // From this request on (0-based, in arrival order) the runner cannot run: a Refusal, as a
  // LocalRunner whose sandbox went away answers.
  std::optional<size_t> unavailable_from;
  // How long a request takes, to make runs overlap or finish out of order.
  std::function<std::chrono::milliseconds(const SeenRun&)> latency;
  // The environment every result says its checks ran in (none: the host's /usr).
  std::optional<Digest> environment;

  Checked<RunOutcome> run(GitRepo& repo, const RunRequest& request) override {
    SeenRun seen;
    seen.base_tree = request.base_tree.hex();
    if (request.tree) seen.tree = request.tree->hex();
    if (request.diff) seen.diff_sha256 = request.diff->digest();
    for (const CheckSpec& c : request.checks) seen.checks.push_back(c.name);
    seen.reuse = request.reuse;
    const ObjectId& under_test = request.tree ? *request.tree : request.base_tree;
    if (auto files = read_tree(repo, under_test); files) {
      seen.files = std::move(*files);
    } else {
      return std::unexpected(files.error());
    }

    size_t number = 0;
    {
      std::lock_guard lock(mu_);
      number = seen_.size();
      seen_.push_back(seen);
      ++in_flight_;
      max_in_flight_ = std::max(max_in_flight_, in_flight_);
    }
    if (latency) std::this_thread::sleep_for(latency(seen));
    {
      std::lock_guard lock(mu_);
      --in_flight_;
    }
    if (unavailable_from && number >= *unavailable_from) {
      return refuse(RefusalCode::sandbox_unavailable, "", "fake runner: the sandbox is gone");
    }
    RunOutcome out = answer(request, seen);
    out.result.environment = environment;
    return out;
  }

  bool concurrent() const override { return concurrent_; }

  std::vector<SeenRun> seen() const {
    std::lock_guard lock(mu_);
    return seen_;
  }
  // The most runs the fake held at once.
  int max_in_flight() const {
    std::lock_guard lock(mu_);
    return max_in_flight_;
  }

 private:
  static Checked<std::map<std::string, std::string>> read_tree(GitRepo& repo, const ObjectId& id) {
    auto paths = repo.files_named(id, [](std::string_view) { return true; });
    if (!paths) return std::unexpected(paths.error());
    auto tree = repo.tree(id);
    if (!tree) return std::unexpected(tree.error());
    std::map<std::string, std::string> files;
    for (const std::string& path : *paths) {
      auto file = tree->read(path);
      if (!file) return std::unexpected(file.error());
      if (*file) files[path] = (*file)->content;
    }
    return files;
  }

  static bool says_bad(const std::string& content) { return content.find(kBad) != std::string::npos; }

  static RunOutcome answer(const RunRequest& request, const SeenRun& seen) {
    const bool bad = std::any_of(seen.files.begin(), seen.files.end(), [](const auto& f) { return says_bad(f.second); });
    const std::string output = bad ? "a file says BAD\n" : "ok\n";
    RunOutcome out;
    RunResult& r = out.result;
    r.tree = request.tree ? request.tree->hex() : request.base_tree.hex();
    r.base_tree = request.base_tree.hex();
    if (request.diff) r.diff_sha256 = request.diff->digest();
    r.profile = "fake";
    r.preflight.ok = true;
    for (const CheckSpec& spec : request.checks) {
      CheckResult c;
      c.name = spec.name;
      c.argv = spec.argv;
      c.spec_sha256 = spec.digest();  // what lets an accepted run stand as the next step's base run
      c.verdict = bad ? kFailed : kPassed;
      CheckRun run;
      run.exit_code = bad ? 1 : 0;
      run.outcome = c.verdict;
      run.out.blob = sha256(output);
      if (spec.report_format != "none") {
        run.report = "parsed";
        for (const auto& [path, content] : seen.files) {
          if (path.starts_with("src/")) run.tests.push_back({path, says_bad(content) ? "failed" : "passed"});
        }
        c.tests = run.tests;
      }
      c.runs.push_back(std::move(run));
      r.checks.push_back(std::move(c));
    }
    out.bodies[sha256(output)] = output;
    return out;
  }

  const bool concurrent_;
  mutable std::mutex mu_;
  std::vector<SeenRun> seen_;  // guarded by mu_
  int in_flight_ = 0, max_in_flight_ = 0;  // guarded by mu_
};

// One file the blueprint writes: a `modify` step of the generated plan.
struct Change {
  std::string path;
  std::string content;
  std::vector<std::string> after = {};   // paths whose steps must be committed first
  std::vector<std::string> drafts = {};  // proposed first, one per attempt
};

struct BlueprintShape {
  int64_t max_retries = 3;
  int64_t max_replans = 0;
  std::optional<int64_t> merge_queue_depth = std::nullopt;
  bool reports_tests = false;  // the check reports tests (TAP): the loop then tests each step's base
};

inline constexpr const char* kSeedReadme = "files built in-process\n";

// A blueprint of `changes` in `dir` (a seed holding README.md, and policy.json with the one
// check, `tests`), loaded as `warden build` loads it.
inline kernel::BlueprintSpec write_blueprint(const fs::path& dir, const std::vector<Change>& changes,
                                             const BlueprintShape& shape = {}) {
  nlohmann::json list = nlohmann::json::array();
  for (const Change& c : changes) {
    nlohmann::json entry = {{"path", c.path}, {"content", c.content}};
    if (!c.after.empty()) entry["after"] = c.after;
    if (!c.drafts.empty()) entry["drafts"] = c.drafts;
    list.push_back(entry);
  }
  nlohmann::json constraints = {{"allowed_paths", {"src/**"}},
                                {"max_retries", shape.max_retries},
                                {"max_replans", shape.max_replans},
                                {"step_timeout_ms", 60000}};
  if (shape.merge_queue_depth) constraints["merge_queue_depth"] = *shape.merge_queue_depth;
  nlohmann::json check = {{"name", "tests"}, {"argv", {"sh", "-c", "! grep -rqs BAD src"}}};
  if (shape.reports_tests) check["report_format"] = "tap";
  nlohmann::json policy = {{"format", "warden.policy/v1"},
                           {"name", "inprocess"},
                           {"language", "other"},
                           {"description", "one check: no file under src/ says BAD"},
                           {"sandbox_profile", "default"},
                           {"checks", {check}},
                           {"required_checks", {"tests"}},
                           {"allow_paths", {"**"}},
                           {"protected_paths", {".warden/**"}},
                           {"invariants", nlohmann::json::object()}};
  nlohmann::json blueprint = {{"format", "warden.blueprint/v1"},
                              {"name", "inprocess"},
                              {"language", "other"},
                              {"repository", {{"seed", "seed"}, {"base", "HEAD"}}},
                              {"goals", {"files built by the build loop in-process"}},
                              {"policy", (dir / "policy.json").string()},
                              {"changes", list},
                              {"constraints", constraints}};
  fs::create_directories(dir / "seed");
  write_file(dir / "seed" / "README.md", kSeedReadme);
  write_file(dir / "policy.json", policy.dump(2));
  write_file(dir / "blueprint.json", blueprint.dump(2));
  auto loaded = kernel::BlueprintSpec::load((dir / "blueprint.json").string());
  if (!loaded) throw std::runtime_error("the test's blueprint does not load: " + loaded.error().message);
  return std::move(*loaded);
}

// Where one build works: a repository seeded from the blueprint and a ledger, both new.
struct BuildPlace {
  fs::path repo, ledger;
};

// One kernel::run_build as `warden build` makes it, the sandbox replaced by `runner`: a logical
// clock and sequential ids (so two builds can be compared byte for byte), `signer` signing
// the ledger, events to `on_event` when given.
inline Result<kernel::BuildSummary> build(const kernel::BlueprintSpec& blueprint, const fs::path& blueprint_dir,
                                          const BuildPlace& place, const NoteSigner& signer, Runner& runner,
                                          executor::Proposer& proposer, int jobs = 1,
                                          std::function<void(const kernel::RunEvent&)> on_event = {}) {
  LogicalClock clock(1'700'000'000'000);
  SequentialIdSource ids;
  kernel::KernelSession session(clock, ids, signer);
  session.runner = &runner;
  session.host_independent = true;
  session.on_event = std::move(on_event);
  kernel::BuildOptions options;
  options.repo_dir = place.repo;
  options.ledger_dir = place.ledger;
  options.blueprint_dir = blueprint_dir;
  options.jobs = jobs;
  return kernel::run_build(blueprint, options, session, proposer);
}

// Every record of the ledger at `dir`, in order. Opened read-only after the build closed it
// (LMDB allows one environment per directory per process).
inline std::vector<Record> ledger_records(const fs::path& dir) {
  SystemClock clock;
  auto ledger = Ledger::open(dir, Ledger::Mode::read_only, clock);
  if (!ledger) throw std::runtime_error("open ledger: " + ledger.error().message);
  auto snap = ledger->snapshot();
  if (!snap) throw std::runtime_error("snapshot: " + snap.error().message);
  std::vector<Record> out;
  for (uint64_t seq = 0; seq < snap->size(); ++seq) {
    auto r = snap->record(seq);
    if (!r) throw std::runtime_error("record: " + r.error().message);
    out.push_back(std::move(*r));
  }
  return out;
}

// The records of type T (a record of kernel/record/records.h), read back as that type, with
// their seqs.
template <typename T>
struct Typed {
  uint64_t seq = 0;
  T record;
};
template <typename T>
std::vector<Typed<T>> records_of(const std::vector<Record>& records) {
  std::vector<Typed<T>> out;
  for (const Record& r : records) {
    if (r.kind != T::kind) continue;
    auto parsed = T::from_json(nlohmann::json::parse(r.payload));
    if (!parsed) throw std::runtime_error(std::string(T::kind) + " record " + std::to_string(r.seq) + ": " + parsed.error().message);
    out.push_back({r.seq, std::move(*parsed)});
  }
  return out;
}

// `git -C repo args...`, its output without the trailing newline; fails the test when git does.
inline std::string git(const fs::path& repo, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {find_program("git"), "-C", repo.string()};
  argv.insert(argv.end(), args.begin(), args.end());
  ProcessResult r = run(argv);
  EXPECT_TRUE(r.exited_with(0)) << "git " << args.front() << ": " << r.err;
  return trim_newline(r.out);
}

// The commits `branch` holds past the repository's first commit (the seed), oldest first.
inline std::vector<std::string> branch_commits(const fs::path& repo, const std::string& branch) {
  std::vector<std::string> out;
  const std::string seed = git(repo, {"rev-list", "--max-parents=0", branch});
  std::string list = git(repo, {"rev-list", "--reverse", "--first-parent", seed + ".." + branch});
  for (size_t at = 0; at < list.size();) {
    size_t end = list.find('\n', at);
    if (end == std::string::npos) end = list.size();
    out.push_back(list.substr(at, end - at));
    at = end + 1;
  }
  return out;
}

}  // namespace warden::test
