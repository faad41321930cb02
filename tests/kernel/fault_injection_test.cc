// Ledger and branch integrity under faults, end to end with the real binary, real git, the
// real sandbox and real file systems: a calculator build whose ledger sits on a tiny tmpfs
// that fills at a different record in every trial; builds killed with SIGKILL at 100+
// seeded random moments; a branch moved behind Warden's back; four builds and two
// `ledger append` loops writing one ledger at once. After every fault the same things must
// hold: the ledger verifies, `warden replay --repo` agrees with the branch, the branch is at
// the last commit the ledger confirmed (or the base), the run is not "running", and
// `warden run recover` records the end of a run that could not.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mount.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/file.h"
#include "tests/kernel/build_fixture.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"
#include "tests/support/warden_cli.h"

namespace warden::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace std::chrono_literals;

// Under the sanitizers every build is several times slower: the full sweeps run in the main
// build's tests, and the sanitized run takes a sample of each (still every kind of fault).
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

fs::path calculator() { return fs::path(WARDEN_SOURCE_DIR) / "examples" / "calculator" / "blueprint.json"; }
constexpr const char* kBranch = "refs/heads/warden/calculator";

// A tmpfs of a given size mounted for the test's life (root only).
class Tmpfs {
 public:
  Tmpfs(fs::path dir, size_t bytes) : dir_(std::move(dir)) {
    fs::create_directories(dir_);
    mounted_ = ::mount("tmpfs", dir_.c_str(), "tmpfs", 0, ("size=" + std::to_string(bytes)).c_str()) == 0;
  }
  Tmpfs(const Tmpfs&) = delete;
  Tmpfs& operator=(const Tmpfs&) = delete;
  ~Tmpfs() {
    if (mounted_) ::umount2(dir_.c_str(), MNT_DETACH);
  }
  bool mounted() const { return mounted_; }
  bool resize(size_t bytes) {
    return ::mount("tmpfs", dir_.c_str(), "tmpfs", MS_REMOUNT, ("size=" + std::to_string(bytes)).c_str()) == 0;
  }

 private:
  fs::path dir_;
  bool mounted_ = false;
};

// Whether a build got as far as making its repository (a build killed while seeding may
// leave only the directory).
bool is_repo(const fs::path& repo) {
  return fs::exists(repo) && run({find_program("git"), "-C", repo.string(), "rev-parse", "--git-dir"}).exited_with(0);
}

