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
#include "common/sigpipe_guard.h"

namespace warden {
namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kReadChunk = 64 * 1024;
// After the program exits (or is killed), how long to wait for its pipes to reach EOF.
constexpr std::chrono::milliseconds kDrainGrace{2'000};
// Without a pidfd, how often to check whether the program has exited.
constexpr int kExitPollMs = 10;

// A child spawned in its own process group. Owns it: the destructor kills the group and
// reaps the child unless drive() already did.
class GroupChild final : public ChildProcess {
 public:
  explicit GroupChild(pid_t pid) : pid_(pid) {
    // Debian 12's <sys/pidfd.h> lacks extern "C", so the raw system call. Fails on kernels
    // before 5.3; then drive() polls for the exit instead.
    pidfd_.reset(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  }
  ~GroupChild() override {
    if (pid_ <= 0) return;
    stop();
    reap();
  }
  GroupChild(const GroupChild&) = delete;
  GroupChild& operator=(const GroupChild&) = delete;

  int pidfd() const override { return pidfd_.get(); }
  bool exited() override {
    siginfo_t info{};
    return ::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid_;
  }
  // Kills everything in the group. Safe while the leader is an unreaped zombie: its pid, and
  // so the group id, cannot be reused yet.
  void stop() override { ::kill(-pid_, SIGKILL); }
  // Whatever the program left running in its group could hold our pipes open or outlive
  // the call, so it goes first (the leader is still a zombie, see stop()).
  int reap() override {
    stop();
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
    return status;
  }

 private:
  pid_t pid_;
  UniqueFd pidfd_;
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

// One drive() call: the child, its pipes and what has happened so far.
class Driver {
 public:
  Driver(ChildProcess& child, ChildPipes pipes, const DriveOptions& options)
      : child_(child), options_(options), in_(std::move(pipes.in)), in_data_(pipes.in_data) {
    streams_[0] = {std::move(pipes.out), &options.out};
    streams_[1] = {std::move(pipes.err), &options.err};
    if (in_data_.empty()) in_.reset();
    for (UniqueFd* fd : {&in_, &streams_[0].fd, &streams_[1].fd}) {
      if (*fd) set_nonblocking(fd->get());
    }
  }

  // The run ends when the child has been reaped and both output pipes are at EOF, or when
  // the grace period after an exit or a stop runs out first.
  Result<DriveOutcome> run() {
    const auto deadline = options_.start + options_.timeout;
    while (streams_[0].fd || streams_[1].fd || !exited_) {
      auto now = Clock::now();
      if (!grace_end_ && now >= deadline) end_with(DriveOutcome::Ending::timed_out);
      if (!grace_end_ && options_.stop.stop_requested()) end_with(DriveOutcome::Ending::cancelled);
      if (grace_end_ && now >= *grace_end_) {
        outcome_.outlived = true;
        break;
      }
      auto until = grace_end_ ? *grace_end_ : deadline;
      int wait_ms = static_cast<int>(std::clamp<int64_t>(
          std::chrono::duration_cast<std::chrono::milliseconds>(until - now).count() + 1, 0, 60'000));
      if (child_.pidfd() < 0 && !exited_) wait_ms = std::min(wait_ms, kExitPollMs);
      if (options_.stop.stop_possible() && !grace_end_) wait_ms = std::min(wait_ms, 50);  // notice a stop promptly
      if (Status st = poll_once(wait_ms); !st) return std::unexpected(st.error());
      if (!exited_ && child_.exited()) {
        exited_ = true;
        outcome_.wait_status = child_.reap();
        start_grace();
      }
    }
    outcome_.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - options_.start);
    return outcome_;
  }

 private:
  struct Stream {
    UniqueFd fd;
    const StreamSink* sink = nullptr;
  };

  // Stops the child for `why` and starts the grace period; the first reason is the one
  // reported.
  void end_with(DriveOutcome::Ending why) {
    if (grace_end_) return;
    outcome_.ending = why;
    child_.stop();
    start_grace();
  }

  void start_grace() {
    in_.reset();  // nobody is listening any more
    if (!grace_end_) grace_end_ = Clock::now() + options_.grace;
  }

  Status poll_once(int wait_ms) {
    pollfd fds[4];
    int index[4];  // 0, 1: the output streams; 2: stdin; 3: the pidfd
    nfds_t n = 0;
    for (int i = 0; i < 2; ++i) {
      if (streams_[i].fd) {
        index[n] = i;
        fds[n++] = {streams_[i].fd.get(), POLLIN, 0};
      }
    }
    if (in_) {
      index[n] = 2;
      fds[n++] = {in_.get(), POLLOUT, 0};
    }
    if (!exited_ && child_.pidfd() >= 0) {
      index[n] = 3;
      fds[n++] = {child_.pidfd(), POLLIN, 0};
    }
    int ready = ::poll(fds, n, wait_ms);
    if (ready < 0 && errno != EINTR) return std::unexpected(errno_error("poll", errno));
    for (nfds_t k = 0; k < n && ready > 0; ++k) {
      if (fds[k].revents == 0) continue;
      if (index[k] < 2) read_stream(streams_[index[k]]);
      if (index[k] == 2) write_stdin();
    }
    return {};
  }

  // Reads what is available, passing every chunk on; closes the stream at EOF or on error.
  void read_stream(Stream& s) {
    char chunk[kReadChunk];
    for (;;) {
      ssize_t got = ::read(s.fd.get(), chunk, sizeof chunk);
      if (got < 0 && errno == EINTR) continue;
      if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      if (got <= 0) {
        s.fd.reset();
        return;
      }
      if (!s.sink->take) continue;
      if (!s.sink->take(std::string_view(chunk, static_cast<size_t>(got))) && !outcome_.overflow) {
        outcome_.overflow = true;
        end_with(DriveOutcome::Ending::overflow);
      }
      // Past a limit we keep draining, so writers are not blocked until they die.
    }
  }

  void write_stdin() {
    while (written_ < in_data_.size()) {
      ssize_t n = ::write(in_.get(), in_data_.data() + written_, in_data_.size() - written_);
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

  ChildProcess& child_;
  const DriveOptions& options_;
  UniqueFd in_;
  std::string_view in_data_;
  size_t written_ = 0;
  Stream streams_[2];
  bool exited_ = false;
  std::optional<Clock::time_point> grace_end_;
  DriveOutcome outcome_;
};

// A string capped at `cap` bytes; the rest is counted, not kept.
struct CappedString {
  explicit CappedString(size_t cap) : cap(cap) {}
  std::string text;
  size_t cap;
  size_t total = 0;
  bool take(std::string_view bytes) {
    total += bytes.size();
    if (text.size() < cap) text.append(bytes.substr(0, cap - text.size()));
    return total <= cap;
  }
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
  GroupChild child(*pid);
  // Our copies of the child's ends must close, or we would never see EOF.
  in_r.reset();
  out_w.reset();
  err_w.reset();

  CappedString out(spec.max_stdout), err(spec.max_stderr);
  DriveOptions options;
  options.timeout = spec.timeout;
  options.stop = spec.stop;
  options.grace = kDrainGrace;
  options.out.take = [&out](std::string_view bytes) { return out.take(bytes); };
  // Past its cap stderr is dropped, never a reason to stop the program.
  options.err.take = [&err](std::string_view bytes) {
    err.take(bytes);
    return true;
  };
  if (spec.output) {
    options.out.take = options.err.take = [&spec](std::string_view bytes) {
      spec.output(bytes);
      return true;
    };
  }
  auto driven = drive(child, ChildPipes{std::move(in_w), spec.stdin_data, std::move(out_r), std::move(err_r)}, options);
  if (!driven) return std::unexpected(driven.error());

  using Ending = DriveOutcome::Ending;
  SubprocessResult result;
  switch (driven->ending) {
    case Ending::exited: {
      // An exit on its own is always reaped: the grace period only starts there.
      int status = driven->wait_status.value_or(0);
      if (WIFSIGNALED(status)) {
        result.ending = SubprocessResult::Ending::signaled;
        result.signal = WTERMSIG(status);
      } else {
        result.exit_code = WEXITSTATUS(status);
      }
      break;
    }
    case Ending::timed_out:
    case Ending::cancelled:
      result.ending = SubprocessResult::Ending::timed_out;
      break;
    case Ending::overflow:
      result.ending = SubprocessResult::Ending::stdout_overflow;
      break;
  }
  // Stdout that overflows after the program exited is still a flood.
  if (driven->overflow && result.ending != SubprocessResult::Ending::timed_out) {
    result.ending = SubprocessResult::Ending::stdout_overflow;
  }
  result.out = std::move(out.text);
  result.err = std::move(err.text);
  result.err_truncated = err.total > err.cap;
  result.elapsed = driven->elapsed;
  return result;
}

Result<DriveOutcome> drive(ChildProcess& child, ChildPipes pipes, const DriveOptions& options) {
  return Driver(child, std::move(pipes), options).run();
}

}  // namespace warden
