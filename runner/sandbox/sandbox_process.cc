#include "runner/sandbox/sandbox_process.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/single_threaded.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <grp.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

namespace warden {
namespace {

// The steps the child reports when one fails (indexes into kStepNames).
enum Step : int {
  kReaper, kCgroup, kSetpgid, kSignals, kStdio, kSetgroups, kSetgid, kSetuid, kUnshare, kMapSync, kSetgroupsDeny, kUidMap,
  kGidMap, kMountPrivate, kOpenLayer, kMountOverlay, kRlimit, kDeathSignal, kExec,
};
constexpr const char* kStepNames[] = {
    "start the reaper (fork, PR_SET_CHILD_SUBREAPER)", "join the run's cgroup", "setpgid", "reset signals", "set up stdio", "setgroups", "setgid (drop to the sandbox uid)",
    "setuid (drop to the sandbox uid)", "unshare(user+mount namespace) for the overlay", "wait for the reaper to write the id maps",
    "write /proc/<pid>/setgroups", "write /proc/<pid>/uid_map", "write /proc/<pid>/gid_map", "make mounts private",
    "open an overlay layer (its directories must exist and be reachable by Warden's uid)",
    "mount the overlay workspace (its layers and work directory must be owned by the sandbox's uid)", "setrlimit", "prctl(PR_SET_PDEATHSIG)", "execute bwrap",
};

// The overlay's directories (lowers, then upper, then work) are opened by the child while it
// still has Warden's uid, onto these fixed descriptors, and named to overlayfs as
// /proc/self/fd/N: they need not be reachable by the sandbox's uid, so the base checkouts can
// live where only Warden reaches them (base_checkout.h).
constexpr int kFirstLayerFd = 1100;
constexpr size_t kMaxLayers = 16;

struct ChildFailure {
  int step = 0;
  int err = 0;
};

// How many descriptors a sandbox may be handed (SpawnSpec::pass_fds): their moved copies,
// from 1000 up, stay below the overlay's layers at kFirstLayerFd.
constexpr size_t kMaxPassedFds = 40;

// Everything the child needs, built before fork: the child may not allocate.
struct ChildPlan {
  std::vector<std::string> argv_storage;
  // Room for the child's descriptor shuffle (stdin, stdout, stderr, then pass_fds): sources,
  // then their moved copies. The child writes its own copy (or, sharing memory, this one
  // while the caller waits).
  std::vector<int> fd_room;
  std::vector<char*> argv;
  std::vector<char*> envp;
  std::string uid_map, gid_map, overlay_options, overlay_target;
  std::vector<const char*> layers;  // lowers, upper, work: opened onto kFirstLayerFd + i
  const SpawnSpec* spec = nullptr;
  int seccomp = -1;  // SpawnSpec::seccomp: the read end of its pipe, handed on as descriptor 3
  pid_t parent = 0;
};

// The child of a sandbox reaped here shares the caller's memory until it executes bwrap
// (spawn_sharing_memory): its code is kept out of the address sanitizer's bookkeeping, whose
// shadow of that borrowed stack would otherwise outlive it.
#define WARDEN_CHILD_CODE __attribute__((no_sanitize("address")))

WARDEN_CHILD_CODE [[noreturn]] void child_fail(int report, int step) {
  ChildFailure f{step, errno};
  [[maybe_unused]] ssize_t n = ::write(report, &f, sizeof f);
  ::_exit(127);
}

// Runs in the forked child: only async-signal-safe calls until execve.
// `map_sync`, `map_ack`: the pipe ends to and from the reaper, which writes the id maps of
// the overlay's user namespace (see reaper_main).
WARDEN_CHILD_CODE [[noreturn]] void child_main(const ChildPlan& plan, int report, int map_sync, int map_ack, pid_t parent) {
  const SpawnSpec& spec = *plan.spec;
  // First: every process of the run descends from this one, so all of them are in the cgroup.
  for (int fd : spec.cgroup_procs_fds) {
    if (::write(fd, "0", 1) != 1) child_fail(report, kCgroup);
  }
  if (::setpgid(0, 0) != 0) child_fail(report, kSetpgid);

  // Ignored signals and the blocked mask survive exec; the sandbox starts from defaults.
  sigset_t none;
  sigemptyset(&none);
  if (::sigprocmask(SIG_SETMASK, &none, nullptr) != 0) child_fail(report, kSignals);
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig != SIGKILL && sig != SIGSTOP) ::sigaction(sig, &dfl, nullptr);
  }

