// Confined executors end to end: the real `warden build` with a command executor that
// attacks the host (fixtures/confined/attacker.sh) — it tries to read the ledger, the kernel's
// key and Warden's environment, to find them anywhere it can see, to write the repository,
// to move the branch, and leaves a setsid daemon and a loop behind that would move the branch
// and touch files later. Every attack fails, nothing it started outlives its attempt, the
// ledger verifies, the branch holds exactly the accepted commit, and the executor's sandbox
// (profile, digest, network) is recorded with every proposal. A host that cannot confine an
// executor refuses the build before anything is recorded.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

#include "kernel/record/records.h"
#include "runner/model/sandbox_profile.h"
#include "tests/kernel/build_fixture.h"
#include "tests/support/temp_dir.h"

namespace warden::test {
namespace {

using namespace std::chrono_literals;

constexpr const char* kSecret = "WARDEN_TEST_SECRET";
constexpr const char* kAttacks[] = {"read-ledger", "read-key",  "find-ledger",  "write-repo",
                                    "move-branch", "read-env",  "read-env-proc"};

// Processes on the host whose command line contains `marker`.
int processes_with(const std::string& marker) {
  int count = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    std::string cmdline;
    try {  // a process may exit while it is read
      std::ifstream in(entry.path() / "cmdline", std::ios::binary);
      cmdline.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    } catch (const std::exception&) {
      continue;
    }
    if (cmdline.find(marker) != std::string::npos) ++count;
  }
  return count;
}

class ExecutorSandboxTest : public ::testing::Test {
 protected:
  void SetUp() override { ::setenv(kSecret, "hunter2-do-not-leak", 1); }
  void TearDown() override { ::unsetenv(kSecret); }

  std::filesystem::path out() const { return tmp / "out"; }
  std::string marker() const { return "warden-attack-" + tmp.path().filename().string(); }
  std::string attacker() const {
    return "command:sh " + fixture("confined/attacker.sh").string() + " proposer " + fixture("agent.py").string() + " " +
           out().string() + " " + marker();
  }
  ProcessResult build(const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {"build", fixture("reasons/blueprint.json").string(), "--out", out().string(),
                                     "--executor", attacker()};
    args.insert(args.end(), extra.begin(), extra.end());
    return warden(args);
  }

