// Per-run limits, tried for real: a check filling memory, the workspace's bytes and inodes,
// /tmp and /dev/shm is stopped at its run's limits with the host's memory and file systems
// untouched; /dev is read-only; a fork bomb in one run does not keep a concurrent run from
// starting; the cgroups of a killed runner are reclaimed; a timeout kills everything in the
// run's cgroup. Real bwrap, real cgroups (v1 hierarchies on these hosts), real tmpfs mounts.
#include <signal.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <future>
#include <thread>

#include "common/file.h"
#include "runner/sandbox/run_cgroup.h"
#include "runner/sandbox/sandbox.h"
#include "tests/support/sandbox_support.h"

namespace warden::test {
namespace {

namespace fs = std::filesystem;

// A sandbox host with everything this one offers; tests that need cgroups or root skip
// where they are missing.
SandboxHost full_host() { return SandboxHost::detect(); }

#define REQUIRE_CGROUPS(host)                                                                       \
  if (!(host).cgroups.has("pids") || !(host).cgroups.has("memory"))                                  \
    GTEST_SKIP() << "no usable pids and memory cgroups here: " << (host).cgroups.unavailable()

uint64_t mem_available_kib() {
  std::ifstream in("/proc/meminfo");
  for (std::string key; in >> key;) {
    uint64_t value = 0;
    in >> value;
    if (key == "MemAvailable:") return value;
    in.ignore(1 << 10, '\n');
  }
  return 0;
}

// Processes whose real uid is `uid`: what RLIMIT_NPROC counts.
int uid_processes(uid_t uid) {
  int count = 0;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream st(entry.path() / "status");
    for (std::string line; std::getline(st, line);) {
      if (!line.starts_with("Uid:")) continue;
      if (std::stoul(line.substr(4)) == uid) ++count;
      break;
    }
  }
  return count;
}

struct FsRoom {
  uint64_t bytes = 0, inodes = 0;
};
FsRoom room(const fs::path& path) {
  struct statvfs v{};
  if (::statvfs(path.c_str(), &v) != 0) return {};
  return {v.f_bavail * v.f_frsize, v.f_favail};
}

// An overlay workspace as LocalRunner lays one out: the hostile workspace as the lower layer,
// the run's writes in a run_scratch() of the sandbox (a tmpfs of its own as root).
struct OverlayRun {
  ScratchDir dir;
  SandboxRequest request;
};
OverlayRun overlay_run(const Sandbox& sandbox, const HostileWorkspace& ws) {
  auto dir = sandbox.run_scratch();
  if (!dir) throw std::runtime_error(dir.error().message);
  const SandboxHost& host = sandbox.host();
  for (const char* sub : {"upper", "work", "merged"}) {
    if (auto st = make_owned_dir(*dir / sub, host.uid, host.gid); !st) throw std::runtime_error(st.error().message);
  }
  SandboxRequest req;
  req.overlay = OverlaySpec{{ws.dir().string()}, (*dir / "upper").string(), (*dir / "work").string(), (*dir / "merged").string()};
  return OverlayRun{std::move(*dir), std::move(req)};
}

TEST(SandboxLimits, PreflightRecordsWhatEnforcesEachLimit) {
  SandboxHost host = full_host();
  auto sandbox = Sandbox::create(test_profile(), host);
  ASSERT_TRUE(sandbox);
  const PreflightReport& report = sandbox->preflight();
  ASSERT_TRUE(report.ok) << report.failures();
  auto by = [&](std::string_view limit, std::string_view where = "") {
    for (const auto& e : report.enforced) {
      if (e.limit == limit && e.where == where) return e.by;
    }
    return std::string("absent");
  };
  EXPECT_EQ(by("cpu_seconds"), "rlimit");
  EXPECT_EQ(by("tmpfs_bytes", "/tmp"), "tmpfs");
  EXPECT_EQ(by("tmpfs_bytes", "/dev/shm"), "tmpfs");
  if (host.cgroups.has("memory")) {
    EXPECT_EQ(by("memory"), host.cgroups.by());
    EXPECT_EQ(by("pids"), host.cgroups.by());
    EXPECT_EQ(by("processes_per_uid"), "rlimit");
    // A host-wide backstop, far above one run's processes: concurrent runs do not share 64.
    EXPECT_GT(sandbox->nproc_limit(), 64u * 8);
    auto nproc = std::find_if(report.enforced.begin(), report.enforced.end(),
                              [](const EnforcedLimit& e) { return e.limit == "processes_per_uid"; });
    ASSERT_NE(nproc, report.enforced.end());
    EXPECT_EQ(nproc->value, sandbox->nproc_limit());
    EXPECT_TRUE(std::any_of(report.checks.begin(), report.checks.end(), [](const auto& c) { return c.name == "cgroup"; }));
  } else {
    EXPECT_EQ(by("pids"), "rlimit");
  }
  if (host.run_tmpfs) {
    EXPECT_EQ(by("disk_bytes"), "tmpfs");
    EXPECT_EQ(by("disk_inodes"), "tmpfs");
  }
  // Deterministic: a second sandbox on the same host and profile records the same.
  auto again = Sandbox::create(test_profile(), host);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->preflight().to_json(), report.to_json());
  auto round = PreflightReport::from_json(report.to_json());
  ASSERT_TRUE(round);
  EXPECT_EQ(round->enforced, report.enforced);
}

