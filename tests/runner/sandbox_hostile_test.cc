// Hostile programs against the real sandbox: real bwrap, the real seccomp filter, real
// resource limits. Each is contained and reported, none affects the host, and no process
// outlives its run (counted on the host by the marker each hostile process carries). Each runs
// twice: under a reaper child, as every run of a build is, and reaped by this process itself
// (SandboxRequest::reap_here), as the one-shot `warden sandbox exec` is.
#include <arpa/inet.h>
#include <fcntl.h>
#include <sys/prctl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>

#include "runner/sandbox/sandbox.h"
#include "tests/support/sandbox_support.h"

namespace warden::test {
namespace {

namespace fs = std::filesystem;

class SandboxHostile : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    host_ = SandboxHost::detect();
    ws_.emplace(host_);
  }

  Sandbox make(SandboxProfile profile) {
    auto s = Sandbox::create(std::move(profile), host_);
    if (!s) throw std::runtime_error(s.error().message);
    return std::move(*s);
  }

  SandboxRun run(Sandbox& sandbox, std::vector<std::string> args, int64_t timeout_ms = 10'000) {
    SandboxRequest req;
    req.argv = {"./hostile"};
    req.argv.insert(req.argv.end(), args.begin(), args.end());
    req.workspace_dir = ws_->dir();
    req.timeout_ms = timeout_ms;
    req.reap_here = GetParam();
    auto r = sandbox.run(req);
    if (!r) throw std::runtime_error(r.error().message);
    // Reaping here makes this process a child subreaper (for good): proof the mode was taken
    // rather than quietly falling back to a reaper child.
    int subreaper = 0;
    if (GetParam() && (::prctl(PR_GET_CHILD_SUBREAPER, &subreaper) != 0 || subreaper != 1)) {
      throw std::runtime_error("the run was not reaped by the calling process");
    }
    // Shown when an assertion on this run fails.
    if (r->exit_code != 0 && !r->err.head.empty()) std::fprintf(stderr, "sandbox stderr: %s\n", r->err.head.c_str());
    return std::move(*r);
  }

  SandboxRun run(std::vector<std::string> args, int64_t timeout_ms = 10'000) {
    if (!sandbox_) sandbox_.emplace(make(test_profile()));
    return run(*sandbox_, std::move(args), timeout_ms);
  }

  SandboxHost host_;
  std::optional<HostileWorkspace> ws_;
  std::optional<Sandbox> sandbox_;
};

TEST_P(SandboxHostile, PreflightProvesEveryPart) {
  Sandbox s = make(test_profile());
  const PreflightReport& report = s.preflight();
  EXPECT_TRUE(report.ok) << report.failures();
  std::vector<std::string> names;
  for (const auto& c : report.checks) names.push_back(c.name);
  std::vector<std::string> want{"sandbox_start", "namespaces", "network", "seccomp", "capabilities", "identity",
                                "limits", "filesystem", "workspace"};
  // Where the host bounds runs with cgroups and a tmpfs of their own, the probe proves those too.
  if (host_.cgroups.usable()) want.push_back("cgroup");
  if (host_.run_tmpfs) want.push_back("disk");
  EXPECT_EQ(names, want);
}

TEST_P(SandboxHostile, MemoryHogHitsTheAddressSpaceLimit) {
  SandboxRun r = run({"memhog"});
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 3) << r.err.head;
  EXPECT_NE(r.out.head.find("before malloc failed"), std::string::npos) << r.out.head;
}

TEST_P(SandboxHostile, EndlessOutputIsCappedAndTheRunKilled) {
  std::string marker = fresh_marker();
  SandboxRun r = run({"flood", marker});
  SandboxProfile p = test_profile();
  EXPECT_TRUE(r.output_limit_exceeded);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.out.bytes, p.output.max_bytes);
  EXPECT_EQ(r.out.kept.size(), p.output.keep_bytes);
  EXPECT_TRUE(r.out.truncated);
  EXPECT_EQ(r.out.head, std::string(p.output.head_bytes, 'x'));
  EXPECT_EQ(r.out.tail, std::string(p.output.tail_bytes, 'x'));
  EXPECT_EQ(r.out.kept_sha256, sha256(r.out.kept));
  // The digest covers exactly max_bytes, whatever the read sizes were.
  EXPECT_EQ(r.out.sha256, sha256(std::string(p.output.max_bytes, 'x')));
  EXPECT_EQ(count_processes_with(marker), 0);
}

