// `warden run status` and `warden run cancel` against a real build running in another
// process: the status follows the ledger while the build hangs in a sandboxed check, cancel
// stops it (exit 130 for the build, cancelled in the ledger, no sandbox left), and unknown
// runs or ledgers are "not found". `warden run --repo ...` (the sandbox runner) stays reachable.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <string>

#include "tests/support/temp_dir.h"
#include "tests/kernel/build_fixture.h"

namespace warden::test {
namespace {

using namespace std::chrono_literals;

TEST(RunControlTest, StatusFollowsALiveRunAndCancelStopsIt) {
  TempDir tmp;
  const auto ledger = tmp / "out" / "ledger";
  Child build = Child::spawn({warden_binary(), "build", fixture("hang/blueprint.json").string(), "--out",
                              (tmp / "out").string(), "--policy", fixture("hang/policy.json").string(), "--run-id",
                              "ctl-run"});
  ASSERT_TRUE(wait_until([] { return hung_checks_running() > 0; }, 30s)) << "the hung check never started";

  auto status = warden({"run", "status", "ctl-run", "--ledger", ledger.string(), "--json"});
  ASSERT_TRUE(status.exited_with(0)) << describe(status);
  auto j = stdout_json(status);
  EXPECT_EQ(j["status"], "running");
  EXPECT_EQ(j["live"], true);
  EXPECT_EQ(j["steps_completed"], 1);
  EXPECT_EQ(j["steps_total"], 2);
  EXPECT_EQ(j["attempts"], 1);
  EXPECT_EQ(j["last_commit"].get<std::string>().size(), 40u);
  auto human = warden({"run", "status", "ctl-run", "--ledger", ledger.string()});
  EXPECT_NE(human.out.find("ctl-run  running  (live)"), std::string::npos) << human.out;

  auto cancel = warden({"run", "cancel", "ctl-run", "--ledger", ledger.string()});
  ASSERT_TRUE(cancel.exited_with(0)) << describe(cancel);
  EXPECT_NE(cancel.out.find("cancelled"), std::string::npos) << cancel.out;
  auto ended = build.wait();
  EXPECT_TRUE(ended.exited_with(130)) << describe(ended);
  EXPECT_TRUE(wait_until([] { return hung_checks_running() == 0; }, 5s)) << "a sandboxed check outlived the run";

  auto after = warden({"run", "status", "ctl-run", "--ledger", ledger.string(), "--json"});
  ASSERT_TRUE(after.exited_with(0)) << describe(after);
  j = stdout_json(after);
  EXPECT_EQ(j["status"], "cancelled");
  EXPECT_EQ(j["error_type"], "CANCELLED");
  EXPECT_EQ(j["live"], false);
  expect_ledger_verifies(ledger, tmp / "out" / "ledger" / "signer.pub");
  expect_branch_holds_only_accepted(tmp / "out" / "repo", "main", "warden/hang", ledger_records(ledger));

  auto again = warden({"run", "cancel", "ctl-run", "--ledger", ledger.string()});
  EXPECT_TRUE(again.exited_with(kExitNotFound)) << describe(again);
}

TEST(RunControlTest, UnknownRunsAndLedgersAreNotFound) {
  TempDir tmp;
  auto init = warden({"ledger", "init", (tmp / "ledger").string()});
  ASSERT_TRUE(init.exited_with(0)) << describe(init);
  for (const auto& sub : {"status", "cancel"}) {
    auto unknown = warden({"run", sub, "run-nope", "--ledger", (tmp / "ledger").string()});
    EXPECT_TRUE(unknown.exited_with(kExitNotFound)) << sub << ": " << describe(unknown);
    auto no_ledger = warden({"run", sub, "run-nope", "--ledger", (tmp / "missing").string()});
    EXPECT_TRUE(no_ledger.exited_with(kExitNotFound)) << sub << ": " << describe(no_ledger);
  }
  auto runner = warden({"run", "--check", "true"});
  EXPECT_TRUE(runner.exited_with(2)) << describe(runner);
  EXPECT_NE(runner.err.find("run needs --repo and --base"), std::string::npos) << runner.err;
}

}  // namespace
}  // namespace warden::test
