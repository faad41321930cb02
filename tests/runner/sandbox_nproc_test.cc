// Tests that spend the whole RLIMIT_NPROC budget. The limit counts every process of the
// sandbox's host uid, so while one of these holds its budget no other sandbox of that uid can
// start: they run alone (RUN_SERIAL), away from the other sandbox tests.
#include <chrono>

#include "runner/sandbox/sandbox.h"
#include "tests/support/sandbox_support.h"

namespace warden::test {
namespace {

TEST(SandboxForkBomb, IsBoundedKilledAtTheTimeoutAndLeavesNothing) {
  SandboxHost host = SandboxHost::detect();
  if (host.drop) wait_for_uid_to_drain(host.uid, std::chrono::seconds(10));
  HostileWorkspace ws(host);
  auto sandbox = Sandbox::create(test_profile(), host);
  ASSERT_TRUE(sandbox);
  std::string marker = fresh_marker();
  SandboxRequest req;
  req.argv = {"./hostile", "forkbomb", marker};
  req.workspace_dir = ws.dir();
  req.timeout_ms = 1500;
  auto start = std::chrono::steady_clock::now();
  auto r = sandbox->run(req);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->timed_out);
  EXPECT_EQ(r->signal, SIGKILL);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(8));
  EXPECT_EQ(count_processes_with(marker), 0);
  // The host can still start processes, and the next sandbox runs normally.
  req.argv = {"./hostile", "print", "after"};
  auto after = sandbox->run(req);
  ASSERT_TRUE(after) << after.error().message;
  EXPECT_EQ(after->out.head, "after\n");
}

TEST(SandboxNproc, ManyRunsLeaveNoZombiesBehind) {
  // bwrap's namespace init outlives bwrap by a moment; if it were left for the host's init
  // to reap (which may never happen), every run would leak a zombie counted against
  // RLIMIT_NPROC, and after `processes` runs no sandbox could start.
  SandboxHost host = SandboxHost::detect();
  // The fork bomb before may still be tearing down: its processes count until reaped.
  if (host.drop) wait_for_uid_to_drain(host.uid, std::chrono::seconds(10));
  HostileWorkspace ws(host);
  SandboxProfile p = test_profile();
  p.limits.processes = 12;
  auto sandbox = Sandbox::create(p, host);
  ASSERT_TRUE(sandbox);
  SandboxRequest req;
  req.workspace_dir = ws.dir();
  for (int i = 0; i < 30; ++i) {
    req.argv = {"./hostile", "print", "run " + std::to_string(i)};
    auto r = sandbox->run(req);
    ASSERT_TRUE(r) << r.error().message;
    ASSERT_EQ(r->exit_code, 0) << "run " << i << ": " << r->err.head;
  }
}

}  // namespace
}  // namespace warden::test