TEST_P(SandboxHostile, SleeperIsKilledAtTheTimeout) {
  std::string marker = fresh_marker();
  SandboxRun r = run({"sleep", marker}, 400);
  EXPECT_TRUE(r.timed_out);
  EXPECT_GE(r.duration_ms, 400);
  EXPECT_LT(r.duration_ms, 5000);
  EXPECT_EQ(count_processes_with(marker), 0);
}

TEST_P(SandboxHostile, DaemonDiesWithTheRun) {
  std::string marker = fresh_marker();
  SandboxRun r = run({"daemon", marker});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.out.head, "daemon started\n");
  EXPECT_LT(r.duration_ms, 5000);
  EXPECT_EQ(count_processes_with(marker), 0);
}

TEST_P(SandboxHostile, ClosedStdoutAndLingeringChildrenDoNotHangTheRun) {
  std::string marker = fresh_marker();
  SandboxRun r = run({"closeout", marker});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_FALSE(r.timed_out);
  EXPECT_LT(r.duration_ms, 5000);
  EXPECT_EQ(count_processes_with(marker), 0);
}

TEST_P(SandboxHostile, NoConnectionToTheHostsLoopback) {
  int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  ASSERT_GE(listener, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(listener, 8), 0);
  socklen_t len = sizeof addr;
  ASSERT_EQ(::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  int port = ntohs(addr.sin_port);
  SandboxRun r = run({"connect", std::to_string(port)});
  EXPECT_EQ(r.out.head, "connect: ECONNREFUSED\n");
  EXPECT_LT(::accept(listener, nullptr, nullptr), 0);
  EXPECT_EQ(errno, EAGAIN);
  ::close(listener);
}

TEST_P(SandboxHostile, WritesOutsideTheWorkspaceFail) {
  EXPECT_EQ(run({"write", "/usr/warden-evil"}).out.head, "write: EROFS\n");
  EXPECT_EQ(run({"write", "/etc/warden-evil"}).out.head, "write: EROFS\n");
  EXPECT_EQ(run({"write", "/warden-evil"}).out.head, "write: EROFS\n");
  EXPECT_FALSE(fs::exists("/usr/warden-evil"));
  // /tmp is the sandbox's own: the write works there and never reaches the host's /tmp.
  std::string name = "/tmp/" + fresh_marker();
  EXPECT_EQ(run({"write", name}).out.head, "write: ok\n");
  EXPECT_FALSE(fs::exists(name));
  EXPECT_EQ(run({"write", "/workspace/result.txt"}).out.head, "write: ok\n");
  EXPECT_TRUE(fs::exists(ws_->dir() / "result.txt"));
}

TEST_P(SandboxHostile, HostHomesKeysAndSocketsAreAbsent) {
  for (const char* path : {"/root", "/root/.ssh/id_ed25519", "/home", "/etc/shadow", "/run", "/var/run/docker.sock",
                           "/etc/ssh/ssh_host_ed25519_key"}) {
    EXPECT_EQ(run({"read", path}).out.head, "read: ENOENT\n") << path;
  }
}

TEST_P(SandboxHostile, SetuidBinaryGainsNothing) {
  install_file(HOSTILE_BINARY, ws_->dir() / "suid", 04755, 0, 0);
  SandboxRequest req;
  Sandbox s = make(test_profile());
  req.argv = {"./suid", "ids"};
  req.workspace_dir = ws_->dir();
  auto r = s.run(req);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->out.head, "uid=1000 euid=1000 gid=1000 egid=1000\n");
}

TEST_P(SandboxHostile, PtraceMountKeyctlAndUnshareAreDenied) {
  EXPECT_EQ(run({"ptrace"}).out.head, "ptrace_traceme: EPERM\nptrace_attach: EPERM\n");
  EXPECT_EQ(run({"mount"}).out.head, "mount: EPERM\n");
  // keyctl works for any unprivileged process: only the seccomp filter refuses it.
  EXPECT_EQ(run({"keyctl"}).out.head, "keyctl: EPERM\n");
  EXPECT_EQ(run({"unshare"}).out.head, "unshare: EPERM\n");
}

TEST_P(SandboxHostile, SymlinksToHostPathsResolveInsideTheSandbox) {
  fs::create_symlink("/etc/shadow", ws_->dir() / "shadow-link");
  fs::create_symlink("/root", ws_->dir() / "root-link");
  EXPECT_EQ(run({"read", "/workspace/shadow-link"}).out.head, "read: ENOENT\n");
  EXPECT_EQ(run({"read", "/workspace/root-link/.bashrc"}).out.head, "read: ENOENT\n");
}

