#include "common/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/file.h"

namespace warden {
namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kReadChunk = 64 * 1024;
// After the program exits (or is killed), how long to wait for its pipes to reach EOF.
constexpr std::chrono::milliseconds kDrainGrace{2'000};
// Without a pidfd, how often to check whether the program has exited.
constexpr int kExitPollMs = 10;

// Blocks SIGPIPE on this thread for its lifetime, and discards one raised meanwhile: a
// write to a child that closed its stdin then fails with EPIPE instead of killing us.
// (A signal a write raises is directed at the writing thread, so others are unaffected.)
class SigpipeGuard {
 public:
  SigpipeGuard() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_, &old_);
  }
  ~SigpipeGuard() {
    sigset_t pending;
    sigpending(&pending);
    if (sigismember(&pending, SIGPIPE) && !sigismember(&old_, SIGPIPE)) {
      timespec zero{0, 0};
      while (sigtimedwait(&pipe_, nullptr, &zero) < 0 && errno == EINTR) {
      }
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  SigpipeGuard(const SigpipeGuard&) = delete;
  SigpipeGuard& operator=(const SigpipeGuard&) = delete;

 private:
  sigset_t pipe_{}, old_{};
};

// Owns a spawned child: kills its process group and reaps it unless release() was called
// after a successful wait.
class ChildGuard {
 public:
  explicit ChildGuard(pid_t pid) : pid_(pid) {}
  ~ChildGuard() {
    if (pid_ <= 0) return;
    ::kill(-pid_, SIGKILL);
    reap();
  }
  ChildGuard(const ChildGuard&) = delete;
  ChildGuard& operator=(const ChildGuard&) = delete;

  pid_t pid() const { return pid_; }
  // Kills everything still in the group. Safe while the leader is an unreaped zombie: its
  // pid, and so the group id, cannot be reused yet.
  void kill_group() const { ::kill(-pid_, SIGKILL); }
  int reap() {
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
    return status;
  }
  // True once the leader has exited (it stays a zombie until reaped).
  bool exited() const {
    siginfo_t info{};
    return ::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid_;
  }

 private:
  pid_t pid_;
};

Status make_pipe(UniqueFd& read_end, UniqueFd& write_end) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return std::unexpected(errno_error("pipe2", errno));
  read_end.reset(fds[0]);
  write_end.reset(fds[1]);
  return {};
}

void set_nonblocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK); }

// posix_spawn's attribute and file-action objects, destroyed on scope exit.
struct SpawnSetup {
  posix_spawnattr_t attr;
  posix_spawn_file_actions_t actions;
  SpawnSetup() {
    posix_spawnattr_init(&attr);
    posix_spawn_file_actions_init(&actions);
  }
  ~SpawnSetup() {
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
  }
  SpawnSetup(const SpawnSetup&) = delete;
  SpawnSetup& operator=(const SpawnSetup&) = delete;
};

