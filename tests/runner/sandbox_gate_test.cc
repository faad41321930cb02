// bwrap held before its seccomp program (SpawnSpec::seccomp): a held sandbox runs nothing of
// its command until it is released, one never released runs nothing and leaves nothing, and
// the death of the process holding it does not let it go on (bwrap then reads an empty
// program, which the kernel refuses, and dies). Real bwrap, real processes, the default
// profile's real program; the command would leave a file behind if it ever ran.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <thread>

#include "common/file.h"
#include "runner/sandbox/sandbox.h"
#include "runner/sandbox/sandbox_process.h"
#include "runner/sandbox/scratch_dir.h"
#include "tests/support/sandbox_support.h"

namespace warden::test {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

// bwrap with a read-only host and `dir` writable, held before its seccomp program
// (descriptor 3); the command, named by `marker` on its command line, writes its seccomp
// mode to dir/ran.
struct HeldCommand {
  HeldCommand() : host(SandboxHost::detect()), marker(fresh_marker()) {
    auto made = ScratchDir::create(host.scratch_root, "warden-gate-test-", 0711);
    EXPECT_TRUE(made) << made.error().message;
    scratch.emplace(std::move(*made));
    dir = *scratch / "ws";
    EXPECT_TRUE(make_owned_dir(dir, host.uid, host.gid));
    spec.argv = {host.bwrap,  "--unshare-all", "--die-with-parent", "--ro-bind", "/", "/", "--bind", dir.string(),
                 dir.string(), "--seccomp",    "3",                 "--",        "/bin/sh", "-c",
                 "grep Seccomp: /proc/self/status > " + (dir / "ran").string() + " # " + marker};
    if (host.drop) {
      spec.drop_uid = host.uid;
      spec.drop_gid = host.gid;
    }
    auto sandbox = Sandbox::create(SandboxProfile::load("default").value(), host);
    EXPECT_TRUE(sandbox) << sandbox.error().message;
    program = sandbox->seccomp_program();
    spec.seccomp = program;
    spec.stdout_fd = spec.stderr_fd = null.get();
  }
  bool ran() const { return fs::exists(dir / "ran"); }
  // Whether a process of this sandbox (bwrap's namespace init) sits reading the pipe its
  // program comes on: without that, "it has not run yet" would prove nothing.
  bool parked() const {
    for (int i = 0; i < 100; ++i) {
      for (pid_t pid : processes_with(marker)) {
        auto wchan = read_file("/proc/" + std::to_string(pid) + "/wchan", 256);
        if (wchan && wchan->find("pipe_read") != std::string::npos) return true;
      }
      std::this_thread::sleep_for(30ms);
    }
    return false;
  }