TEST_P(SandboxHostile, CpuAndFileSizeLimitsEndTheProgram) {
  SandboxProfile p = test_profile();
  p.limits.cpu_seconds = 1;
  Sandbox s = make(p);
  SandboxRun cpu = run(s, {"cpu"}, 15'000);
  EXPECT_FALSE(cpu.timed_out);
  EXPECT_TRUE(cpu.exit_code == 128 + SIGXCPU || cpu.exit_code == 128 + SIGKILL) << cpu.exit_code;
  SandboxRun big = run({"bigfile", "/workspace/big"});
  EXPECT_EQ(big.exit_code, 128 + SIGXFSZ) << big.out.head;
  EXPECT_LE(fs::file_size(ws_->dir() / "big"), p.limits.file_size_bytes);
}

TEST_P(SandboxHostile, EnvironmentIsFixedAndDeterministic) {
  ::setenv("WARDEN_HOST_SECRET", "leak", 1);
  SandboxRequest req;
  Sandbox s = make(test_profile());
  req.argv = {"/usr/bin/env"};
  req.workspace_dir = ws_->dir();
  auto first = s.run(req);
  auto second = s.run(req);
  ASSERT_TRUE(first && second);
  EXPECT_EQ(first->out.head,
            "HOME=/tmp\nLANG=C.UTF-8\nLC_ALL=C.UTF-8\nPATH=/usr/local/bin:/usr/bin:/bin\nPYTHONDONTWRITEBYTECODE=1\n"
            "PYTHONHASHSEED=0\nSOURCE_DATE_EPOCH=0\nTZ=UTC\nUSER=warden\nPWD=/workspace\n");
  EXPECT_EQ(first->out.sha256, second->out.sha256);
}

TEST_P(SandboxHostile, PreflightRefusesAMissingBwrap) {
  SandboxHost broken = host_;
  broken.bwrap = "/nonexistent/bwrap";
  auto s = Sandbox::create(test_profile(), broken);
  ASSERT_TRUE(s);
  EXPECT_FALSE(s->preflight().ok);
  EXPECT_FALSE(s->preflight().checks.at(0).ok);
  SandboxRequest req;
  req.argv = {"/bin/true"};
  req.workspace_dir = ws_->dir();
  auto r = s->run(req);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("sandbox_start"), std::string::npos) << r.error().message;
}

TEST_P(SandboxHostile, PreflightRefusesAProfileThatExposesHostHomes) {
  SandboxProfile p = test_profile();
  p.ro_binds.push_back(BindMount{"/home", "/home", false});
  Sandbox s = make(p);
  EXPECT_FALSE(s.preflight().ok);
  EXPECT_NE(s.preflight().failures().find("filesystem: host path /home is visible"), std::string::npos)
      << s.preflight().failures();
}

// The profile's files reach bwrap on descriptors and are copies the sandbox's uid owns: a tested
// program can neither change them (mode, bytes, name, a link over one) nor find the
// descriptors they came on, so it cannot alter what it, or a later run, sees as /etc.
TEST_P(SandboxHostile, TheProfilesFilesCannotBeChangedAndTheirDescriptorsAreGone) {
  SandboxProfile p = test_profile();
  Sandbox s = make(p);
  SandboxRequest req;
  req.argv = {"/bin/sh", "-c",
              "chmod 666 /etc/passwd; echo x >>/etc/passwd; mv /etc/hosts /etc/moved; rm -f /etc/group; "
              "ln -sf /tmp/x /etc/nsswitch.conf; ls /proc/$$/fd; for f in /etc/passwd /etc/group /etc/hosts "
              "/etc/nsswitch.conf; do echo \"== $f\"; cat $f; done"};
  req.workspace_dir = ws_->dir();
  req.reap_here = GetParam();
  for (int round = 0; round < 2; ++round) {  // the second run sees the profile's bytes again
    auto r = s.run(req);
    ASSERT_TRUE(r) << r.error().message;
    std::string want = "0\n1\n2\n";
    for (const auto& f : p.files) want += "== " + f.path + "\n" + f.content;
    EXPECT_EQ(r->out.kept, want) << r->err.kept;
    EXPECT_NE(r->err.kept.find("Read-only file system"), std::string::npos) << r->err.kept;
  }
}

INSTANTIATE_TEST_SUITE_P(Reapers, SandboxHostile, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& info) { return info.param ? "ReapedHere" : "ThroughAReaper"; });

}  // namespace
}  // namespace warden::test