  // Move every descriptor we hand on above the target range first, so no dup2 overwrites a
  // source that is still needed; then place them and mark everything else close-on-exec.
  constexpr int kHigh = 1000;
  int stdin_fd = spec.stdin_fd >= 0 ? spec.stdin_fd : ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (stdin_fd < 0) child_fail(report, kStdio);
  const size_t first_passed = plan.seccomp >= 0 ? 4 : 3;
  const size_t count = first_passed + spec.pass_fds.size();
  if (plan.fd_room.size() < 2 * count) child_fail(report, kStdio);
  int* sources = const_cast<int*>(plan.fd_room.data());
  int* high = sources + count;
  sources[0] = stdin_fd;
  sources[1] = spec.stdout_fd;
  sources[2] = spec.stderr_fd;
  if (plan.seccomp >= 0) sources[3] = plan.seccomp;
  for (size_t i = 0; i < spec.pass_fds.size(); ++i) sources[first_passed + i] = spec.pass_fds[i];
  for (size_t i = 0; i < count; ++i) {
    high[i] = ::fcntl(sources[i], F_DUPFD_CLOEXEC, kHigh + static_cast<int>(i) * 2);
    if (high[i] < 0) child_fail(report, kStdio);
  }
  int moved_report = ::fcntl(report, F_DUPFD_CLOEXEC, kHigh + 64);
  if (moved_report < 0) child_fail(report, kStdio);
  report = moved_report;
  if (spec.overlay) {
    map_sync = ::fcntl(map_sync, F_DUPFD_CLOEXEC, kHigh + 66);
    map_ack = ::fcntl(map_ack, F_DUPFD_CLOEXEC, kHigh + 68);
    if (map_sync < 0 || map_ack < 0) child_fail(report, kStdio);
  }
  for (size_t i = 0; i < count; ++i) {
    if (::dup2(high[i], static_cast<int>(i)) < 0) child_fail(report, kStdio);
  }
  ::close_range(static_cast<unsigned>(count), ~0u, CLOSE_RANGE_CLOEXEC);

  // The overlay's namespaces come before the uid drop: the new user namespace then belongs to
  // Warden's uid (other processes of the sandbox's uid hold no capability in it), and the
  // layers are opened with Warden's uid, in the new mount namespace (overlayfs takes only
  // directories of the mounter's own namespace). The reaper writes the id maps: a process
  // inside a namespace may map no uid but its own.
  if (spec.drop_gid && ::setgroups(0, nullptr) != 0) child_fail(report, kSetgroups);
  if (spec.overlay) {
    if (::unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) child_fail(report, kUnshare);
    ChildFailure mapped{-1, 0};
    if (::write(map_sync, "u", 1) != 1 || ::read(map_ack, &mapped, sizeof mapped) != static_cast<ssize_t>(sizeof mapped)) {
      child_fail(report, kMapSync);
    }
    if (mapped.step >= 0) {
      errno = mapped.err;
      child_fail(report, mapped.step);
    }
    // Nothing mounted here may propagate back to the host.
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) child_fail(report, kMountPrivate);
    for (size_t i = 0; i < plan.layers.size(); ++i) {
      int fd = ::open(plan.layers[i], O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (fd < 0 || ::dup3(fd, kFirstLayerFd + static_cast<int>(i), O_CLOEXEC) < 0) child_fail(report, kOpenLayer);
      ::close(fd);
    }
  }
  if (spec.drop_gid && ::setresgid(*spec.drop_gid, *spec.drop_gid, *spec.drop_gid) != 0) child_fail(report, kSetgid);
  // In the overlay's namespace Warden's uid is unmapped, so this keeps the namespace's
  // capabilities for the mount below; exec clears them.
  // Not dumpable before the uid changes, so no process of the sandbox's uid can attach in the
  // moment before exec (whatever fs.suid_dumpable says); sharing the caller's memory, that
  // would be writing Warden's own. exec sets it afresh for bwrap.
  if (spec.drop_uid && ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) child_fail(report, kSetuid);
  if (spec.drop_uid && ::setresuid(*spec.drop_uid, *spec.drop_uid, *spec.drop_uid) != 0) child_fail(report, kSetuid);
  if (spec.overlay) {
    // Mounted as the sandbox's uid: overlayfs works on the layers with the mounter's rights.
    if (::mount("overlay", plan.overlay_target.c_str(), "overlay", MS_NOSUID | MS_NODEV, plan.overlay_options.c_str()) != 0) {
      child_fail(report, kMountOverlay);
    }
    // The mount holds the layers now; the sandbox must never hold a way to them.
    for (size_t i = 0; i < plan.layers.size(); ++i) ::close(kFirstLayerFd + static_cast<int>(i));
  }