  TempDir tmp;
};

TEST_F(ExecutorSandboxTest, AnAttackingExecutorReachesNothingAndLeavesNothingBehind) {
  auto r = build();
  ASSERT_TRUE(r.exited_with(0)) << describe(r);
  EXPECT_NE(r.out.find("executor sandbox: profile executor"), std::string::npos) << r.out;

  auto records = ledger_records(out() / "ledger");
  auto proposals = payloads(records, "proposal");
  ASSERT_EQ(proposals.size(), 2u);
  // Attempt 1 attacked and said what it found; the kernel recorded that with the attempt.
  const std::string findings = proposals[0].at("error").get<std::string>();
  for (const char* attack : kAttacks) {
    EXPECT_NE(findings.find(std::string(attack) + ": blocked"), std::string::npos) << attack << "\n" << findings;
  }
  EXPECT_EQ(findings.find("SUCCEEDED"), std::string::npos) << findings;
  EXPECT_NE(findings.find("interfaces: lo,\n"), std::string::npos) << findings;
  EXPECT_NE(findings.find("daemon: started"), std::string::npos) << findings;
  // Every proposal names the sandbox its executor ran in.
  const Digest profile = SandboxProfile::load("executor").value().digest();
  for (const auto& p : proposals) {
    EXPECT_EQ(p.at("executor_sandbox"), (json{{"profile", "executor"}, {"profile_sha256", profile.str()}, {"network", false}}));
  }

  // Its daemon and its loop died with its sandbox, before they could act.
  EXPECT_TRUE(wait_until([&] { return processes_with(marker()) == 0; }, 3s)) << processes_with(marker()) << " left";
  std::this_thread::sleep_for(3s);  // the daemon would have moved the branch after 2 s
  for (const char* left : {"daemon-was-here", "loop-was-here", "repo/pwned"}) {
    EXPECT_FALSE(std::filesystem::exists(out() / left)) << left;
  }
  // The ledger and the branch are exactly what the decisions say.
  expect_ledger_verifies(out() / "ledger", out() / "ledger" / "signer.pub");
  records = ledger_records(out() / "ledger");
  expect_branch_holds_only_accepted(out() / "repo", "main", "warden/reasons", records);
  auto commits = commits_since(out() / "repo", "main", "warden/reasons");
  ASSERT_EQ(commits.size(), 1u);
  EXPECT_EQ(payloads(records, "commit").size(), 1u);
  EXPECT_EQ(payloads(records, "commit")[0].at("commit"), commits[0]);
}

// The network is the operator's explicit choice, and it is recorded: the profile's digest
// moves with it, so the record says which sandbox the executor had.
TEST_F(ExecutorSandboxTest, NetworkIsAnExplicitRecordedSetting) {
  auto r = build({"--executor-network"});
  ASSERT_TRUE(r.exited_with(0)) << describe(r);
  auto proposals = payloads(ledger_records(out() / "ledger"), "proposal");
  ASSERT_FALSE(proposals.empty());
  SandboxProfile with_network = SandboxProfile::load("executor").value();
  with_network.network = true;
  EXPECT_EQ(proposals[0].at("executor_sandbox"),
            (json{{"profile", "executor"}, {"profile_sha256", with_network.digest().str()}, {"network", true}}));
  EXPECT_NE(with_network.digest(), SandboxProfile::load("executor").value().digest());
  const std::string findings = proposals[0].at("error").get<std::string>();
  // The host's interfaces are the executor's now; the rest stays out of reach.
  std::ifstream netdev("/proc/net/dev");
  std::string all((std::istreambuf_iterator<char>(netdev)), std::istreambuf_iterator<char>());
  if (all.find("eth") != std::string::npos || all.find("ens") != std::string::npos) {
    EXPECT_EQ(findings.find("interfaces: lo,\n"), std::string::npos) << findings;
  }
  for (const char* attack : kAttacks) {
    EXPECT_NE(findings.find(std::string(attack) + ": blocked"), std::string::npos) << attack << "\n" << findings;
  }
  EXPECT_TRUE(wait_until([&] { return processes_with(marker()) == 0; }, 3s));
}

// A sandbox whose preflight fails (this profile shows the host's /run) is refused before
// the build records anything: no silent fallback to an unconfined executor.
TEST_F(ExecutorSandboxTest, AFailingPreflightRefusesTheBuild) {
  json profile = json::parse(std::string(builtin_profile_text("executor")));
  profile["name"] = "leaky";
  profile["ro_binds"].push_back({{"src", "/usr/share"}, {"dest", "/run"}});
  write_file(tmp / "leaky.json", profile.dump());
  auto r = build({"--executor-profile", (tmp / "leaky.json").string()});
  EXPECT_TRUE(r.exited_with(1)) << describe(r);
  EXPECT_NE(r.err.find("preflight failed for profile leaky, refusing to run any executor"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("host path /run is visible"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(out() / "ledger"));
  EXPECT_FALSE(std::filesystem::exists(out() / "repo"));
}

// The proposal record carries the sandbox only for executors that run a program, so the plan
// executor's records (and the golden ledgers) are unchanged; a damaged one does not read back.
TEST(ProposalRecordSandbox, PresentOnlyForProgramsAndStrict) {
  kernel::ProposalRecord record;
  record.run_id = "run-1";
  record.step_id = "s1";
  record.attempt = 1;
  record.executor = "plan";
  EXPECT_FALSE(record.to_json().contains("executor_sandbox"));
  record.executor = "command:x";
  record.executor_sandbox = LaunchConfinement{"executor", sha256("p"), false};
  auto again = kernel::ProposalRecord::from_json(record.to_json());
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(again->executor_sandbox, record.executor_sandbox);
  json damaged = record.to_json();
  damaged["executor_sandbox"].erase("network");
  EXPECT_FALSE(kernel::ProposalRecord::from_json(damaged));
}

// Who answered is recorded only when an executor's transport names someone (a remote
// executor), so every other record and the golden ledgers are unchanged; read back strictly.
TEST(ProposalRecordIdentity, OmittedWhenAbsentAndStrict) {
  kernel::ProposalRecord record;
  record.run_id = "run-1";
  record.step_id = "s1";
  record.attempt = 1;
  record.executor = "remote:calc";
  EXPECT_FALSE(record.to_json().contains("executor_identity"));
  auto plain = kernel::ProposalRecord::from_json(record.to_json());
  ASSERT_TRUE(plain) << plain.error().message;
  EXPECT_FALSE(plain->executor_identity);
  record.executor_identity = "alice";
  auto again = kernel::ProposalRecord::from_json(record.to_json());
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(again->executor_identity, "alice");
  for (const json& bad : {json(""), json(7), json(nullptr)}) {
    json damaged = record.to_json();
    damaged["executor_identity"] = bad;
    EXPECT_FALSE(kernel::ProposalRecord::from_json(damaged)) << bad.dump();
  }
}

}  // namespace
}  // namespace warden::test