Result<pid_t> spawn(const SubprocessSpec& spec, int in, int out, int err) {
  SpawnSetup s;
  // Its own process group (so the group can be killed as a whole), default signal
  // dispositions and an empty mask whatever the caller has set.
  sigset_t none, all_defaults;
  sigemptyset(&none);
  sigfillset(&all_defaults);
  sigdelset(&all_defaults, SIGKILL);
  sigdelset(&all_defaults, SIGSTOP);
  int rc = posix_spawnattr_setflags(&s.attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  if (rc == 0) rc = posix_spawnattr_setpgroup(&s.attr, 0);
  if (rc == 0) rc = posix_spawnattr_setsigmask(&s.attr, &none);
  if (rc == 0) rc = posix_spawnattr_setsigdefault(&s.attr, &all_defaults);
  if (rc == 0) rc = posix_spawn_file_actions_adddup2(&s.actions, in, STDIN_FILENO);
  if (rc == 0) rc = posix_spawn_file_actions_adddup2(&s.actions, out, STDOUT_FILENO);
  if (rc == 0) rc = posix_spawn_file_actions_adddup2(&s.actions, err, STDERR_FILENO);
  // Nothing else we hold (ledger files, other agents' pipes) leaks into the agent.
  if (rc == 0) rc = posix_spawn_file_actions_addclosefrom_np(&s.actions, 3);
  if (rc == 0 && !spec.cwd.empty()) rc = posix_spawn_file_actions_addchdir_np(&s.actions, spec.cwd.c_str());
  if (rc != 0) return std::unexpected(errno_error("preparing to start " + spec.argv.front(), rc));

  std::vector<char*> argv, envp;
  for (const auto& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const auto& e : spec.env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  pid_t pid = -1;
  rc = posix_spawnp(&pid, argv[0], &s.actions, &s.attr, argv.data(), envp.data());
  if (rc != 0) {
    std::string where = spec.cwd.empty() ? "" : " (in " + spec.cwd.string() + ")";
    return std::unexpected(errno_error("cannot start " + spec.argv.front() + where, rc));
  }
  return pid;
}

// Reads what is available from `fd` into `buf`, keeping at most `cap` bytes (the rest is
// read and counted, so the writer never blocks). False at EOF or on error.
bool read_some(UniqueFd& fd, std::string& buf, size_t cap, size_t& total) {
  char chunk[kReadChunk];
  while (true) {
    ssize_t n = ::read(fd.get(), chunk, sizeof chunk);
    if (n > 0) {
      total += static_cast<size_t>(n);
      if (buf.size() < cap) buf.append(chunk, std::min(static_cast<size_t>(n), cap - buf.size()));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    fd.reset();
    return false;
  }
}

class Session {
 public:
  Session(const SubprocessSpec& spec, ChildGuard& child, UniqueFd in, UniqueFd out, UniqueFd err)
      : spec_(spec), child_(child), in_(std::move(in)), out_(std::move(out)), err_(std::move(err)) {
    // Debian 12's <sys/pidfd.h> lacks extern "C", so the raw system call. Fails on kernels
    // before 5.3; then we poll for the exit instead.
    pidfd_.reset(static_cast<int>(::syscall(SYS_pidfd_open, child.pid(), 0)));
    if (spec_.stdin_data.empty()) in_.reset();
    for (UniqueFd* fd : {&in_, &out_, &err_}) {
      if (*fd) set_nonblocking(fd->get());
    }
  }

  SubprocessResult run() {
    const auto start = Clock::now();
    const auto deadline = start + spec_.timeout;
    SubprocessResult result;
    bool exited = false;
    while (!exited) {
      auto now = Clock::now();
      if (now >= deadline || spec_.stop.stop_requested()) {
        result.ending = SubprocessResult::Ending::timed_out;
        break;
      }
      int64_t wait_ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count() + 1;
      if (spec_.stop.stop_possible()) wait_ms = std::min<int64_t>(wait_ms, 50);  // notice a stop promptly
      if (!pump(wait_ms, exited)) {
        result.ending = SubprocessResult::Ending::stdout_overflow;
        break;
      }
    }
    // Whatever is left of the group goes now: on timeout or overflow the program itself,
    // after a normal exit anything it left behind that could hold our pipes open.
    child_.kill_group();
    drain(Clock::now() + kDrainGrace);
    int status = child_.reap();
    if (exited && result.ending == SubprocessResult::Ending::exited) {
      if (WIFSIGNALED(status)) {
        result.ending = SubprocessResult::Ending::signaled;
        result.signal = WTERMSIG(status);
      } else {
        result.exit_code = WEXITSTATUS(status);
      }
    }
    if (out_total_ > spec_.max_stdout && result.ending != SubprocessResult::Ending::timed_out) {
      result.ending = SubprocessResult::Ending::stdout_overflow;
    }
    result.out = std::move(out_buf_);
    result.err = std::move(err_buf_);
    result.err_truncated = err_total_ > spec_.max_stderr;
    result.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
    return result;
  }

 private:
  // One poll round. False when stdout passed its cap.
  bool pump(int64_t timeout_ms, bool& exited) {
    pollfd fds[4];
    int n = 0, in_i = -1, out_i = -1, err_i = -1, pid_i = -1;
    if (in_) fds[in_i = n++] = {in_.get(), POLLOUT, 0};
    if (out_) fds[out_i = n++] = {out_.get(), POLLIN, 0};
    if (err_) fds[err_i = n++] = {err_.get(), POLLIN, 0};
    if (pidfd_) fds[pid_i = n++] = {pidfd_.get(), POLLIN, 0};
    int wait_ms = static_cast<int>(std::min<int64_t>(timeout_ms, pidfd_ ? 60'000 : kExitPollMs));
    int ready = ::poll(fds, static_cast<nfds_t>(n), wait_ms);
    if (ready < 0 && errno != EINTR) ready = 0;
    if (in_i >= 0 && fds[in_i].revents) write_stdin();
    if (out_i >= 0 && fds[out_i].revents) read_some(out_, out_buf_, spec_.max_stdout, out_total_);
    if (err_i >= 0 && fds[err_i].revents) read_some(err_, err_buf_, spec_.max_stderr, err_total_);
    if (out_total_ > spec_.max_stdout) return false;
    exited = pid_i >= 0 ? fds[pid_i].revents != 0 : child_.exited();
    return true;
  }

  void write_stdin() {
    const std::string& data = spec_.stdin_data;
    while (written_ < data.size()) {
      ssize_t n = ::write(in_.get(), data.data() + written_, data.size() - written_);
      if (n > 0) {
        written_ += static_cast<size_t>(n);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      break;  // EPIPE: the program does not read its input; that is its business
    }
    in_.reset();  // all written (or refused): the program sees EOF
  }

  // Reads the pipes until EOF or the deadline, once the group is dead.
  void drain(Clock::time_point deadline) {
    in_.reset();
    while ((out_ || err_) && Clock::now() < deadline) {
      pollfd fds[2];
      int n = 0;
      if (out_) fds[n++] = {out_.get(), POLLIN, 0};
      if (err_) fds[n++] = {err_.get(), POLLIN, 0};
      if (::poll(fds, static_cast<nfds_t>(n), 100) <= 0) continue;
      if (out_) read_some(out_, out_buf_, spec_.max_stdout, out_total_);
      if (err_) read_some(err_, err_buf_, spec_.max_stderr, err_total_);
    }
  }

  const SubprocessSpec& spec_;
  ChildGuard& child_;
  UniqueFd in_, out_, err_, pidfd_;
  size_t written_ = 0;
  std::string out_buf_, err_buf_;
  size_t out_total_ = 0, err_total_ = 0;
};

}  // namespace

Result<SubprocessResult> run_subprocess(const SubprocessSpec& spec) {
  if (spec.argv.empty() || spec.argv.front().empty()) return fail(Errc::invalid_argument, "no program to run");
  SigpipeGuard sigpipe;
  UniqueFd in_r, in_w, out_r, out_w, err_r, err_w;
  for (auto [r, w] : {std::pair{&in_r, &in_w}, std::pair{&out_r, &out_w}, std::pair{&err_r, &err_w}}) {
    if (auto st = make_pipe(*r, *w); !st) return std::unexpected(st.error());
  }
  auto pid = spawn(spec, in_r.get(), out_w.get(), err_w.get());
  if (!pid) return std::unexpected(pid.error());
  ChildGuard child(*pid);
  // Our copies of the child's ends must close, or we would never see EOF.
  in_r.reset();
  out_w.reset();
  err_w.reset();
  Session session(spec, child, std::move(in_w), std::move(out_r), std::move(err_r));
  return session.run();
}

}  // namespace warden