  for (const auto& [resource, value] : spec.rlimits) {
    if (::setrlimit(resource, &value) != 0) child_fail(report, kRlimit);
  }
  // If the reaper (which dies with the runner) dies, bwrap dies, and bwrap's
  // --die-with-parent takes the sandbox with it. Set after the uid change, which clears it.
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) child_fail(report, kDeathSignal);
  if (::getppid() != parent) ::_exit(127);
  ::execve(plan.argv[0], plan.argv.data(), plan.envp.data());
  child_fail(report, kExec);
}

// Writes "<prefix><pid><suffix>" into `out` (async-signal-safe); false when it does not fit.
bool proc_path(char* out, size_t size, pid_t pid, const char* file) {
  char digits[16];
  size_t n = 0;
  for (unsigned long v = static_cast<unsigned long>(pid); n == 0 || v != 0; v /= 10) digits[n++] = static_cast<char>('0' + v % 10);
  size_t len = 0;
  auto put = [&](char c) {
    if (len + 1 < size) out[len++] = c;
  };
  for (const char* p = "/proc/"; *p; ++p) put(*p);
  while (n > 0) put(digits[--n]);
  put('/');
  for (const char* p = file; *p; ++p) put(*p);
  out[len] = '\0';
  return len + 1 < size;
}

// The reaper's part of the overlay's user namespace: the child's setgroups, uid and gid maps
// (the sandbox's ids mapped to themselves), written from the parent namespace, where Warden's
// rights are. {-1, 0} when all were written, else the step that failed and its errno.
ChildFailure write_id_maps(const ChildPlan& plan, pid_t child) {
  struct Map {
    const char* file;
    const char* text;
    size_t size;
    int step;
  };
  const Map maps[] = {{"setgroups", "deny", 4, kSetgroupsDeny},
                      {"uid_map", plan.uid_map.data(), plan.uid_map.size(), kUidMap},
                      {"gid_map", plan.gid_map.data(), plan.gid_map.size(), kGidMap}};
  for (const Map& m : maps) {
    char path[64];
    if (!proc_path(path, sizeof path, child, m.file)) return ChildFailure{m.step, ENAMETOOLONG};
    int fd = ::open(path, O_WRONLY | O_CLOEXEC);
    bool ok = fd >= 0 && ::write(fd, m.text, m.size) == static_cast<ssize_t>(m.size);
    int err = errno;
    if (fd >= 0) ::close(fd);
    if (!ok) return ChildFailure{m.step, err};
  }
  return ChildFailure{-1, 0};
}