TEST(SandboxLimits, MemoryHogIsKilledByTheRunsMemoryCgroup) {
  SandboxHost host = full_host();
  REQUIRE_CGROUPS(host);
  SandboxProfile p = test_profile();
  p.limits.memory_bytes = uint64_t{128} << 20;
  p.limits.address_space_bytes = uint64_t{64} << 30;  // out of the way: the cgroup must stop it
  HostileWorkspace ws(host);
  auto sandbox = Sandbox::create(p, host);
  ASSERT_TRUE(sandbox);
  const uint64_t before = mem_available_kib();
  SandboxRequest req;
  req.argv = {"./hostile", "memhog"};
  req.workspace_dir = ws.dir();
  auto r = sandbox->run(req);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->exit_code, 128 + SIGKILL) << r->out.head << r->err.head;
  EXPECT_EQ(r->limits_hit, std::vector<std::string>{"memory"});
  ASSERT_TRUE(r->cgroup);
  EXPECT_LE(r->cgroup->memory_peak, p.limits.memory_bytes);
  // The host did not give the run more than its limit (with room for other tests' noise).
  EXPECT_GT(mem_available_kib() + (uint64_t{256} << 10), before);
}

TEST(SandboxLimits, TmpAndDevShmFillsStopAtTheirCapsAndDevIsReadOnly) {
  SandboxHost host = full_host();
  SandboxProfile p = test_profile();
  p.tmpfs = {{"/tmp", uint64_t{8} << 20}, {"/dev/shm", uint64_t{4} << 20}};
  p.limits.memory_bytes = uint64_t{256} << 20;
  HostileWorkspace ws(host);
  auto sandbox = Sandbox::create(p, host);
  ASSERT_TRUE(sandbox);
  const FsRoom shm_before = room("/dev/shm");
  auto run = [&](std::vector<std::string> argv) {
    SandboxRequest req;
    req.argv = std::move(argv);
    req.workspace_dir = ws.dir();
    auto r = sandbox->run(req);
    if (!r) throw std::runtime_error(r.error().message);
    return r->out.head;
  };
  EXPECT_EQ(run({"./hostile", "fill", "/tmp"}), "fill: ENOSPC\nfilled 8388608 bytes\n");
  EXPECT_EQ(run({"./hostile", "fill", "/dev/shm"}), "fill: ENOSPC\nfilled 4194304 bytes\n");
  EXPECT_EQ(run({"./hostile", "write", "/dev/evil"}), "write: EROFS\n");
  EXPECT_EQ(run({"./hostile", "write", "/dev/null"}), "write: ok\n");
  // /tmp's inodes: bwrap sets a tmpfs's size only; the memory cgroup bounds the inodes (each
  // is charged to the run), and without one the tmpfs's own default (half the RAM's pages).
  if (host.cgroups.has("memory")) {
    SandboxProfile small = p;
    small.limits.memory_bytes = uint64_t{32} << 20;
    auto bounded = Sandbox::create(small, host);
    ASSERT_TRUE(bounded);
    SandboxRequest req;
    req.argv = {"./hostile", "inodes", "/tmp"};
    req.workspace_dir = ws.dir();
    auto r = bounded->run(req);
    ASSERT_TRUE(r) << r.error().message;
    // The OOM killer ends the run (the program, or bwrap itself: both are the run's).
    EXPECT_EQ(r->limits_hit, std::vector<std::string>{"memory"}) << r->exit_code << " " << r->out.head;
    EXPECT_NE(r->exit_code, 0);
  }
  // Nothing of that landed on the host's /dev/shm.
  const FsRoom shm_after = room("/dev/shm");
  EXPECT_LT(shm_before.bytes - std::min(shm_before.bytes, shm_after.bytes), uint64_t{4} << 20);
  EXPECT_LT(shm_before.inodes - std::min(shm_before.inodes, shm_after.inodes), 1000u);

  // The strict profile has no /dev/shm at all: it is part of the read-only /dev.
  auto strict = SandboxProfile::load("strict");
  ASSERT_TRUE(strict);
  strict->ro_binds.push_back({ws.dir().string(), "/hostile-bin", false});
  auto strict_sandbox = Sandbox::create(*strict, host);
  ASSERT_TRUE(strict_sandbox);
  SandboxRequest req;
  req.argv = {"/hostile-bin/hostile", "write", "/dev/shm/x"};
  req.workspace_dir = ws.dir();
  auto r = strict_sandbox->run(req);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->out.head, "write: EROFS\n");
}

