#include "runner/sandbox_process.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <grp.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace warden {
namespace {

// The steps the child reports when one fails (indexes into kStepNames).
enum Step : int {
  kReaper, kSetpgid, kSignals, kStdio, kSetgroups, kSetgid, kSetuid, kDumpable, kUnshare, kSetgroupsDeny, kUidMap,
  kGidMap, kMountPrivate, kMountOverlay, kRlimit, kDeathSignal, kExec,
};
constexpr const char* kStepNames[] = {
    "start the reaper (fork, PR_SET_CHILD_SUBREAPER)", "setpgid", "reset signals", "set up stdio", "setgroups", "setgid (drop to the sandbox uid)",
    "setuid (drop to the sandbox uid)", "prctl(PR_SET_DUMPABLE)", "unshare(user+mount namespace) for the overlay",
    "write /proc/self/setgroups", "write /proc/self/uid_map", "write /proc/self/gid_map", "make mounts private",
    "mount the overlay workspace (its layers and their parent directories must be searchable by the sandbox's uid)", "setrlimit", "prctl(PR_SET_PDEATHSIG)", "execute bwrap",
};

struct ChildFailure {
  int step = 0;
  int err = 0;
};

// Everything the child needs, built before fork: the child may not allocate.
struct ChildPlan {
  std::vector<std::string> argv_storage;
  std::vector<char*> argv;
  std::vector<char*> envp;
  std::string uid_map, gid_map, overlay_options, overlay_target;
  const SpawnSpec* spec = nullptr;
  pid_t parent = 0;
};

[[noreturn]] void child_fail(int report, int step) {
  ChildFailure f{step, errno};
  [[maybe_unused]] ssize_t n = ::write(report, &f, sizeof f);
  ::_exit(127);
}

bool write_proc(const char* path, const std::string& text) {
  int fd = ::open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  int saved = errno;
  ::close(fd);
  errno = saved;
  return ok;
}

// Runs in the forked child: only async-signal-safe calls until execve.
[[noreturn]] void child_main(const ChildPlan& plan, int report, pid_t parent) {
  const SpawnSpec& spec = *plan.spec;
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
  int sources[3 + 16];
  size_t count = 0;
  sources[count++] = stdin_fd;
  sources[count++] = spec.stdout_fd;
  sources[count++] = spec.stderr_fd;
  for (int fd : spec.pass_fds) {
    if (count == sizeof sources / sizeof sources[0]) child_fail(report, kStdio);
    sources[count++] = fd;
  }
  int high[sizeof sources / sizeof sources[0]];
  for (size_t i = 0; i < count; ++i) {
    high[i] = ::fcntl(sources[i], F_DUPFD_CLOEXEC, kHigh + static_cast<int>(i) * 2);
    if (high[i] < 0) child_fail(report, kStdio);
  }
  int moved_report = ::fcntl(report, F_DUPFD_CLOEXEC, kHigh + 64);
  if (moved_report < 0) child_fail(report, kStdio);
  report = moved_report;
  for (size_t i = 0; i < count; ++i) {
    if (::dup2(high[i], static_cast<int>(i)) < 0) child_fail(report, kStdio);
  }
  ::close_range(static_cast<unsigned>(count), ~0u, CLOSE_RANGE_CLOEXEC);

  if (spec.drop_gid) {
    if (::setgroups(0, nullptr) != 0) child_fail(report, kSetgroups);
    if (::setresgid(*spec.drop_gid, *spec.drop_gid, *spec.drop_gid) != 0) child_fail(report, kSetgid);
  }
  if (spec.drop_uid && ::setresuid(*spec.drop_uid, *spec.drop_uid, *spec.drop_uid) != 0) child_fail(report, kSetuid);

  if (spec.overlay) {
    // After a uid change the kernel makes /proc/self/* root-owned; the id maps below must
    // be writable by us. (exec of bwrap, which is not setuid, would set this anyway.)
    if (::prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) != 0) child_fail(report, kDumpable);
    if (::unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) child_fail(report, kUnshare);
    if (!write_proc("/proc/self/setgroups", "deny")) child_fail(report, kSetgroupsDeny);
    if (!write_proc("/proc/self/uid_map", plan.uid_map)) child_fail(report, kUidMap);
    if (!write_proc("/proc/self/gid_map", plan.gid_map)) child_fail(report, kGidMap);
    // Nothing mounted here may propagate back to the host.
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) child_fail(report, kMountPrivate);
    if (::mount("overlay", plan.overlay_target.c_str(), "overlay", MS_NOSUID | MS_NODEV, plan.overlay_options.c_str()) != 0) {
      child_fail(report, kMountOverlay);
    }
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
  pid_t sandbox = ::fork();
  if (sandbox < 0) child_fail(report, kReaper);
  if (sandbox == 0) child_main(plan, report, self);
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

}  // namespace

Result<SandboxChild> SandboxChild::spawn(const SpawnSpec& spec) {
  if (spec.argv.empty()) return fail(Errc::invalid_argument, "sandbox spawn: empty argv");
  ChildPlan plan;
  plan.spec = &spec;
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
    std::string lowers;
    for (const auto& l : spec.overlay->lowers) lowers += (lowers.empty() ? "" : ":") + l;
    plan.overlay_options = "lowerdir=" + lowers + ",upperdir=" + spec.overlay->upper + ",workdir=" + spec.overlay->work +
                           ",userxattr";
    plan.overlay_target = spec.overlay->target;
  }
  plan.parent = ::getpid();

  int report_fds[2];
  if (::pipe2(report_fds, O_CLOEXEC) != 0) return std::unexpected(errno_error("pipe2", errno));
  UniqueFd report_r(report_fds[0]), report_w(report_fds[1]);

  pid_t pid = ::fork();
  if (pid < 0) return std::unexpected(errno_error("fork", errno));
  if (pid == 0) reaper_main(plan, report_w.get());

  SandboxChild child;
  child.pid_ = pid;
  child.reaped_ = false;
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
  child.pidfd_.reset(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  return child;
}

SandboxChild::SandboxChild(SandboxChild&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)), pidfd_(std::move(other.pidfd_)), reaped_(std::exchange(other.reaped_, true)) {}

SandboxChild::~SandboxChild() {
  if (!reaped_) {
    stop();
    reap();
  }
}

bool SandboxChild::exited() {
  if (reaped_) return true;
  siginfo_t info{};
  if (::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) != 0) return false;
  return info.si_pid == pid_;
}

void SandboxChild::stop() {
  if (!reaped_) ::kill(pid_, SIGUSR1);
}

int SandboxChild::reap() {
  if (reaped_) return 0;
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  reaped_ = true;
  return status;
}

}  // namespace warden