// The reaper: the runner's direct child, a child subreaper whose own child becomes bwrap.
// bwrap exits as soon as the command does, leaving its PID-namespace init to die a moment
// later; orphans are reparented to the nearest subreaper, so they come here and are reaped
// here (never left as zombies under an init that may not reap, where they would count
// against RLIMIT_NPROC). The reaper exits only when it has no children left, so its exit
// means the whole sandbox is gone. SIGUSR1 from the runner makes it SIGKILL bwrap's process
// group (bwrap and its namespace init; the command's own session dies with the namespace).
[[noreturn]] void reaper_main(const ChildPlan& plan, int report) {
  sigset_t waitset;
  sigemptyset(&waitset);
  sigaddset(&waitset, SIGCHLD);
  sigaddset(&waitset, SIGUSR1);
  // Blocked before anything can arrive, and consumed with sigwaitinfo below.
  if (::sigprocmask(SIG_BLOCK, &waitset, nullptr) != 0) child_fail(report, kReaper);
  if (::setpgid(0, 0) != 0) child_fail(report, kSetpgid);
  if (::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0) child_fail(report, kReaper);
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) child_fail(report, kDeathSignal);
  if (::getppid() != plan.parent) ::_exit(127);
  pid_t self = ::getpid();
  int sync_fds[2] = {-1, -1}, ack_fds[2] = {-1, -1};
  if (plan.spec->overlay && (::pipe2(sync_fds, O_CLOEXEC) != 0 || ::pipe2(ack_fds, O_CLOEXEC) != 0)) child_fail(report, kReaper);
  pid_t sandbox = ::fork();
  if (sandbox < 0) child_fail(report, kReaper);
  if (sandbox == 0) {
    // Each side keeps only its own ends, so a read sees EOF when the other side is gone.
    if (plan.spec->overlay) {
      ::close(sync_fds[0]);
      ::close(ack_fds[1]);
    }
    child_main(plan, report, sync_fds[1], ack_fds[0], self);
  }
  if (plan.spec->overlay) {
    ::close(sync_fds[1]);
    ::close(ack_fds[0]);
    // The child has made its user namespace when it writes; it waits for our answer.
    char unshared;
    if (::read(sync_fds[0], &unshared, 1) == 1) {
      ChildFailure mapped = write_id_maps(plan, sandbox);
      [[maybe_unused]] ssize_t n = ::write(ack_fds[1], &mapped, sizeof mapped);
    }
  }
  // Nothing of the runner's stays open here: pipes must reach EOF when the sandbox ends.
  ::close_range(0, ~0u, 0);
  int status = 0;
  bool sandbox_done = false;
  for (;;) {
    int st = 0;
    pid_t got = ::waitpid(-1, &st, WNOHANG);
    if (got > 0) {
      if (got == sandbox) {
        status = st;
        sandbox_done = true;
      }
      continue;
    }
    if (got < 0 && errno == ECHILD) break;
    if (got < 0 && errno == EINTR) continue;
    siginfo_t info;
    if (::sigwaitinfo(&waitset, &info) == SIGUSR1 && !sandbox_done) {
      ::kill(-sandbox, SIGKILL);
      ::kill(sandbox, SIGKILL);
    }
  }
  if (WIFEXITED(status)) ::_exit(WEXITSTATUS(status));
  // Die as bwrap died, so the runner sees the same status.
  int sig = WTERMSIG(status);
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  ::sigaction(sig, &dfl, nullptr);
  sigset_t all;
  sigfillset(&all);
  ::sigprocmask(SIG_UNBLOCK, &all, nullptr);
  ::kill(::getpid(), sig);
  ::_exit(128 + sig);
}

struct SharedChild {
  const ChildPlan* plan;
  int report;
};

WARDEN_CHILD_CODE int shared_child_main(void* arg) {
  const auto* c = static_cast<const SharedChild*>(arg);
  child_main(*c->plan, c->report, -1, -1, c->plan->parent);
}

