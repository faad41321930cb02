#include "tests/support/process.h"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <utility>

#include "common/subprocess.h"

namespace warden::test {
namespace {

[[noreturn]] void throw_errno(const std::string& what, int err) {
  throw std::runtime_error(what + ": " + std::strerror(err));
}

// Both ends close-on-exec; the parent's end is made non-blocking by the caller.
std::pair<UniqueFd, UniqueFd> make_pipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw_errno("pipe2", errno);
  return {UniqueFd(fds[0]), UniqueFd(fds[1])};
}

void set_nonblocking(int fd) {
  int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0) throw_errno("fcntl(O_NONBLOCK)", errno);
}

// Writing stdin to a child that already exited must give EPIPE, not kill the test.
void ignore_sigpipe_once() {
  static std::once_flag once;
  std::call_once(once, [] { std::signal(SIGPIPE, SIG_IGN); });
}

// What the child reports through the exec-error pipe when setup or exec fails.
struct ChildFailure {
  int step = 0;  // index into kSteps
  int err = 0;
};
constexpr const char* kSteps[] = {"dup2", "setgroups", "setgid", "setuid", "execv"};

[[noreturn]] void report_child_failure(int report, int step) {
  ChildFailure f{step, errno};
  [[maybe_unused]] auto n = ::write(report, &f, sizeof f);
  ::_exit(127);
}

// Runs in the forked child: only async-signal-safe calls until exec.
[[noreturn]] void exec_child(char* const* argv, int in, int out, int err, int report, const SpawnOptions& o) {
  auto die = [report](int step) { report_child_failure(report, step); };
  if (::dup2(in, STDIN_FILENO) < 0 || ::dup2(out, STDOUT_FILENO) < 0 || ::dup2(err, STDERR_FILENO) < 0) die(0);
  // Nothing else the test process holds open (LMDB files, other pipes) leaks into the child.
  ::close_range(3, ~0u, CLOSE_RANGE_CLOEXEC);
  // An ignored SIGPIPE would survive exec; the child gets the default disposition.
  ::signal(SIGPIPE, SIG_DFL);
  if (o.uid || o.gid) {
    if (::setgroups(0, nullptr) != 0) die(1);
    if (o.gid && ::setgid(*o.gid) != 0) die(2);
    if (o.uid && ::setuid(*o.uid) != 0) die(3);
  }
  ::execv(argv[0], argv);
  report_child_failure(report, 4);
}

}  // namespace

std::string ProcessResult::status() const {
  return term_signal ? "signal " + std::to_string(term_signal) : "exit " + std::to_string(exit_code);
}

Child Child::spawn(const std::vector<std::string>& argv, const SpawnOptions& options) {
  if (argv.empty()) throw std::invalid_argument("spawn: empty argv");
  ignore_sigpipe_once();
  // Everything the child needs is prepared before fork: the child may not allocate.
  std::vector<std::string> args = argv;
  std::vector<char*> cargv;
  for (auto& a : args) cargv.push_back(a.data());
  cargv.push_back(nullptr);

  auto [in_r, in_w] = make_pipe();
  auto [out_r, out_w] = make_pipe();
  auto [err_r, err_w] = make_pipe();
  auto [report_r, report_w] = make_pipe();

  pid_t pid = ::fork();
  if (pid < 0) throw_errno("fork", errno);
  if (pid == 0) exec_child(cargv.data(), in_r.get(), out_w.get(), err_w.get(), report_w.get(), options);

  Child child;
  child.pid_ = pid;
  // Close our copies of the child's ends, or we would never see EOF.
  in_r.reset();
  out_w.reset();
  err_w.reset();
  report_w.reset();

  ChildFailure failure;
  ssize_t n;
  do n = ::read(report_r.get(), &failure, sizeof failure);
  while (n < 0 && errno == EINTR);
  if (n == static_cast<ssize_t>(sizeof failure)) {
    child.wait();
    throw_errno(std::string("child ") + kSteps[failure.step] + " " + argv[0], failure.err);
  }

  if (options.stdin_data) child.stdin_data_ = *options.stdin_data;
  if (!child.stdin_data_.empty()) {
    set_nonblocking(in_w.get());
    child.in_ = std::move(in_w);
  }  // else in_w closes here: the child reads EOF
  set_nonblocking(out_r.get());
  set_nonblocking(err_r.get());
  child.out_fd_ = std::move(out_r);
  child.err_fd_ = std::move(err_r);
  return child;
}

Child::Child(Child&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)),
      in_(std::move(other.in_)),
      out_fd_(std::move(other.out_fd_)),
      err_fd_(std::move(other.err_fd_)),
      stdin_data_(std::move(other.stdin_data_)),
      stdin_written_(other.stdin_written_),
      out_(std::move(other.out_)),
      err_(std::move(other.err_)) {}

