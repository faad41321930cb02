// A fork bomb in the sandbox. RLIMIT_NPROC counts every process of the sandbox's host uid,
// so while the bomb holds its whole budget no other sandbox of that uid can start: this test
// runs alone (RUN_SERIAL), away from the other sandbox tests.
#include <chrono>

#include "runner/sandbox.h"
#include "tests/sandbox/sandbox_support.h"

namespace warden::test {
namespace {

TEST(SandboxForkBomb, IsBoundedKilledAtTheTimeoutAndLeavesNothing) {
  SandboxHost host = SandboxHost::detect();
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

}  // namespace
}  // namespace warden::test