// Starts child_main as vfork() would: in this process's memory, on a stack of its own, with
// this thread suspended until the child executes bwrap or exits. Nothing of the caller's
// address space is copied, so neither side pays for copying page tables, for faults on
// pages written after a fork, or for tearing a copy down at exec. Safe because the caller is
// single-threaded and suspended meanwhile; the child touches only its own stack and makes
// system calls (errno aside, which it writes only on its way to failing).
pid_t spawn_sharing_memory(const ChildPlan& plan, int report) {
  constexpr size_t kStack = 256 << 10;
  void* stack = ::mmap(nullptr, kStack, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (stack == MAP_FAILED) return -1;
  SharedChild arg{&plan, report};
  pid_t pid = ::clone(shared_child_main, static_cast<char*>(stack) + kStack, CLONE_VM | CLONE_VFORK | SIGCHLD, &arg);
  int err = errno;
  ::munmap(stack, kStack);
  errno = err;
  return pid;
}

// Whether this process has no child at all, living or dead (waitid says ECHILD).
bool no_children() {
  siginfo_t info{};
  return ::waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) != 0 && errno == ECHILD;
}

}  // namespace

Result<SandboxChild> SandboxChild::spawn(const SpawnSpec& spec) {
  if (spec.argv.empty()) return fail(Errc::invalid_argument, "sandbox spawn: empty argv");
  if (const size_t handed = spec.pass_fds.size() + (spec.seccomp ? 1 : 0); handed > kMaxPassedFds) {
    return fail(Errc::invalid_argument, "sandbox spawn: " + std::to_string(handed) +
                                            " descriptors to hand the sandbox (its seccomp program, its own inputs, the "
                                            "profile's files); at most " + std::to_string(kMaxPassedFds));
  }
  // With SIGCHLD ignored the kernel reaps children unasked: no status would ever come back
  // (a reaper waiting for one would wait for good, and a run would be judged on none).
  struct sigaction chld {};
  if (::sigaction(SIGCHLD, nullptr, &chld) == 0 && (chld.sa_handler == SIG_IGN || (chld.sa_flags & SA_NOCLDWAIT) != 0)) {
    return fail(Errc::invalid_argument,
                "sandbox spawn: SIGCHLD is ignored in this process (SIG_IGN or SA_NOCLDWAIT), so no exit status could "
                "be collected; restore its default disposition");
  }
  ChildPlan plan;
  plan.spec = &spec;
  plan.fd_room.resize(2 * (4 + spec.pass_fds.size()));
  plan.argv_storage = spec.argv;
  for (auto& a : plan.argv_storage) plan.argv.push_back(a.data());
  plan.argv.push_back(nullptr);
  static char kPath[] = "PATH=/usr/sbin:/usr/bin:/sbin:/bin";
  plan.envp = {kPath, nullptr};
  if (spec.overlay) {
    uid_t uid = spec.drop_uid.value_or(::getuid());
    gid_t gid = spec.drop_gid.value_or(::getgid());
    // Identity maps: inside, we are who we are outside, with the capabilities a new user
    // namespace grants until exec — enough to mount, nothing more.
    plan.uid_map = std::to_string(uid) + " " + std::to_string(uid) + " 1\n";
    plan.gid_map = std::to_string(gid) + " " + std::to_string(gid) + " 1\n";
    if (spec.overlay->lowers.empty() || spec.overlay->lowers.size() + 2 > kMaxLayers) {
      return fail(Errc::invalid_argument, "sandbox spawn: an overlay takes 1 to " + std::to_string(kMaxLayers - 2) + " lower layers");
    }
    auto layer = [&](const std::string& path) {
      plan.layers.push_back(path.c_str());
      return "/proc/self/fd/" + std::to_string(kFirstLayerFd + static_cast<int>(plan.layers.size()) - 1);
    };
    std::string lowers;
    for (const auto& l : spec.overlay->lowers) lowers += (lowers.empty() ? "" : ":") + layer(l);
    std::string upper = layer(spec.overlay->upper), work = layer(spec.overlay->work);
    plan.overlay_options = "lowerdir=" + lowers + ",upperdir=" + upper + ",workdir=" + work + ",userxattr";
    plan.overlay_target = spec.overlay->target;
  }
  plan.parent = ::getpid();

  // The seccomp program's pipe: the gate (SpawnSpec::seccomp). Only the child's copy of the
  // read end outlives exec; the write end stays here alone.
  UniqueFd gate_read, gate_write;
  if (spec.seccomp) {
    int ends[2];
    if (::pipe2(ends, O_CLOEXEC) != 0) return std::unexpected(errno_error("pipe2 (the seccomp program's)", errno));
    gate_read.reset(ends[0]);
    gate_write.reset(ends[1]);
    // Room for the whole program, so that release() is one write that never waits.
    const auto size = static_cast<int>(std::max<size_t>(spec.seccomp->size(), 1));
    if (::fcntl(gate_write.get(), F_GETPIPE_SZ) < size && ::fcntl(gate_write.get(), F_SETPIPE_SZ, size) < size) {
      return std::unexpected(errno_error("a pipe for the " + std::to_string(size) + "-byte seccomp program", errno));
    }
    plan.seccomp = gate_read.get();
  }

  int report_fds[2];
  if (::pipe2(report_fds, O_CLOEXEC) != 0) return std::unexpected(errno_error("pipe2", errno));
  UniqueFd report_r(report_fds[0]), report_w(report_fds[1]);

  // Reaping here needs the process to itself: another thread would be copied into no child
  // and could take SIGCHLD, another child would be taken by waitpid(-1). The overlay's id
  // maps need a parent that is free to write them while the child waits.
  SandboxChild child;
  if (spec.reap_here && !spec.overlay && __libc_single_threaded && no_children()) {
    Here here{};
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    if (::sigprocmask(SIG_BLOCK, &chld, &here.old_mask) != 0) return std::unexpected(errno_error("sigprocmask", errno));
    UniqueFd events(::signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK));
    if (!events || ::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0) {
      int err = errno;
      ::sigprocmask(SIG_SETMASK, &here.old_mask, nullptr);
      return std::unexpected(errno_error(events ? "prctl(PR_SET_CHILD_SUBREAPER)" : "signalfd", err));
    }
    pid_t pid = spawn_sharing_memory(plan, report_w.get());
    if (pid < 0) {
      int err = errno;
      ::sigprocmask(SIG_SETMASK, &here.old_mask, nullptr);
      return std::unexpected(errno_error("clone", err));
    }
    child.here_.emplace(here);
    child.pidfd_ = std::move(events);
    child.pid_ = pid;
  } else {
    pid_t pid = ::fork();
    if (pid < 0) return std::unexpected(errno_error("fork", errno));
    if (pid == 0) reaper_main(plan, report_w.get());
    child.pid_ = pid;
  }
  child.reaped_ = false;
  if (spec.seccomp) {
    child.seccomp_ = *spec.seccomp;
    child.gate_read_ = std::move(gate_read);
    child.gate_write_ = std::move(gate_write);
  }
  report_w.reset();
  ChildFailure failure;
  ssize_t n;
  do n = ::read(report_r.get(), &failure, sizeof failure);
  while (n < 0 && errno == EINTR);
  if (n == static_cast<ssize_t>(sizeof failure)) {
    child.reap();
    int step = failure.step >= 0 && failure.step <= kExec ? failure.step : kExec;
    return fail(failure.err == ENOENT && step == kExec ? Errc::not_found : Errc::io_error,
                std::string("sandbox setup failed: ") + kStepNames[step] + ": " + std::strerror(failure.err));
  }
  // Debian 12's <sys/pidfd.h> lacks extern "C": the raw system call.
  if (!child.here_) child.pidfd_.reset(static_cast<int>(::syscall(SYS_pidfd_open, child.pid_, 0)));
  return child;
}