// The branch's commit; "" when the repository or the branch does not exist.
std::string branch_tip(const fs::path& repo) {
  if (!is_repo(repo)) return "";
  auto r = run({find_program("git"), "-C", repo.string(), "rev-parse", "-q", "--verify", kBranch});
  if (!r.exited_with(0)) return "";
  std::string out = r.out;
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

std::vector<std::string> build_args(const fs::path& out, const fs::path& ledger, const std::string& run_id) {
  return {warden_binary(), "build", calculator().string(), "--out", out.string(), "--ledger", ledger.string(), "--run-id", run_id};
}

// Everything that must hold after a build ended by a fault, whatever the moment.
void expect_consistent(const fs::path& out, const fs::path& ledger, const std::string& run_id, const std::string& trial) {
  SCOPED_TRACE(trial);
  const fs::path repo = out / "repo";
  if (!fs::exists(ledger / "data.mdb")) {
    EXPECT_EQ(branch_tip(repo), "") << "the branch moved although no ledger was ever written";
    return;
  }
  auto verified = warden({"ledger", "verify", ledger.string()});
  EXPECT_TRUE(verified.exited_with(0)) << describe(verified);
  if (is_repo(repo)) {
    auto replayed = warden({"replay", ledger.string(), "--repo", repo.string()});
    EXPECT_TRUE(replayed.exited_with(0)) << describe(replayed);
  }
  auto status = warden({"run", "status", run_id, "--ledger", ledger.string(), "--json"});
  if (status.exited_with(4)) {  // the run recorded nothing at all
    EXPECT_EQ(branch_tip(repo), "");
    return;
  }
  ASSERT_TRUE(status.exited_with(0)) << describe(status);
  json s = stdout_json(status);
  EXPECT_NE(s["status"], "running") << s.dump();
  EXPECT_FALSE(s["live"].get<bool>());
  const std::string confirmed = s["last_commit"].get<std::string>();
  const std::string tip = branch_tip(repo);
  // A run killed between moving the branch and confirming the move leaves it at the commit
  // its durable intent names (replay accepts that with a warning; recover moves it back).
  std::string intended;
  TempDir scratch;  // the ledger's own file system may be full
  auto exported = warden({"ledger", "export", ledger.string(), (scratch / "export").string()});
  ASSERT_TRUE(exported.exited_with(0)) << describe(exported);
  std::vector<json> records;
  for (const auto& line : complete_lines(read_file(scratch / "export" / "records.jsonl"))) records.push_back(json::parse(line));
  for (const json& r : records) {
    if (r["kind"] == "commit_intent" && r["payload"]["run_id"] == run_id) intended = r["payload"]["commit"];
    if (r["kind"] == "commit" && r["payload"]["run_id"] == run_id) intended.clear();
  }
  if (!intended.empty() && tip == intended) {
    EXPECT_TRUE(s["last_commit"] != intended);
    return;
  }
  if (confirmed.empty()) {
    // Nothing confirmed: the branch was never made, or is at the base (moved back there).
    if (!tip.empty()) {
      EXPECT_EQ(tip, git_in(repo, {"rev-parse", "main"}).substr(0, 40)) << "the branch holds a commit the ledger never confirmed";
    }
  } else {
    EXPECT_EQ(tip, confirmed) << "the branch is not at the last commit the ledger confirmed";
  }
}

// Records the end of an interrupted run and checks it is then terminal and still consistent.
void recover_and_check(const fs::path& out, const fs::path& ledger, const std::string& run_id, const std::string& trial) {
  SCOPED_TRACE(trial);
  if (!fs::exists(ledger / "data.mdb")) return;
  std::vector<std::string> args = {"run", "recover", "--ledger", ledger.string(), "--json"};
  if (is_repo(out / "repo")) args.insert(args.end(), {"--repo", (out / "repo").string()});
  auto recovered = warden(args);
  ASSERT_TRUE(recovered.exited_with(0)) << describe(recovered);
  auto status = warden({"run", "status", run_id, "--ledger", ledger.string(), "--json"});
  if (status.exited_with(4)) return;
  ASSERT_TRUE(status.exited_with(0)) << describe(status);
  json s = stdout_json(status);
  EXPECT_FALSE(s.contains("recorded_status")) << "recover left the run without a recorded end: " << s.dump();
  EXPECT_FALSE(fs::exists(ledger / "runs" / (run_id + ".pid"))) << "recover left the run's marker";
  const std::string tip = branch_tip(out / "repo");
  if (!tip.empty()) {
    EXPECT_TRUE(tip == s["last_commit"] || tip == git_in(out / "repo", {"rev-parse", "main"}).substr(0, 40))
        << "after recover the branch is at " << tip << ", neither the last confirmed commit nor the base";
  }
  expect_consistent(out, ledger, run_id, trial + " after recover");
}

// SIGKILLs every process whose command line names a scratch directory of process `owner`
// (ScratchDir names carry their owner: "-p<pid>.<start time>-").
void kill_sandboxes_of(pid_t owner) {
  const std::string mark = "-p" + std::to_string(owner) + ".";
  std::error_code ec;
  for (auto it = fs::directory_iterator("/proc", ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    // A process may end while it is read: then it is nothing to kill.
    auto cmdline = warden::read_file(it->path() / "cmdline", 1 << 20);
    if (cmdline && cmdline->find(mark) != std::string::npos) ::kill(std::stoi(name), SIGKILL);
  }
}

bool clean_exit(const ProcessResult& r) { return r.term_signal == 0 && r.exit_code != 70; }

TEST(FaultInjection, ALedgerOnAFullDiskNeverLeavesTheBranchAheadOfIt) {
  if (::geteuid() != 0) GTEST_SKIP() << "mounting a tmpfs needs root";
  TempDir dir;
  // How big the ledger of a whole build gets: the trials stop it at every size below that.
  size_t full_size = 0;
  {
    Tmpfs roomy(dir / "roomy", 8 << 20);
    ASSERT_TRUE(roomy.mounted());
    Child c = Child::spawn(build_args(dir / "out-roomy", dir / "roomy" / "ledger", "full"));
    auto r = c.wait();
    ASSERT_TRUE(r.exited_with(0)) << describe(r);
    for (const auto& e : fs::recursive_directory_iterator(dir / "roomy")) {
      if (e.is_regular_file()) full_size += (e.file_size() + 4095) / 4096 * 4096;
    }
  }
  // One trial per 8 KiB of free space from the first page up to the whole ledger (LMDB grows
  // the file a page or two per transaction, so consecutive trials fail consecutive writes),
  // three at a time.
  std::vector<size_t> sizes;
  const size_t stride = kSanitized ? 32768 : 8192;
  for (size_t free = 8192; free < full_size + 8192; free += stride) sizes.push_back(free);
  ASSERT_GE(sizes.size(), kSanitized ? 5u : 20u) << "the calculator ledger is smaller than expected: " << full_size;
  size_t faults = 0;
  for (size_t first = 0; first < sizes.size(); first += 3) {
    struct Trial {
      std::unique_ptr<Tmpfs> fs;
      fs::path out, ledger;
      std::string run_id;
      std::optional<Child> child;
    };
    std::vector<Trial> trials;
    for (size_t i = first; i < std::min(first + 3, sizes.size()); ++i) {
      Trial t;
      t.fs = std::make_unique<Tmpfs>(dir / ("disk-" + std::to_string(i)), sizes[i]);
      ASSERT_TRUE(t.fs->mounted());
      t.out = dir / ("out-" + std::to_string(i));
      t.ledger = dir / ("disk-" + std::to_string(i)) / "ledger";
      t.run_id = "disk-" + std::to_string(i);
      t.child.emplace(Child::spawn(build_args(t.out, t.ledger, t.run_id)));
      trials.push_back(std::move(t));
    }
    for (size_t k = 0; k < trials.size(); ++k) {
      Trial& t = trials[k];
      const std::string trial = "free " + std::to_string(sizes[first + k]) + " bytes";
      auto r = t.child->wait();
      EXPECT_TRUE(clean_exit(r)) << trial << ": " << describe(r);
      if (!r.exited_with(0)) ++faults;
      expect_consistent(t.out, t.ledger, t.run_id, trial);
      ASSERT_TRUE(t.fs->resize(8 << 20));  // room again: the next process records what the run could not
      recover_and_check(t.out, t.ledger, t.run_id, trial);
    }
  }
  EXPECT_GE(faults, sizes.size() - 2) << "most trials should have run out of space";
}

TEST(FaultInjection, SigkillAtAHundredRandomMomentsLeavesAConsistentLedgerAndBranch) {
  TempDir dir;
  // The length of a whole build on this machine, so the moments spread over all of it.
  const auto started = std::chrono::steady_clock::now();
  {
    Child c = Child::spawn(build_args(dir / "out-whole", dir / "out-whole" / "ledger", "whole"));
    auto r = c.wait();
    ASSERT_TRUE(r.exited_with(0)) << describe(r);
  }
  const auto whole = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started);
  std::mt19937 random(20261124);  // fixed: the same moments every run
  std::uniform_int_distribution<int64_t> moment(0, whole.count() * 11 / 10);
  std::vector<pid_t> killed;
  constexpr int kTrials = kSanitized ? 24 : 104, kParallel = 4;
  for (int first = 0; first < kTrials; first += kParallel) {
    struct Trial {
      fs::path out;
      std::string run_id;
      std::chrono::milliseconds at;
      std::optional<Child> child;
    };
    std::vector<int64_t> moments;
    for (int i = 0; i < kParallel; ++i) moments.push_back(moment(random));
    std::sort(moments.begin(), moments.end());  // killed in the order they are started
    std::vector<Trial> trials;
    trials.reserve(kParallel);
    for (int i = first; i < first + kParallel; ++i) {
      Trial& t = trials.emplace_back(Trial{dir / ("out-" + std::to_string(i)), "kill-" + std::to_string(i),
                                           std::chrono::milliseconds(moments[i - first]), {}});
      t.child.emplace(Child::spawn(build_args(t.out, t.out / "ledger", t.run_id)));
    }
    const auto round = std::chrono::steady_clock::now();
    for (Trial& t : trials) {
      std::this_thread::sleep_until(round + t.at);
      killed.push_back(t.child->pid());
      t.child->kill(SIGKILL);
    }
    for (Trial& t : trials) {
      const std::string trial = t.run_id + " killed at " + std::to_string(t.at.count()) + " ms";
      auto r = t.child->wait();
      // A sandbox can outlive its killed build (bwrap drops the parent-death signal with its
      // capabilities); it would hold the sandbox uid's process budget for every later test.
      // Known and open (docs/blueprints-and-plans.md, dead runs): removed here, not asserted.
      kill_sandboxes_of(t.child->pid());
      EXPECT_TRUE(r.term_signal == SIGKILL || r.exited_with(0)) << trial << ": " << describe(r);
      expect_consistent(t.out, t.out / "ledger", t.run_id, trial);
      recover_and_check(t.out, t.out / "ledger", t.run_id, trial);
    }
  }
  // The killed builds' scratch directories go with the next sandbox any process makes.
  auto sandbox = warden({"sandbox", "exec", "--", "/bin/true"});
  ASSERT_TRUE(sandbox.exited_with(0)) << describe(sandbox);
  for (const auto& e : fs::directory_iterator("/dev/shm")) {
    const std::string name = e.path().filename().string();
    for (pid_t pid : killed) {
      EXPECT_EQ(name.find("-p" + std::to_string(pid) + "."), std::string::npos) << "left behind: " << name;
    }
  }
}

TEST(FaultInjection, ABranchMovedBehindWardensBackFailsReplay) {
  TempDir dir;
  auto r = warden({"build", calculator().string(), "--out", (dir / "out").string()});
  ASSERT_TRUE(r.exited_with(0)) << describe(r);
  const fs::path repo = dir / "out" / "repo", ledger = dir / "out" / "ledger";
  auto clean = warden({"replay", ledger.string(), "--repo", repo.string(), "--json"});
  ASSERT_TRUE(clean.exited_with(0)) << describe(clean);
  EXPECT_EQ(stdout_json(clean)["branches"], 1);

  // What an executor's lingering child did: the branch moved to a commit no decision accepted.
  const std::string tip = branch_tip(repo);
  std::string forged = git_in(repo, {"commit-tree", tip + "^{tree}", "-p", tip, "-m", "not decided"});
  while (!forged.empty() && forged.back() == '\n') forged.pop_back();
  git_in(repo, {"update-ref", kBranch, forged});
  auto moved = warden({"replay", ledger.string(), "--repo", repo.string()});
  EXPECT_TRUE(moved.exited_with(1)) << describe(moved);
  EXPECT_NE(moved.out.find("moved without a decision"), std::string::npos) << describe(moved);
  EXPECT_NE(moved.out.find(forged), std::string::npos) << describe(moved);

  // Back, or behind: an earlier accepted commit is not the last one either.
  git_in(repo, {"update-ref", kBranch, tip + "~2"});
  auto behind = warden({"replay", ledger.string(), "--repo", repo.string()});
  EXPECT_TRUE(behind.exited_with(1)) << describe(behind);
  git_in(repo, {"update-ref", "-d", kBranch});
  auto gone = warden({"replay", ledger.string(), "--repo", repo.string()});
  EXPECT_TRUE(gone.exited_with(1)) << describe(gone);
  EXPECT_NE(gone.out.find("does not exist"), std::string::npos) << describe(gone);
  git_in(repo, {"update-ref", kBranch, tip});
  auto again = warden({"replay", ledger.string(), "--repo", repo.string()});
  EXPECT_TRUE(again.exited_with(0)) << describe(again);
}

// An attacker's (or a crashed writer's) lock file on the branch's ref: the run cannot move
// the branch. It must end failed with a reason that names the lock, leave the branch where
// it was, record its intent but no commit, and the ledger must still verify and replay: the
// lock may cost the run, never a record or a lie. Removed, the next run completes.
TEST(FaultInjection, AStaleLockOnTheBranchFailsTheRunAndLeavesNothingReplayWouldDoubt) {
  TempDir dir;
  auto first = warden({"build", calculator().string(), "--out", (dir / "a").string()});
  ASSERT_TRUE(first.exited_with(0)) << describe(first);
  const fs::path repo = dir / "a" / "repo", ledger = dir / "b" / "ledger";
  git_in(repo, {"update-ref", "-d", kBranch});  // the branch as new: the run will create it
  fs::create_directories(repo / ".git" / "refs" / "heads" / "warden");
  const fs::path lock = repo / ".git" / "refs" / "heads" / "warden" / "calculator.lock";
  { std::ofstream(lock) << ""; }

  auto locked = warden({"build", calculator().string(), "--repo", repo.string(), "--ledger", ledger.string(),
                        "--run-id", "locked", "--json"});
  EXPECT_TRUE(locked.exited_with(1)) << describe(locked);
  EXPECT_NE(locked.out.find("stayed locked"), std::string::npos) << describe(locked);
  EXPECT_EQ(branch_tip(repo), "") << "the branch was created past another writer's lock";
  EXPECT_TRUE(fs::exists(lock)) << "Warden removed a lock that is not its own";
  bool intent = false, committed = false;
  for (const json& r : ledger_records(ledger)) {
    if (r["payload"].is_object() && r["payload"].value("run_id", "") == "locked") {
      intent = intent || r["kind"] == "commit_intent";
      committed = committed || r["kind"] == "commit";
    }
  }
  EXPECT_TRUE(intent) << "the attempted move left no intent";
  EXPECT_FALSE(committed) << "a commit record for a branch that never moved";
  auto status = warden({"run", "status", "locked", "--ledger", ledger.string(), "--json"});
  ASSERT_TRUE(status.exited_with(0)) << describe(status);
  EXPECT_EQ(stdout_json(status)["status"], "failed") << status.out;
  auto verified = warden({"ledger", "verify", ledger.string()});
  EXPECT_TRUE(verified.exited_with(0)) << describe(verified);
  auto replayed = warden({"replay", ledger.string(), "--repo", repo.string()});
  EXPECT_TRUE(replayed.exited_with(0)) << describe(replayed);

  fs::remove(lock);
  auto again = warden({"build", calculator().string(), "--repo", repo.string(), "--ledger", ledger.string(),
                       "--run-id", "unlocked"});
  EXPECT_TRUE(again.exited_with(0)) << describe(again);
  EXPECT_NE(branch_tip(repo), "");
  auto replayed_after = warden({"replay", ledger.string(), "--repo", repo.string()});
  EXPECT_TRUE(replayed_after.exited_with(0)) << describe(replayed_after);
}

TEST(FaultInjection, FourBuildsAndTwoAppendLoopsShareOneLedger) {
  TempDir dir;
  const fs::path ledger = dir / "ledger", key = dir / "signer.key";
  auto made = warden({"key", "generate", "test.local/shared", "--signer-out", key.string(), "--verifier-out",
                      (dir / "verifier.key").string()});
  ASSERT_TRUE(made.exited_with(0)) << describe(made);
  auto init = warden({"ledger", "init", ledger.string(), "--signer-key", key.string()});
  ASSERT_TRUE(init.exited_with(0)) << describe(init);

  std::vector<Child> builds;
  for (int i = 0; i < 4; ++i) {
    auto args = build_args(dir / ("out-" + std::to_string(i)), ledger, "shared-" + std::to_string(i));
    args.insert(args.end(), {"--key", key.string()});
    builds.push_back(Child::spawn(args));
  }
  constexpr int kAppends = 40;
  std::vector<std::thread> loops;
  std::atomic<int> append_failures{0};
  for (int loop = 0; loop < 2; ++loop) {
    loops.emplace_back([&, loop] {
      for (int i = 0; i < kAppends; ++i) {
        SpawnOptions o;
        o.stdin_data = json{{"loop", loop}, {"i", i}}.dump();
        auto r = warden({"ledger", "append", ledger.string(), "--kind", "note", "--payload", "-"}, o);
        if (!r.exited_with(0)) ++append_failures;
      }
    });
  }
  for (auto& t : loops) t.join();
  EXPECT_EQ(append_failures.load(), 0);
  for (int i = 0; i < 4; ++i) {
    auto r = builds[i].wait();
    EXPECT_TRUE(r.exited_with(0)) << "build " << i << ": " << describe(r);
    auto status = warden({"run", "status", "shared-" + std::to_string(i), "--ledger", ledger.string(), "--json"});
    ASSERT_TRUE(status.exited_with(0)) << describe(status);
    json s = stdout_json(status);
    EXPECT_EQ(s["status"], "completed") << s.dump();
    EXPECT_EQ(s["steps_completed"], 5);
    EXPECT_EQ(s["last_commit"], branch_tip(dir / ("out-" + std::to_string(i)) / "repo"));
  }
  // Each build signed a checkpoint at its end; appends that came after the last of them are
  // an unsigned tail until the ledger's owner signs.
  auto signed_cp = warden({"ledger", "checkpoint", ledger.string(), "--signer-key", key.string()});
  ASSERT_TRUE(signed_cp.exited_with(0)) << describe(signed_cp);
  auto verified = warden({"ledger", "verify", ledger.string(), "--key", (dir / "verifier.key").string()});
  EXPECT_TRUE(verified.exited_with(0)) << describe(verified);
  auto replayed = warden({"replay", ledger.string(), "--key", (dir / "verifier.key").string(), "--json"});
  ASSERT_TRUE(replayed.exited_with(0)) << describe(replayed);
  json rep = stdout_json(replayed);
  EXPECT_EQ(rep["commits"], 20);
  auto records = ledger_records(ledger);
  EXPECT_EQ(payloads(records, "note").size(), size_t{2 * kAppends});
}

// Appends a record with `warden ledger append`; its seq.
uint64_t append_record(const fs::path& ledger, const std::string& kind, const json& payload) {
  SpawnOptions o;
  o.stdin_data = payload.dump();
  auto r = warden({"ledger", "append", ledger.string(), "--kind", kind, "--payload", "-", "--json"}, o);
  EXPECT_TRUE(r.exited_with(0)) << describe(r);
  return r.exited_with(0) ? stdout_json(r)["seq"].get<uint64_t>() : 0;
}

// A completed calculator build to attack or damage: its repository, ledger and records.
struct BuiltCalculator {
  TempDir dir;
  fs::path repo, ledger;
  std::vector<json> records;
  std::string tip;

  BuiltCalculator() {
    auto r = warden({"build", calculator().string(), "--out", (dir / "out").string()});
    EXPECT_TRUE(r.exited_with(0)) << describe(r);
    repo = dir / "out" / "repo";
    ledger = dir / "out" / "ledger";
    records = ledger_records(ledger);
    tip = branch_tip(repo);
  }
  // A commit on top of the branch that no decision accepted.
  std::string new_commit(const std::string& message) {
    std::string id = git_in(repo, {"commit-tree", tip + "^{tree}", "-p", tip, "-m", message});
    while (!id.empty() && id.back() == '\n') id.pop_back();
    return id;
  }
};

// A run that died between moving its branch and confirming the move: recover moves the
// branch back to the intent's parent and records the run interrupted.
TEST(FaultInjection, RecoverMovesABranchLeftAtAnUnconfirmedCommitBack) {
  BuiltCalculator b;
  auto commits = payloads(b.records, "commit");
  ASSERT_EQ(commits.size(), 5u);
  // A second run, "dead", whose last records are an accepted decision and the intent of a
  // commit on top of the branch.
  const std::string next = b.new_commit("intended");
  json decision = payloads(b.records, "decision").back();
  ASSERT_TRUE(decision["verdict"]["accepted"].get<bool>());
  decision["run_id"] = "dead";
  append_record(b.ledger, "run_status", {{"run_id", "dead"}, {"status", "running"}});
  const uint64_t decision_seq = append_record(b.ledger, "decision", decision);
  json intent = commits.back();
  intent["run_id"] = "dead";
  intent["parent"] = b.tip;
  intent["commit"] = next;
  intent["decision_seq"] = decision_seq;
  append_record(b.ledger, "commit_intent", intent);
  git_in(b.repo, {"update-ref", kBranch, next});
  auto status = warden({"run", "status", "dead", "--ledger", b.ledger.string(), "--json"});
  ASSERT_TRUE(status.exited_with(0)) << describe(status);
  EXPECT_EQ(stdout_json(status)["status"], "interrupted");

  auto recovered = warden({"run", "recover", "dead", "--ledger", b.ledger.string(), "--repo", b.repo.string(), "--json"});
  ASSERT_TRUE(recovered.exited_with(0)) << describe(recovered);
  json run = stdout_json(recovered)["runs"][0];
  EXPECT_TRUE(run["recorded"].get<bool>()) << run.dump();
  EXPECT_EQ(run["unconfirmed_commit"], next);
  EXPECT_EQ(branch_tip(b.repo), b.tip) << "the branch was not moved back: " << run.dump();
  status = warden({"run", "status", "dead", "--ledger", b.ledger.string(), "--json"});
  json s = stdout_json(status);
  EXPECT_EQ(s["status"], "interrupted");
  EXPECT_FALSE(s.contains("recorded_status")) << "the end is recorded now: " << s.dump();
  auto again = warden({"run", "recover", "dead", "--ledger", b.ledger.string(), "--json"});
  ASSERT_TRUE(again.exited_with(0)) << describe(again);
  EXPECT_FALSE(stdout_json(again)["runs"][0]["recorded"].get<bool>()) << "recorded twice";
}

// An attacker who can append to the ledger writes an intent of their own: recovery must not
// move the branch for it — not to a "parent" of their choosing, not for a decision that
// refused, not for another run's decision.
TEST(FaultInjection, RecoverDoesNotMoveABranchForAnIntentThatDoesNotStand) {
  BuiltCalculator b;
  json commit = payloads(b.records, "commit").back();
  const std::string evil_parent = b.new_commit("where the attacker wants the branch");
  // The decisions the forged intents lean on: the real run's (another run), and a refusal.
  uint64_t refused_seq = 0, accepted_seq = 0;
  for (const json& r : b.records) {
    if (r["kind"] != "decision") continue;
    (r["payload"]["verdict"]["accepted"].get<bool>() ? accepted_seq : refused_seq) = r["seq"].get<uint64_t>();
  }
  ASSERT_NE(refused_seq, 0u);
  struct Forgery {
    std::string run, why;
    uint64_t decision_seq;
    std::string step;
  };
  const std::vector<Forgery> forgeries = {
      {"forged-other-run", "another run's decision", accepted_seq, commit["step_id"]},
      {"forged-refused", "a refusal", refused_seq, "s3"},
      {"forged-no-record", "a seq past the end", 1u << 30, commit["step_id"]},
  };
  for (const Forgery& f : forgeries) {
    SCOPED_TRACE(f.why);
    append_record(b.ledger, "run_status", {{"run_id", f.run}, {"status", "running"}});
    json intent = commit;
    intent["run_id"] = f.run;
    intent["step_id"] = f.step;
    intent["attempt"] = 1;
    intent["parent"] = evil_parent;
    intent["commit"] = b.tip;  // the branch is "at the intent's commit" already
    intent["decision_seq"] = f.decision_seq;
    append_record(b.ledger, "commit_intent", intent);
    auto recovered = warden({"run", "recover", f.run, "--ledger", b.ledger.string(), "--repo", b.repo.string(), "--json"});
    ASSERT_TRUE(recovered.exited_with(0)) << describe(recovered);
    json run = stdout_json(recovered)["runs"][0];
    EXPECT_TRUE(run["recorded"].get<bool>()) << run.dump();
    EXPECT_NE(run["branch"].get<std::string>().find("does not stand"), std::string::npos) << run.dump();
    EXPECT_EQ(branch_tip(b.repo), b.tip) << "a forged intent moved the branch";
  }
  // And replay, which recomputes every decision, refuses the forged intents outright.
  auto replayed = warden({"replay", b.ledger.string(), "--repo", b.repo.string()});
  EXPECT_TRUE(replayed.exited_with(1)) << describe(replayed);
}

// An executor that can write the ledger and the repository forges the whole trail of a
// commit: an intent and a commit record for a commit no decision accepted, and the branch
// moved to it. Replay must not agree.
TEST(FaultInjection, AForgedIntentAndCommitRecordDoNotMakeReplayAgree) {
  // As a run of its own, and as the real run going on after its end.
  for (const bool own_run : {true, false}) {
    SCOPED_TRACE(own_run ? "as a run of its own" : "as the build's run");
    BuiltCalculator fresh;  // each forgery on its own clean ledger
    json c = payloads(fresh.records, "commit").back();
    const std::string id = fresh.new_commit("accepted by nobody");
    if (own_run) c["run_id"] = "forged";
    c["parent"] = fresh.tip;
    c["commit"] = id;
    append_record(fresh.ledger, "commit_intent", c);
    append_record(fresh.ledger, "commit", c);
    git_in(fresh.repo, {"update-ref", kBranch, id});
    auto replayed = warden({"replay", fresh.ledger.string(), "--repo", fresh.repo.string()});
    EXPECT_TRUE(replayed.exited_with(1)) << describe(replayed);
  }
}

}  // namespace
}  // namespace warden::test