Child::~Child() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
  }
}

void Child::kill(int signal) {
  if (pid_ > 0) ::kill(pid_, signal);
}

bool Child::pump_once(int timeout_ms) {
  pollfd fds[3];
  nfds_t count = 0;
  if (in_) fds[count++] = {in_.get(), POLLOUT, 0};
  if (out_fd_) fds[count++] = {out_fd_.get(), POLLIN, 0};
  if (err_fd_) fds[count++] = {err_fd_.get(), POLLIN, 0};
  if (count == 0) return false;
  int ready = ::poll(fds, count, timeout_ms);
  if (ready < 0) {
    if (errno == EINTR) return true;
    throw_errno("poll", errno);
  }
  if (ready == 0) return false;

  for (nfds_t i = 0; i < count; ++i) {
    if (fds[i].revents == 0) continue;
    if (in_ && fds[i].fd == in_.get()) {
      ssize_t n = ::write(in_.get(), stdin_data_.data() + stdin_written_, stdin_data_.size() - stdin_written_);
      if (n > 0) stdin_written_ += static_cast<size_t>(n);
      else if (n < 0 && errno != EAGAIN && errno != EINTR) in_.reset();  // EPIPE: the child stopped reading
      if (stdin_written_ == stdin_data_.size()) in_.reset();             // EOF tells the child we are done
      continue;
    }
    UniqueFd& fd = fds[i].fd == out_fd_.get() ? out_fd_ : err_fd_;
    std::string& sink = &fd == &out_fd_ ? out_ : err_;
    char buf[65536];
    for (;;) {
      ssize_t n = ::read(fd.get(), buf, sizeof buf);
      if (n > 0) {
        sink.append(buf, static_cast<size_t>(n));
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == EAGAIN) break;
      fd.reset();  // EOF or a read error: nothing more will come
      break;
    }
  }
  return true;
}

void Child::pump(std::chrono::steady_clock::time_point deadline) {
  using namespace std::chrono;
  for (;;) {
    auto left = duration_cast<milliseconds>(deadline - steady_clock::now());
    if (left.count() <= 0) {
      pump_once(0);  // whatever is already buffered
      return;
    }
    if (!pump_once(static_cast<int>(left.count())) && !pipes_open()) return;
  }
}

namespace {

// A test child as common/subprocess.h's drive() sees it, for wait(): there is no deadline and
// no stop request, so drive() never stops it; it only reads to EOF and reaps.
class WaitedChild final : public ChildProcess {
 public:
  explicit WaitedChild(pid_t pid) : pid_(pid), pidfd_(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0))) {}
  int pidfd() const override { return pidfd_.get(); }
  bool exited() override {
    siginfo_t info{};
    return ::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid_;
  }
  void stop() override { ::kill(pid_, SIGKILL); }
  int reap() override {
    int status = 0;
    pid_t got;
    do got = ::waitpid(pid_, &status, 0);
    while (got < 0 && errno == EINTR);
    if (got < 0) reap_errno = errno;
    return status;
  }
  int reap_errno = 0;

 private:
  pid_t pid_;
  UniqueFd pidfd_;
};

}  // namespace

ProcessResult Child::wait() {
  // A test waits as long as its child runs: the deadline and the grace after the exit are
  // a day, which ctest's own timeout reaches first.
  constexpr std::chrono::hours kForever{24};
  WaitedChild waited(pid_);
  DriveOptions options;
  options.timeout = kForever;
  options.grace = kForever;
  options.out.take = [this](std::string_view bytes) { return out_.append(bytes), true; };
  options.err.take = [this](std::string_view bytes) { return err_.append(bytes), true; };
  std::string_view unwritten = std::string_view(stdin_data_).substr(std::min(stdin_written_, stdin_data_.size()));
  auto driven = drive(waited, ChildPipes{std::move(in_), unwritten, std::move(out_fd_), std::move(err_fd_)}, options);
  if (!driven) throw std::runtime_error(driven.error().message);
  if (waited.reap_errno != 0) throw_errno("waitpid", waited.reap_errno);
  pid_ = -1;
  ProcessResult result;
  int status = driven->wait_status.value_or(0);
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.term_signal = WTERMSIG(status);
  result.out = std::move(out_);
  result.err = std::move(err_);
  out_.clear();
  err_.clear();
  return result;
}

ProcessResult run(const std::vector<std::string>& argv, const SpawnOptions& options) {
  return Child::spawn(argv, options).wait();
}

}  // namespace warden::test