SandboxChild::SandboxChild(SandboxChild&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)),
      pidfd_(std::move(other.pidfd_)),
      reaped_(std::exchange(other.reaped_, true)),
      here_(std::exchange(other.here_, std::nullopt)),
      seccomp_(other.seccomp_),
      gate_read_(std::move(other.gate_read_)),
      gate_write_(std::move(other.gate_write_)) {}

bool SandboxChild::release() {
  if (!gate_write_) return false;
  // bwrap takes the program at EOF, not before: the write end stays open until all of it is
  // in the pipe. The pipe has room for all of it, so this is one write that never waits; a
  // short one is finished, a failed one stops the sandbox. (A process
  // killed in the middle of the copy would leave a prefix; libseccomp's programs begin with an
  // architecture check that jumps to their last instruction, so the kernel refuses every
  // proper prefix, and the test Seccomp.EveryProperPrefixIsRefused holds that.)
  size_t done = 0;
  while (done < seccomp_.size()) {
    ssize_t n = ::write(gate_write_.get(), seccomp_.data() + done, seccomp_.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      // As the destructor stops a sandbox never released: killed first, then EOF (on a part
      // of a program, which the kernel refuses), then reaped.
      int err = errno;
      stop();
      gate_write_.reset();
      gate_read_.reset();
      reap();
      errno = err;
      return false;
    }
    done += static_cast<size_t>(n);
  }
  gate_write_.reset();  // EOF: bwrap has the program
  gate_read_.reset();
  return true;
}