  SandboxHost host;
  std::string marker;
  UniqueFd null{::open("/dev/null", O_WRONLY | O_CLOEXEC)};
  std::optional<ScratchDir> scratch;
  fs::path dir;
  std::string program;
  SpawnSpec spec;
};

// Long enough for a command that was going to run to have run.
void give_it_time() { std::this_thread::sleep_for(300ms); }

// Reaps whatever ended up as this process's children (a test that became a child subreaper
// inherits the orphans of a holder it killed), so the next test may reap here again.
void reap_strays() {
  for (int i = 0; i < 200; ++i) {
    pid_t got = ::waitpid(-1, nullptr, WNOHANG);
    if (got < 0) return;  // ECHILD: none left
    if (got == 0) std::this_thread::sleep_for(10ms);
  }
}

// Each test runs both ways a sandbox is reaped: through a reaper child, and in the caller.
class SandboxGate : public ::testing::TestWithParam<bool> {
 protected:
  SandboxGate() {
    reap_strays();
    held.spec.reap_here = GetParam();
  }
  ~SandboxGate() override { reap_strays(); }
  HeldCommand held;
};

TEST_P(SandboxGate, AHeldSandboxRunsItsCommandOnlyOnceReleasedAndUnderItsFilter) {
  auto child = SandboxChild::spawn(held.spec);
  ASSERT_TRUE(child) << child.error().message;
  EXPECT_EQ(child->reaped_here(), GetParam());
  ASSERT_TRUE(held.parked());
  give_it_time();
  EXPECT_FALSE(held.ran()) << "the command ran before its seccomp program was released";
  ASSERT_TRUE(child->release());
  EXPECT_FALSE(child->release()) << "released once";
  int status = child->reap();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  auto mode = read_file(held.dir / "ran");
  ASSERT_TRUE(mode);
  EXPECT_EQ(*mode, "Seccomp:\t2\n") << "the released program is the filter the command runs under";
}

TEST_P(SandboxGate, NeverReleasedItRunsNothingAndLeavesNothing) {
  {
    auto child = SandboxChild::spawn(held.spec);
    ASSERT_TRUE(child) << child.error().message;
    EXPECT_EQ(child->reaped_here(), GetParam());
    ASSERT_TRUE(held.parked());
  }  // stopped and reaped unreleased
  give_it_time();
  EXPECT_FALSE(held.ran());
  EXPECT_EQ(count_processes_with(held.marker), 0);
}

// A Warden killed while bwrap is held: bwrap reads EOF on an empty program, the kernel refuses
// it, and bwrap dies before the command could start (a gate opened by EOF, --block-fd on a
// pipe, would have let it go on; one that never opens would leave bwrap's namespace init,
// which has no parent-death signal yet, waiting for good).
TEST_P(SandboxGate, TheHoldersDeathDoesNotLetItGoOn) {
  pid_t holder = ::fork();
  ASSERT_GE(holder, 0);
  if (holder == 0) {
    auto child = SandboxChild::spawn(held.spec);
    if (!child) ::_exit(3);
    std::this_thread::sleep_for(50ms);
    ::kill(::getpid(), SIGKILL);  // no destructor, no release: the pipe's write end closes with the process
    ::_exit(4);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(holder, &status, 0), holder);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "the holder could not spawn: " << status;
  give_it_time();
  reap_strays();
  EXPECT_FALSE(held.ran()) << "the command ran after its holder died";
  for (int i = 0; i < 40 && count_processes_with(held.marker) > 0; ++i) std::this_thread::sleep_for(50ms);
  EXPECT_EQ(count_processes_with(held.marker), 0) << "the held sandbox outlived its holder";
}

// bwrap's outer process killed while held (by another process of its uid, or the OOM killer
// once the limits are written): its namespace init, which has no parent-death signal yet,
// stays parked on the pipe. Stopping the sandbox must not then wait for it for good: it is
// handed EOF, refuses the empty program and dies.
TEST_P(SandboxGate, StoppingItAfterItsOuterProcessDiedDoesNotHang) {
  auto child = SandboxChild::spawn(held.spec);
  ASSERT_TRUE(child) << child.error().message;
  ASSERT_TRUE(held.parked());
  const std::vector<pid_t> found = processes_with(held.marker);
  pid_t outer = -1;
  for (pid_t pid : found) {
    auto status = read_file("/proc/" + std::to_string(pid) + "/status", 4096);
    if (!status) continue;
    const size_t at = status->find("PPid:\t");
    const pid_t parent = at == std::string::npos ? -1 : static_cast<pid_t>(std::stol(status->substr(at + 6)));
    if (std::find(found.begin(), found.end(), parent) == found.end()) outer = pid;
  }
  ASSERT_GT(outer, 0) << "no outer bwrap among " << found.size();
  ASSERT_EQ(::kill(outer, SIGKILL), 0);
  std::this_thread::sleep_for(100ms);
  const auto start = std::chrono::steady_clock::now();
  child->stop();
  child = std::unexpected(Error{Errc::internal, "destroyed"});  // the destructor's path: EOF, then reap
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  give_it_time();
  reap_strays();
  EXPECT_FALSE(held.ran());
  EXPECT_EQ(count_processes_with(held.marker), 0);
}

INSTANTIATE_TEST_SUITE_P(Reapers, SandboxGate, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& info) { return info.param ? "ReapedHere" : "ThroughAReaper"; });

}  // namespace
}  // namespace warden::test