TEST(SandboxLimits, WorkspaceFillStopsAtTheRunsDiskBytesAndInodes) {
  SandboxHost host = full_host();
  if (!host.run_tmpfs) GTEST_SKIP() << "not root: the writable layer cannot get a tmpfs of its own";
  SandboxProfile p = test_profile();
  p.limits.disk_bytes = uint64_t{16} << 20;
  p.limits.disk_inodes = 2000;
  HostileWorkspace ws(host);
  auto sandbox = Sandbox::create(p, host);
  ASSERT_TRUE(sandbox);
  ASSERT_TRUE(sandbox->preflight().ok) << sandbox->preflight().failures();
  const FsRoom shm_before = room(host.scratch_root);
  const FsRoom root_before = room("/");
  {
    OverlayRun bytes = overlay_run(*sandbox, ws);
    bytes.request.argv = {"./hostile", "fill", "."};
    auto r = sandbox->run(bytes.request);
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_TRUE(r->out.head.starts_with("fill: ENOSPC\n")) << r->out.head;
    uint64_t filled = std::stoull(r->out.head.substr(r->out.head.find("filled ") + 7));
    EXPECT_LE(filled, p.limits.disk_bytes);
    EXPECT_GT(filled, p.limits.disk_bytes / 2);
    const FsRoom during = room(host.scratch_root);
    EXPECT_LT(shm_before.bytes - std::min(shm_before.bytes, during.bytes), uint64_t{8} << 20);
  }
  {
    OverlayRun inodes = overlay_run(*sandbox, ws);
    inodes.request.argv = {"./hostile", "inodes", "."};
    auto r = sandbox->run(inodes.request);
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_TRUE(r->out.head.starts_with("inodes: ENOSPC\n")) << r->out.head;
    long made = std::stol(r->out.head.substr(r->out.head.find("made ") + 5));
    EXPECT_LE(made, 2000);
    EXPECT_GT(made, 1900);  // upper, work and the overlay's own take a few
    const FsRoom during = room(host.scratch_root);
    EXPECT_LT(shm_before.inodes - std::min(shm_before.inodes, during.inodes), 100u);
  }
  const FsRoom root_after = room("/");
  EXPECT_LT(root_before.inodes - std::min(root_before.inodes, root_after.inodes), 1000u);
  // The runs' tmpfs mounts went with their directories.
  std::ifstream mounts("/proc/self/mounts");
  std::string all((std::istreambuf_iterator<char>(mounts)), std::istreambuf_iterator<char>());
  EXPECT_EQ(all.find("warden-run-p" + std::to_string(::getpid()) + "."), std::string::npos);
}