SandboxChild::~SandboxChild() {
  if (!reaped_) {
    stop();
    // A sandbox never released: EOF on its program now, before waiting. bwrap's namespace
    // init, held there, has no parent-death signal yet; were its outer process already gone
    // (killed, OOM), the kill above would miss it and it would wait for the program for good,
    // and reap() for it. With EOF it reads an empty program, which the kernel refuses, and dies.
    gate_write_.reset();
    gate_read_.reset();
    reap();
  }
}

bool SandboxChild::reap_children(bool block) {
  for (;;) {
    int status = 0;
    pid_t got = ::waitpid(-1, &status, block ? 0 : WNOHANG);
    if (got == pid_) here_->bwrap_status = status;
    if (got > 0) continue;  // bwrap, or an orphan of the sandbox reparented here
    if (got == 0) return false;
    if (errno != EINTR) return true;  // ECHILD: nothing of the sandbox is left
  }
}

bool SandboxChild::exited() {
  if (reaped_) return true;
  if (here_) {
    // Drained first: a child that ends after this raises SIGCHLD again, and the next poll sees it.
    signalfd_siginfo info;
    while (::read(pidfd_.get(), &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
    }
    return reap_children(false);
  }
  siginfo_t info{};
  if (::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) != 0) return false;
  return info.si_pid == pid_;
}

void SandboxChild::stop() {
  if (reaped_) return;
  if (!here_) {
    ::kill(pid_, SIGUSR1);
  } else if (!here_->bwrap_status) {
    // What the reaper does on SIGUSR1. Once bwrap is reaped its pid may be anyone's.
    ::kill(-pid_, SIGKILL);
    ::kill(pid_, SIGKILL);
  }
}

int SandboxChild::reap() {
  if (reaped_) return 0;
  if (here_) {
    reap_children(true);
    // A SIGCHLD still pending is consumed here rather than delivered once unblocked.
    signalfd_siginfo info;
    while (::read(pidfd_.get(), &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
    }
    ::sigprocmask(SIG_SETMASK, &here_->old_mask, nullptr);
    pidfd_.reset();
    reaped_ = true;
    // Always set by now (only this process reaps bwrap); were it not, a failure, never a pass.
    return here_->bwrap_status.value_or(127 << 8);
  }
  int status = 0;
  pid_t got;
  while ((got = ::waitpid(pid_, &status, 0)) < 0 && errno == EINTR) {
  }
  reaped_ = true;
  // Someone else reaped the reaper (a waitpid(-1) elsewhere in the process): its status is
  // lost, and a lost status is a failure, never a pass.
  if (got != pid_) return 127 << 8;
  return status;
}

}  // namespace warden
