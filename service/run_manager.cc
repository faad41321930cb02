#include "service/run_manager.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

#include "common/canonical_json.h"
#include "common/exit_codes.h"
#include "common/identifier.h"
#include "kernel/record/run_registry.h"
#include "service/warden_cli.h"

namespace warden::service {
namespace {

namespace fs = std::filesystem;

// A child's output line is an event, an error or the summary; anything longer is not ours.
constexpr size_t kMaxLineBytes = size_t{8} << 20;

// The child's own error code, as its JSON error line spells it (errc_name).
std::optional<Errc> errc_named(const std::string& name) {
  for (Errc e : {Errc::invalid_argument, Errc::not_found, Errc::already_exists, Errc::failed_precondition, Errc::io_error,
                 Errc::corrupt, Errc::verification_failed, Errc::limit_exceeded, Errc::internal}) {
    if (errc_name(e) == name) return e;
  }
  return std::nullopt;
}

fs::path result_note(const fs::path& state_dir, const std::string& run_id) {
  return state_dir / "runs" / (run_id + ".result.json");
}

fs::path repo_note(const fs::path& state_dir, const std::string& run_id) { return state_dir / "runs" / (run_id + ".repo"); }

bool safe_run_id(const std::string& id) { return is_identifier(id); }

std::vector<std::string> build_argv(const RunManagerOptions& o, const RunRequest& r) {
  std::vector<std::string> argv{o.warden_binary.string(), "build"};
  if (r.plan_sha256.empty()) {
    argv.push_back(r.blueprint.string());
  } else {
    argv.insert(argv.end(), {"--plan", r.plan_sha256});
  }
  argv.insert(argv.end(), {"--json", "--repo", r.repo.string(), "--ledger", o.ledger_dir.string(), "--cache",
                           o.cache_dir.string(), "--clock", r.clock, "--executor", r.executor});
  if (!r.policy.empty()) argv.insert(argv.end(), {"--policy", r.policy});
  if (r.step_timeout_ms > 0) argv.insert(argv.end(), {"--step-timeout", std::to_string(r.step_timeout_ms / 1000.0)});
  if (r.channel) argv.insert(argv.end(), {"--executor-channel", "3"});
  if (r.runner_channel) argv.insert(argv.end(), {"--runner-channel", "4"});
  if (r.runner_channel && !r.runner_quorum.empty()) argv.insert(argv.end(), {"--runner-quorum", r.runner_quorum});
  if (!r.run_id.empty()) argv.insert(argv.end(), {"--run-id", r.run_id});
  return argv;
}

}  // namespace

RunManager::RunManager(RunManagerOptions options) : options_(std::move(options)) {}

RunManager::~RunManager() { stop_all(std::chrono::seconds(5)); }

void RunManager::bump_locked() {
  ++generation_;
  changed_.notify_all();
}

Result<std::string> RunManager::start(RunRequest request) {
  std::error_code ec;
  fs::create_directories(options_.state_dir / "runs", ec);
  if (ec) return fail(Errc::io_error, "creating " + (options_.state_dir / "runs").string() + ": " + ec.message());
  UniqueFd log(::open((options_.state_dir / "runs" / "children.log").c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
  if (!log) return std::unexpected(errno_error("opening the runs' log", errno));
  UniqueFd devnull(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  int out_pipe[2];
  if (!devnull || ::pipe2(out_pipe, O_CLOEXEC) != 0) return std::unexpected(errno_error("pipe", errno));
  UniqueFd out_read(out_pipe[0]), out_write(out_pipe[1]);

  std::vector<std::unique_ptr<Run>> ended;  // joined below, once mu_ is let go
  std::unique_lock lock(mu_);
  if (stopping_) return fail(Errc::io_error, "the server is stopping: no new runs");
  if (starting_ == 0) {
    auto keep = std::partition(runs_.begin(), runs_.end(), [](const auto& r) { return !r->ended; });
    std::move(keep, runs_.end(), std::back_inserter(ended));
    runs_.erase(keep, runs_.end());
  }
  const size_t live = static_cast<size_t>(std::count_if(runs_.begin(), runs_.end(), [](const auto& r) { return !r->ended; }));
  if (live >= options_.max_live) {
    return fail(Errc::limit_exceeded, std::to_string(live) + " runs are live, the most this server runs at once " +
                                          "(warden serve --max-runs): start it again when one has ended");
  }
  runs_.push_back(std::make_unique<Run>());
  Run& run = *runs_.back();
  run.repo = request.repo;
  run.owner = request.owner;
  std::vector<std::string> args = build_argv(options_, request);
  // The channels go to fds 3 and 4 in the child: first out of the way of both (and of 0-2).
  UniqueFd executor_fd(request.channel ? ::fcntl(request.channel.get(), F_DUPFD_CLOEXEC, 5) : -1);
  UniqueFd runner_fd(request.runner_channel ? ::fcntl(request.runner_channel.get(), F_DUPFD_CLOEXEC, 5) : -1);
  if ((request.channel && !executor_fd) || (request.runner_channel && !runner_fd)) {
    const int err = errno;
    runs_.pop_back();
    return std::unexpected(errno_error("dup of a run's channel", err));
  }
  request.channel.reset();
  request.runner_channel.reset();
  // This thread forks, so the child's PR_SET_PDEATHSIG follows the thread's life: it waits
  // for the child and never ends before it. It owns every descriptor it is given.
  run.thread = std::jthread([this, &run, args = std::move(args), executor_fd = std::move(executor_fd),
                             runner_fd = std::move(runner_fd),
                             devnull = std::move(devnull), log = std::move(log), out = std::move(out_read),
                             out_write = std::move(out_write), server_pid = ::getpid()]() mutable {
    // Everything the child needs is built before fork: after it, only async-signal-safe calls.
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const int channel_fd = executor_fd.get();
    const int runner_channel_fd = runner_fd.get();
    pid_t pid = ::fork();
    if (pid == 0) {
      ::setpgid(0, 0);
      // The server blocks SIGTERM and SIGINT for its sigwait; the build gets them back.
      sigset_t none;
      sigemptyset(&none);
      ::sigprocmask(SIG_SETMASK, &none, nullptr);
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != server_pid) ::_exit(127);  // the server died before the line above
      ::dup2(devnull.get(), 0);
      ::dup2(out_write.get(), 1);
      ::dup2(log.get(), 2);
      // Both are at 5 or above: dup2 onto 3 and 4 clears close-on-exec on the copies.
      if (channel_fd >= 0) ::dup2(channel_fd, 3);
      if (runner_channel_fd >= 0) ::dup2(runner_channel_fd, 4);
      if (channel_fd < 0) ::close(3);
      ::close_range(runner_channel_fd >= 0 ? 5 : 4, ~0U, 0);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    const int fork_errno = errno;
    out_write.reset();
    executor_fd.reset();  // the child has its copies
    runner_fd.reset();
    {
      std::lock_guard rl(mu_);
      run.pid = pid;
      if (pid < 0) {
        run.ended = true;
        run.error_message = std::string("fork: ") + std::strerror(fork_errno);
      }
      bump_locked();
    }
    if (pid > 0) drive(run, std::move(out));
  });
  ++starting_;  // stop_all() keeps `run` alive until this call is done with it
  bool in_time = changed_.wait_for(lock, options_.start_timeout, [&] { return !run.run_id.empty() || run.ended; });
  const std::string run_id = run.run_id;
  const pid_t pid = run.pid;
  const int exit_code = run.exit_code;
  const std::string message = run.error_message;
  const std::string code = run.error_code;
  --starting_;
  bump_locked();
  lock.unlock();
  ended.clear();  // their threads have returned or are returning: joined here, outside mu_
  if (!run_id.empty()) return run_id;
  if (!in_time) {
    ::kill(pid, SIGTERM);
    return fail(Errc::io_error, "the run did not record its start within " +
                                    std::to_string(options_.start_timeout.count() / 1000) + " s: cancelled it");
  }
  if (pid < 0) return fail(Errc::io_error, message);
  if (!message.empty()) return fail(errc_named(code).value_or(errc_for_exit(exit_code)), message);
  return fail(errc_for_exit(exit_code), "warden build exited with status " + std::to_string(exit_code) +
                                            " before it recorded a run (" +
                                            (options_.state_dir / "runs" / "children.log").string() + " has its messages)");
}

void RunManager::drive(Run& run, UniqueFd out) {
  std::string buffer;
  char chunk[65536];
  bool discarding = false;  // a line past kMaxLineBytes: skipped to its end
  for (;;) {
    ssize_t n = ::read(out.get(), chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    buffer.append(chunk, static_cast<size_t>(n));
    size_t start = 0;
    for (size_t nl; (nl = buffer.find('\n', start)) != std::string::npos; start = nl + 1) {
      if (discarding) {
        discarding = false;
        continue;
      }
      auto line = parse_json(std::string_view(buffer).substr(start, nl - start));
      std::lock_guard lock(mu_);
      if (line && line->is_object()) {
        const std::string type = line->value("type", std::string());
        if (type == "run_started" && run.run_id.empty()) {
          std::string id = line->value("run_id", std::string());
          if (safe_run_id(id)) {
            run.run_id = id;
            std::ofstream(repo_note(options_.state_dir, id)) << run.repo.string() << "\n";
          }
        } else if (type == "result" && !run.run_id.empty()) {
          // The summary is written only when the run has ended: kept for GetRun.
          if (auto text = canonicalize(*line)) (void)write_file_atomic(result_note(options_.state_dir, run.run_id), *text, 0600);
        } else if (type == "error" && line->contains("error") && (*line)["error"].is_object()) {
          run.error_message = (*line)["error"].value("message", std::string());
          run.error_code = (*line)["error"].value("code", std::string());
        }
      }
      bump_locked();
    }
    buffer.erase(0, start);
    if (buffer.size() > kMaxLineBytes) {
      buffer.clear();
      discarding = true;
    }
  }
  int status = 0;
  while (::waitpid(run.pid, &status, 0) < 0 && errno == EINTR) {
  }
  std::lock_guard lock(mu_);
  run.ended = true;
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  // The run's end is recorded (or its marker stays for recovery): the note is not needed.
  if (!run.run_id.empty() && !kernel::live_run_process(options_.ledger_dir, run.run_id)) {
    std::error_code ec;
    fs::remove(repo_note(options_.state_dir, run.run_id), ec);
  }
  bump_locked();
}

Status RunManager::cancel(const std::string& run_id) {
  {
    std::lock_guard lock(mu_);
    for (auto& r : runs_) {
      if (r->run_id == run_id && !r->ended) {
        ::kill(r->pid, SIGTERM);
        return {};
      }
    }
  }
  if (auto pid = kernel::live_run_process(options_.ledger_dir, run_id)) {
    if (::kill(*pid, SIGTERM) == 0) return {};
  }
  return fail(Errc::not_found, "no live process drives run " + run_id);
}

std::optional<std::string> RunManager::owner(const std::string& run_id) {
  std::lock_guard lock(mu_);
  for (auto& r : runs_) {
    if (r->run_id == run_id && !r->ended) return r->owner;
  }
  return std::nullopt;
}

bool RunManager::live(const std::string& run_id) {
  {
    std::lock_guard lock(mu_);
    for (auto& r : runs_) {
      if (r->run_id == run_id && !r->ended) return true;
    }
  }
  return kernel::live_run_process(options_.ledger_dir, run_id).has_value();
}

std::optional<std::string> RunManager::result(const std::string& run_id) {
  if (!safe_run_id(run_id)) return std::nullopt;
  auto text = read_file(result_note(options_.state_dir, run_id), size_t{16} << 20);
  if (!text) return std::nullopt;
  return std::move(*text);
}

bool RunManager::wait_ended(const std::string& run_id, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  uint64_t seen = generation();
  while (live(run_id)) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    // Our own runs ring the bell when they end; another process's are polled.
    seen = wait_change(seen, std::chrono::milliseconds(100));
  }
  return true;
}

uint64_t RunManager::generation() {
  std::lock_guard lock(mu_);
  return generation_;
}

uint64_t RunManager::wait_change(uint64_t seen, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  changed_.wait_for(lock, timeout, [&] { return generation_ != seen; });
  return generation_;
}

size_t RunManager::stop_all(std::chrono::milliseconds grace) {
  size_t live_runs = 0;
  {
    std::unique_lock lock(mu_);
    stopping_ = true;
    for (auto& r : runs_) {
      if (!r->ended && r->pid > 0) {
        ::kill(r->pid, SIGTERM);
        ++live_runs;
      }
    }
    changed_.wait_for(lock, grace, [&] {
      for (auto& r : runs_) {
        if (!r->ended) return false;
      }
      return true;
    });
    for (auto& r : runs_) {
      if (!r->ended && r->pid > 0) ::kill(-r->pid, SIGKILL);
    }
  }
  std::vector<std::unique_ptr<Run>> runs;
  {
    std::unique_lock lock(mu_);
    changed_.wait(lock, [&] { return starting_ == 0; });
    runs.swap(runs_);
  }
  runs.clear();  // joins each thread, which reaps its child
  return live_runs;
}

Result<std::vector<std::string>> recover_interrupted_runs(const RunManagerOptions& options) {
  std::vector<std::string> lines;
  auto recover = [&](std::vector<std::string> args) -> Status {
    args.insert(args.begin(), {"run", "recover"});
    args.insert(args.end(), {"--ledger", options.ledger_dir.string(), "--json"});
    auto out = run_warden(args);
    if (!out && out.error().code != Errc::not_found) return std::unexpected(out.error());
    if (!out) return {};
    auto result = parse_json(out->substr(0, out->find('\n')));
    if (result && result->is_object() && result->contains("runs") && (*result)["runs"].is_array()) {
      for (const Json& r : (*result)["runs"]) {
        if (r.is_object() && r.value("recorded", false)) {
          lines.push_back("run " + r.value("run_id", std::string()) + " was live when the server stopped: " +
                          r.value("error", std::string("recorded interrupted")));
        }
      }
    }
    return {};
  };
  // Runs with a repository note first, so a branch at an unconfirmed commit is moved back.
  std::error_code ec;
  for (auto it = fs::directory_iterator(options.state_dir / "runs", ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    if (it->path().extension() != ".repo") continue;
    const std::string run_id = it->path().stem().string();
    if (!safe_run_id(run_id) || kernel::live_run_process(options.ledger_dir, run_id)) continue;
    std::string repo;
    std::getline(std::ifstream(it->path()) >> std::ws, repo);
    std::vector<std::string> args{run_id};
    if (!repo.empty()) args.insert(args.end(), {"--repo", repo});
    if (Status st = recover(args); !st) return std::unexpected(st.error());
    fs::remove(it->path(), ec);
    ec.clear();
  }
  if (Status st = recover({}); !st) return std::unexpected(st.error());
  return lines;
}

}  // namespace warden::service