TEST(SandboxLimits, AForkBombDoesNotKeepAConcurrentRunFromStarting) {
  SandboxHost host = full_host();
  REQUIRE_CGROUPS(host);
  HostileWorkspace ws(host);
  std::string marker = fresh_marker();
  auto bomb = std::async(std::launch::async, [&] {
    auto sandbox = Sandbox::create(test_profile(), host);
    if (!sandbox) return std::string("create: ") + sandbox.error().message;
    SandboxRequest req;
    req.argv = {"./hostile", "forkbomb", marker};
    req.workspace_dir = ws.dir();
    req.timeout_ms = 4000;
    auto r = sandbox->run(req);
    if (!r) return r.error().message;
    if (!r->timed_out) return std::string("the bomb was not stopped by the timeout");
    if (r->limits_hit != std::vector<std::string>{"pids"}) return std::string("the bomb did not reach pids.max");
    return std::string("ok");
  });
  // Once the sandbox uid holds the profile's 64 processes, RLIMIT_NPROC alone (one budget
  // per uid) would refuse every other run of that uid. (Counted from /proc/*/status: reading
  // the bomb's command lines contends with its forks for their memory maps.)
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  int held = 0;
  while ((held = uid_processes(host.uid)) < 64 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_GE(held, 64);
  auto sandbox = Sandbox::create(test_profile(), host);
  ASSERT_TRUE(sandbox);
  SandboxRequest req;
  req.workspace_dir = ws.dir();
  for (int i = 0; i < 5; ++i) {
    req.argv = {"./hostile", "print", "beside the bomb " + std::to_string(i)};
    auto r = sandbox->run(req);
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(r->exit_code, 0) << r->err.head;
    EXPECT_EQ(r->out.head, "beside the bomb " + std::to_string(i) + "\n");
  }
  EXPECT_EQ(bomb.get(), "ok");
  EXPECT_EQ(count_processes_with(marker), 0);
}

TEST(SandboxLimits, TimeoutKillsEverythingInTheRunsCgroup) {
  SandboxHost host = full_host();
  REQUIRE_CGROUPS(host);
  HostileWorkspace ws(host);
  auto sandbox = Sandbox::create(test_profile(), host);
  ASSERT_TRUE(sandbox);
  std::string marker = fresh_marker();
  SandboxRequest req;
  req.argv = {"/bin/sh", "-c", "./hostile daemon " + marker + "; ./hostile sleep " + marker};
  req.workspace_dir = ws.dir();
  req.timeout_ms = 500;
  auto r = sandbox->run(req);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->timed_out);
  EXPECT_EQ(count_processes_with(marker), 0);
  // And the run's cgroup is gone: of this process, only a fresh probe's is under warden/.
  RunCgroup probe = RunCgroup::create(host.cgroups, {8, uint64_t{64} << 20, 100}).value();
  for (const auto& dir : probe.dirs()) {
    std::error_code ec;
    size_t ours = 0;
    const std::string prefix = "p" + std::to_string(::getpid()) + ".";
    for (const auto& e : fs::directory_iterator(dir.parent_path(), ec)) {
      if (e.path().filename().string().starts_with(prefix)) ++ours;
    }
    EXPECT_EQ(ours, 1u) << dir.parent_path();  // the probe's own
  }
}

TEST(RunCgroups, KillTakesEveryProcessAndTheDestructorRemovesTheCgroup) {
  CgroupHost cgroups = CgroupHost::detect();
  if (!cgroups.has("pids")) GTEST_SKIP() << cgroups.unavailable();
  std::string marker = fresh_marker();
  std::vector<fs::path> dirs;
  {
    auto cg = RunCgroup::create(cgroups, {32, uint64_t{256} << 20, 100});
    ASSERT_TRUE(cg) << cg.error().message;
    dirs = cg->dirs();
    // A process joins, then leaves its session and process group and forks: nothing but the
    // cgroup still holds them together.
    pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      for (int fd : cg->join_fds()) {
        if (::write(fd, "0", 1) != 1) ::_exit(1);
      }
      ::setsid();
      if (::fork() == 0) {
        ::setsid();
        ::execl("/bin/sh", "sh", "-c", "sleep 600; :", marker.c_str(), nullptr);
        ::_exit(1);
      }
      ::execl("/bin/sh", "sh", "-c", "sleep 600; :", marker.c_str(), nullptr);
      ::_exit(1);
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (count_processes_with(marker) < 2 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ASSERT_EQ(count_processes_with(marker), 2);
    cg->kill();
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  }
  // The grandchild went to init; the destructor waited for the cgroup to empty.
  EXPECT_EQ(count_processes_with(marker), 0);
  for (const auto& d : dirs) EXPECT_FALSE(fs::exists(d)) << d;
}

TEST(RunCgroups, AKilledRunnersCgroupsAreReclaimed) {
  CgroupHost cgroups = CgroupHost::detect();
  if (!cgroups.has("pids")) GTEST_SKIP() << cgroups.unavailable();
  std::string marker = fresh_marker();
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  // A "runner" that makes a run cgroup, starts a process in it and dies without cleaning up.
  pid_t runner = ::fork();
  ASSERT_GE(runner, 0);
  if (runner == 0) {
    CgroupHost mine = CgroupHost::detect();  // named after this process
    auto cg = RunCgroup::create(mine, {16, uint64_t{64} << 20, 100});
    if (!cg) ::_exit(1);
    int joined[2];
    if (::pipe(joined) != 0) ::_exit(1);
    pid_t sleeper = ::fork();
    if (sleeper == 0) {
      for (int fd : cg->join_fds()) {
        if (::write(fd, "0", 1) != 1) ::_exit(1);
      }
      if (::write(joined[1], "j", 1) != 1) ::_exit(1);
      ::execl("/bin/sh", "sh", "-c", "sleep 600; :", marker.c_str(), nullptr);
      ::_exit(1);
    }
    char j = 0;
    if (::read(joined[0], &j, 1) != 1) ::_exit(1);
    std::string report = std::to_string(sleeper) + " " + cg->dirs()[0].string();
    if (::write(pipe_fds[1], report.data(), report.size()) != static_cast<ssize_t>(report.size())) ::_exit(1);
    ::kill(::getpid(), SIGKILL);  // no destructor runs
  }
  ::close(pipe_fds[1]);
  char buf[4096];
  ssize_t n = ::read(pipe_fds[0], buf, sizeof buf);
  ::close(pipe_fds[0]);
  ASSERT_GT(n, 0);
  std::string report(buf, static_cast<size_t>(n));
  const pid_t sleeper = std::stoi(report.substr(0, report.find(' ')));
  const fs::path left = report.substr(report.find(' ') + 1);
  int status = 0;
  ASSERT_EQ(::waitpid(runner, &status, 0), runner);
  // The next Warden to start reclaims it (this test, or any Warden starting meanwhile: the
  // owner is dead for all of them): its process killed, its directories removed. Without a
  // reclaim the sleeper would sleep for ten minutes.
  cgroups.reclaim_orphans();
  EXPECT_FALSE(fs::exists(left));
  const auto gone = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (::kill(sleeper, 0) == 0 && std::chrono::steady_clock::now() < gone) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_NE(::kill(sleeper, 0), 0) << "the orphaned run's process is still alive";
  EXPECT_EQ(count_processes_with(marker), 0);
}

}  // namespace
}  // namespace warden::test
