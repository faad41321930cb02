// kernel_bench: what the kernel's guarantees cost per build step, next to a plain shell loop
// doing the same work without them, in one run on one machine.
//
//   calculator      examples/calculator (5 steps, 6 proposals: one draft is refused), the
//                   python policy: the tests and one check per invariant on every proposal
//   N-file repo     a generated repository of --files files (default 10,000) and a blueprint
//                   of 5 steps adding a package and its tests, a policy running the tests only
//
// Per scenario, Warden builds (kernel::run_build with the plan executor and a system clock,
// a fresh copy of the same starting repository, fresh ledger and fresh runner cache each
// time) alternate with the shell loop (an unrolled bash script doing, per proposal the kernel
// made: `git apply --index` of the same patch in one `git worktree add` worktree, the same
// check commands in bwrap with the same argv and seccomp program the sandbox uses, and
// `git commit` of the accepted ones).
//
// Kernel overhead per step = the step's wall time minus the time its sandboxed checks ran.
// A step's wall time runs from its step_started event to the next step's (or run_completed),
// taken with steady_clock in the event callback. The checks' time is taken from outside the
// kernel, so nothing in it needs changing: the runner forks one reaper per sandboxed run
// (runner/sandbox/sandbox_process.h) that exits only when the sandbox is gone, so the reaper's
// lifetime is the sandboxed run. The kernel's process-events connector reports every fork
// and exit with a CLOCK_MONOTONIC timestamp (what steady_clock reads); the lifetimes of this
// process's children inside a step's window are its check time. Their count must equal the
// check runs the runner's tool_output events name for that step; the first step also holds
// the sandbox preflight's runs, which are Warden's own cost and stay in the overhead.
//
// Targets: median kernel overhead per step <= 20 ms; Warden's total build time
// <= 1.1x the shell loop's (medians of --runs builds each).
//
//   cmake --build build --target kernel_bench && build/kernel_bench [--runs N] [--files N] [--json]
//   build/kernel_bench --quick     CI smoke run: 1 build of each, 200 files, always exits 0
//                                  unless something fails
// Needs root (the process-events connector needs CAP_NET_ADMIN) and bubblewrap.
#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <linux/netlink.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/file.h"
#include "executor/plan_proposer.h"
#include "kernel/build/build_loop.h"
#include "kernel/judge/plan_generate.h"
#include "kernel/build/repository.h"
#include "runner/check/passed_tests_input.h"
#include "runner/sandbox/sandbox.h"
#include "runner/sandbox/scratch_dir.h"
#include "tools/bench/bench_repo.h"

#ifndef WARDEN_SOURCE_DIR
#define WARDEN_SOURCE_DIR "."
#endif

namespace {

namespace fs = std::filesystem;
using warden::Json;
using warden::bench::run_command;
using SteadyClock = std::chrono::steady_clock;

[[noreturn]] void die(const std::string& what) {
  std::cerr << "kernel_bench: " << what << "\n";
  std::exit(2);
}

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(SteadyClock::now().time_since_epoch()).count();
}

double ms_between(int64_t from_ns, int64_t to_ns) { return static_cast<double>(to_ns - from_ns) / 1e6; }

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t rank = static_cast<size_t>(std::ceil(p * static_cast<double>(v.size())));
  return v[std::clamp<size_t>(rank, 1, v.size()) - 1];
}
double median(const std::vector<double>& v) { return percentile(v, 0.5); }

struct Interval {
  int64_t start_ns = 0, end_ns = 0;
};

// The lifetimes of this process's children (fork to exit), from the process-events
// connector; see the header comment. One thread reads the events for the program's life.
class ChildLifetimes {
 public:
  ChildLifetimes() {
    fd_ = ::socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_CONNECTOR);
    if (fd_ < 0) die("process-events connector: socket: " + std::string(std::strerror(errno)));
    int size = 8 << 20;  // the whole machine's forks arrive here: room for bursts
    (void)::setsockopt(fd_, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof size);
    sockaddr_nl addr{};
    addr.nl_family = AF_NETLINK;
    addr.nl_groups = CN_IDX_PROC;
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      die("process-events connector: bind: " + std::string(std::strerror(errno)) + " (needs root)");
    }
    if (!subscribe(PROC_CN_MCAST_LISTEN)) die("process-events connector: listen: " + std::string(std::strerror(errno)));
    reader_ = std::thread([this] { read_events(); });
  }
  ~ChildLifetimes() {
    quit_ = true;
    reader_.join();
    (void)subscribe(PROC_CN_MCAST_IGNORE);
    ::close(fd_);
  }
  ChildLifetimes(const ChildLifetimes&) = delete;
  ChildLifetimes& operator=(const ChildLifetimes&) = delete;

  void clear() {
    std::lock_guard lock(mu_);
    done_.clear();
    lost_ = false;
  }

  // The children that exited so far. A sentinel child is forked and reaped first and its
  // exit awaited, so every exit before this call has been read.
  std::vector<Interval> collect() {
    pid_t sentinel = ::fork();
    if (sentinel < 0) die("fork");
    if (sentinel == 0) ::_exit(0);
    ::waitpid(sentinel, nullptr, 0);
    std::unique_lock lock(mu_);
    if (!cv_.wait_for(lock, std::chrono::seconds(5), [&] { return seen_exit_.contains(sentinel); })) {
      die("process-events connector: no events (is it available in this namespace?)");
    }
    if (lost_) die("process-events connector: events were dropped (the machine forked faster than we read)");
    seen_exit_.clear();
    return done_;
  }

 private:
  bool subscribe(proc_cn_mcast_op op) {
    // netlink header, connector header, then the operation (cn_msg ends in a flexible array).
    constexpr size_t kSize = NLMSG_LENGTH(sizeof(cn_msg) + sizeof(proc_cn_mcast_op));
    alignas(nlmsghdr) char request[kSize] = {};
    auto* header = reinterpret_cast<nlmsghdr*>(request);
    header->nlmsg_len = kSize;
    header->nlmsg_type = NLMSG_DONE;
    header->nlmsg_pid = static_cast<uint32_t>(::getpid());
    auto* message = static_cast<cn_msg*>(NLMSG_DATA(header));
    message->id.idx = CN_IDX_PROC;
    message->id.val = CN_VAL_PROC;
    message->len = sizeof(proc_cn_mcast_op);
    std::memcpy(message->data, &op, sizeof op);
    return ::send(fd_, request, kSize, 0) == static_cast<ssize_t>(kSize);
  }

  void read_events() {
    alignas(nlmsghdr) char buffer[16384];
    while (!quit_) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      ssize_t got = ::recv(fd_, buffer, sizeof buffer, 0);
      if (got < 0) {
        if (errno == ENOBUFS) {
          std::lock_guard lock(mu_);
          lost_ = true;
        }
        continue;
      }
      int len = static_cast<int>(got);
      for (auto* h = reinterpret_cast<nlmsghdr*>(buffer); NLMSG_OK(h, len); h = NLMSG_NEXT(h, len)) {
        // The event follows a 20-byte cn_msg header: 4-byte aligned, not the 8 proc_event
        // needs, so it is copied out rather than referenced in place.
        const auto* message = static_cast<const cn_msg*>(NLMSG_DATA(h));
        proc_event event{};
        std::memcpy(&event, message->data, std::min<size_t>(sizeof event, message->len));
        handle(event);
      }
    }
  }

  void handle(const proc_event& ev) {
    const auto ts = static_cast<int64_t>(ev.timestamp_ns);
    if (ev.what == proc_event::PROC_EVENT_FORK) {
      const auto& f = ev.event_data.fork;
      if (f.parent_tgid != self_ || f.child_pid != f.child_tgid) return;  // not our child process
      std::lock_guard lock(mu_);
      started_[f.child_pid] = ts;
    } else if (ev.what == proc_event::PROC_EVENT_EXIT) {
      const auto& e = ev.event_data.exit;
      if (e.process_pid != e.process_tgid) return;  // a thread
      std::lock_guard lock(mu_);
      auto it = started_.find(e.process_pid);
      if (it == started_.end()) return;
      done_.push_back({it->second, ts});
      seen_exit_.insert(e.process_pid);
      started_.erase(it);
      cv_.notify_all();
    }
  }

  int fd_ = -1;
  const pid_t self_ = ::getpid();
  std::atomic<bool> quit_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<pid_t, int64_t> started_;
  std::vector<Interval> done_;
  std::set<pid_t> seen_exit_;
  bool lost_ = false;
  std::thread reader_;
};

// One proposal as the kernel made it: which step, whether it was accepted, which checks ran.
struct Attempt {
  std::string step_id;
  int64_t number = 0;
  bool accepted = false;
  std::vector<std::string> checks;  // empty: the runner did not run (the proposal did not apply)
  bool base = false;                // the step's base tested (PASS_TO_PASS), not a proposal
  std::vector<std::string> oracle_checks;  // run again without the tests the proposal adds
};

struct Scenario {
  std::string label;
  warden::kernel::BlueprintSpec blueprint;
  fs::path blueprint_dir;
  warden::kernel::Policy policy;
  fs::path template_repo;  // every build starts from a copy of it
  fs::path dir;            // the scenario's scratch space
  std::vector<Attempt> attempts;  // learned from the first build
  fs::path shell_script;
  // Samples over the measured builds.
  std::vector<double> overhead_ms, checks_ms, outside_ms, warden_ms, shell_ms;
};

warden::CheckSpec check_spec(const Scenario& s, const std::string& name) {
  for (const auto* list : {&s.policy.checks, &s.blueprint.checks}) {
    for (const auto& c : *list) {
      if (c.name == name) return c;
    }
  }
  if (!name.starts_with("invariant:")) die("the kernel ran a check the bench does not know: " + name);
  auto spec = s.policy.invariant_check(name.substr(std::string_view("invariant:").size()));
  if (!spec) die(spec.error().message);
  return *spec;
}

struct Mark {
  int64_t ns = 0;
  warden::kernel::RunEventType type;
  std::string tool;
  Json data;
};

// One Warden build, timed; per step its overhead and check time go into the scenario's samples
// when `keep`. Returns the attempts the kernel made.
std::vector<Attempt> warden_build(Scenario& s, const warden::NoteSigner& signer, ChildLifetimes& children, bool keep) {
  using warden::kernel::RunEventType;
  const fs::path dir = s.dir / "warden";
  fs::remove_all(dir);
  fs::create_directories(dir);
  run_command({"cp", "-a", s.template_repo.string(), (dir / "repo").string()});
  warden::kernel::BuildOptions options;
  options.repo_dir = dir / "repo";
  options.ledger_dir = dir / "ledger";
  options.blueprint_dir = s.blueprint_dir;
  warden::SystemClock clock;
  warden::RandomIdSource ids;
  warden::executor::PlanProposer proposer;
  std::vector<Mark> marks;
  warden::kernel::KernelSession session(clock, ids, signer);
  session.cache_dir = dir / "cache";
  session.on_event = [&](const warden::kernel::RunEvent& ev) {
    marks.push_back({now_ns(), ev.type, ev.tool.value_or(""), ev.data});
  };

  children.clear();
  const int64_t start = now_ns();
  auto summary = warden::kernel::run_build(s.blueprint, options, session, proposer);
  const int64_t end = now_ns();
  if (!summary) die(s.label + ": " + summary.error().message);
  if (summary->status != warden::kernel::RunStatus::completed) {
    die(s.label + ": the build did not complete: " + summary->error);
  }
  std::vector<Interval> runs = children.collect();

  // The steps' windows and what ran in them.
  std::vector<Attempt> attempts;
  struct Window {
    int64_t start_ns = 0, end_ns = 0;
    int64_t expected_runs = 0;
  };
  std::vector<Window> windows;
  for (const Mark& m : marks) {
    const bool ends_step = m.type == RunEventType::step_started || m.type == RunEventType::run_completed;
    if (ends_step && !windows.empty() && windows.back().end_ns == 0) windows.back().end_ns = m.ns;
    if (m.type == RunEventType::step_started) windows.push_back({m.ns, 0, 0});
    if (m.type != RunEventType::tool_output || windows.empty()) continue;
    const std::string step_id = m.data.value("step_id", "");
    const int64_t number = m.data.value("attempt", int64_t{0});
    if (m.tool == "runner" && m.data.contains("oracle_run")) {
      // The base's tests again on the proposal without its new tests: the same attempt's.
      if (attempts.empty()) die(s.label + ": an oracle run before any proposal");
      for (const auto& [name, verdict] : m.data["checks"].items()) {
        attempts.back().oracle_checks.push_back(name);
        windows.back().expected_runs += check_spec(s, name).runs;
      }
    } else if (m.tool == "runner") {
      Attempt a{step_id, number, false, {}, m.data.contains("base_tree"), {}};
      for (const auto& [name, verdict] : m.data["checks"].items()) {
        a.checks.push_back(name);
        windows.back().expected_runs += check_spec(s, name).runs;
      }
      attempts.push_back(std::move(a));
    } else if (m.tool == "kernel") {
      if (attempts.empty() || attempts.back().step_id != step_id || attempts.back().number != number) {
        attempts.push_back({step_id, number, false, {}, false, {}});
      }
      attempts.back().accepted = m.data.value("accepted", false);
    }
  }
  if (windows.empty() || windows.back().end_ns == 0) die(s.label + ": no complete step in the run's events");

  double in_steps_ms = 0;
  for (size_t i = 0; i < windows.size(); ++i) {
    const Window& w = windows[i];
    std::vector<Interval> inside;
    for (const Interval& r : runs) {
      if (r.start_ns >= w.start_ns && r.start_ns < w.end_ns) inside.push_back(r);
    }
    std::sort(inside.begin(), inside.end(), [](const Interval& a, const Interval& b) { return a.start_ns < b.start_ns; });
    auto observed = static_cast<int64_t>(inside.size());
    // The first step also runs the sandbox preflight before its first check: Warden's cost.
    int64_t skip = i == 0 ? observed - w.expected_runs : 0;
    if (skip < 0 || observed - skip != w.expected_runs) {
      die(s.label + ": step " + std::to_string(i + 1) + " ran " + std::to_string(observed) +
          " sandboxed processes, its events name " + std::to_string(w.expected_runs) + " check runs");
    }
    double check_ms = 0;
    for (size_t k = static_cast<size_t>(skip); k < inside.size(); ++k) {
      check_ms += ms_between(inside[k].start_ns, inside[k].end_ns);
    }
    const double wall_ms = ms_between(w.start_ns, w.end_ns);
    in_steps_ms += wall_ms;
    if (keep) {
      s.overhead_ms.push_back(wall_ms - check_ms);
      s.checks_ms.push_back(check_ms);
    }
  }
  if (keep) {
    s.warden_ms.push_back(ms_between(start, end));
    s.outside_ms.push_back(ms_between(start, end) - in_steps_ms);
  }
  fs::remove_all(dir);
  return attempts;
}

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// The patches the shell loop applies (made once, untimed, with git itself, from the plan the
// kernel followed) and the unrolled loop over them.
void write_shell_loop(Scenario& s, warden::Sandbox& sandbox) {
  auto plan = warden::kernel::generate_plan(s.blueprint, s.policy);
  if (!plan) die(s.label + ": " + plan.error().message);
  const fs::path prep = s.dir / "prep", patches = s.dir / "patches";
  fs::remove_all(prep);
  fs::create_directories(patches);
  run_command({"git", "clone", "-q", s.template_repo.string(), prep.string()});
  const std::vector<std::string> git = {"git", "-C", prep.string(), "-c", "user.name=bench",
                                        "-c", "user.email=bench@localhost"};
  auto git_do = [&](std::vector<std::string> args, const std::string& out = "") {
    std::vector<std::string> argv = git;
    argv.insert(argv.end(), args.begin(), args.end());
    run_command(argv, "", out);
  };

  const fs::path repo = s.dir / "shell-repo", worktree = s.dir / "shell-worktree", seccomp = s.dir / "seccomp.bpf";
  if (auto st = warden::write_file_atomic(seccomp, sandbox.seccomp_program()); !st) die(st.error().message);
  // bwrap reads the profile's files on the descriptors after the seccomp program's and the
  // command's own (command_line()).
  std::vector<fs::path> profile_files;
  for (size_t i = 0; i < sandbox.profile().files.size(); ++i) {
    profile_files.push_back(s.dir / ("profile-file-" + std::to_string(i)));
    if (auto st = warden::write_file_atomic(profile_files.back(), sandbox.profile().files[i].content); !st) die(st.error().message);
  }
  std::string script = "#!/bin/bash\n# The shell loop: the Warden build's proposals and checks, without its guarantees.\nset -eu\n";
  script += "git -C " + quote(repo.string()) + " worktree add -q -b shell-loop " + quote(worktree.string()) + " HEAD\n";
  script += "cd " + quote(worktree.string()) + "\n";
  // One check in bwrap with the sandbox's argv and seccomp program, on the worktree, the
  // command's own inputs (`passed`) from descriptor 4 on (its output redirections are the
  // caller's).
  auto sandbox_line = [&](const warden::CheckSpec& spec, const std::map<std::string, std::string>& extra_env,
                          const std::vector<std::string>& passed = {}) {
    warden::SandboxRequest request;
    request.argv = spec.argv;
    request.env = spec.env;
    request.env.insert(extra_env.begin(), extra_env.end());
    request.workspace_dir = worktree;
    request.pass_fds.assign(passed.size(), -1);  // only their number shapes the argv
    std::string line;
    for (const auto& arg : sandbox.command_line(request)) line += quote(arg) + " ";
    line += "3<" + quote(seccomp.string());
    int fd = warden::kFirstPassedFd;
    for (const auto& path : passed) line += " " + std::to_string(fd++) + "<" + quote(path);
    for (const auto& path : profile_files) line += " " + std::to_string(fd++) + "<" + quote(path.string());
    return line;
  };
  for (size_t i = 0; i < s.attempts.size(); ++i) {
    const Attempt& a = s.attempts[i];
    if (a.base) {
      // The kernel tests the step's base once: so does the loop, on its worktree as it stands.
      script += "# " + a.step_id + " base\n";
      for (const auto& name : a.checks) script += sandbox_line(check_spec(s, name), {}) + " >/dev/null 2>&1 || true\n";
      continue;
    }
    auto step = std::find_if(plan->steps.begin(), plan->steps.end(), [&](const auto& st) { return st.id == a.step_id; });
    if (step == plan->steps.end()) die(s.label + ": no plan step " + a.step_id);
    const auto k = static_cast<size_t>(a.number - 1);
    if (k >= step->drafts.size() && !step->content) die(s.label + ": step " + a.step_id + " has no content");
    const warden::kernel::FileContents& files = k < step->drafts.size() ? step->drafts[k] : *step->content;
    for (const auto& [path, content] : files) {
      fs::create_directories((prep / path).parent_path());
      if (auto st = warden::write_file_atomic(prep / path, content); !st) die(st.error().message);
    }
    const fs::path patch = patches / (std::to_string(i) + ".patch");
    git_do({"add", "-A"});
    git_do({"diff", "--cached", "--binary"}, patch.string());
    git_do(a.accepted ? std::vector<std::string>{"commit", "-q", "-m", a.step_id} : std::vector<std::string>{"reset", "-q", "--hard"});

    script += "# " + a.step_id + " attempt " + std::to_string(a.number) + "\n";
    script += "git apply --index " + quote(patch.string()) + "\n";
    // A check with tests_from reads the passed ids of earlier checks, as the runner gives
    // them (runner/check/passed_tests_input.h): their TAP is kept, and turned into that file.
    std::set<std::string> feeding;
    for (const auto& name : a.checks) {
      for (const auto& from : check_spec(s, name).tests_from) feeding.insert(from);
    }
    auto tap_file = [&](const std::string& name) { return quote((s.dir / (name + ".tap")).string()); };
    std::vector<std::string> ordered = a.checks;  // the checks that feed others run first, as in the request
    std::stable_partition(ordered.begin(), ordered.end(), [&](const std::string& name) { return feeding.contains(name); });
    for (const auto& name : ordered) {
      const warden::CheckSpec spec = check_spec(s, name);
      std::map<std::string, std::string> extra_env;
      std::vector<std::string> inputs;
      if (!spec.tests_from.empty()) {
        const std::string ids = quote((s.dir / "tests-from.json").string());
        script += "python3 -c " +
                  quote("import json, sys; print(json.dumps({'checks': {a.rsplit('/', 1)[-1][:-4]: "
                        "[l.split(' - ', 1)[1] for l in open(a).read().splitlines() "
                        "if l.startswith('ok ') and ' # ' not in l and ' - ' in l] for a in sys.argv[1:]}}))");
        for (const auto& from : spec.tests_from) script += " " + tap_file(from);
        script += " > " + ids + "\n";
        extra_env[warden::kTestsFromFdVariable] = std::to_string(warden::kFirstPassedFd);
        inputs.push_back((s.dir / "tests-from.json").string());
      }
      const std::string line =
          sandbox_line(spec, extra_env, inputs) + (feeding.contains(name) ? " >" + tap_file(name) : " >/dev/null") + " 2>&1";
      // A refused proposal's checks may fail; an accepted one's must pass here too.
      for (int64_t r = 0; r < spec.runs; ++r) script += line + (a.accepted ? "\n" : " || true\n");
    }
    // The kernel's oracle run: the same checks once more (on the tree as it stands: the same work).
    for (const auto& name : a.oracle_checks) script += sandbox_line(check_spec(s, name), {}) + " >/dev/null 2>&1 || true\n";
    script += a.accepted ? "git -c user.name=bench -c user.email=bench@localhost commit -q -m " + quote(a.step_id) + "\n"
                         : "git reset -q --hard\n";
  }
  fs::remove_all(prep);
  s.shell_script = s.dir / "shell-loop.sh";
  if (auto st = warden::write_file_atomic(s.shell_script, script, 0755); !st) die(st.error().message);
}

// The executor's proposals (the kernel's base runs are attempts of the shell loop too).
size_t proposals(const Scenario& s) {
  return static_cast<size_t>(std::count_if(s.attempts.begin(), s.attempts.end(), [](const Attempt& a) { return !a.base; }));
}

void shell_build(Scenario& s, bool keep) {
  const fs::path repo = s.dir / "shell-repo", worktree = s.dir / "shell-worktree";
  fs::remove_all(repo);
  fs::remove_all(worktree);
  run_command({"cp", "-a", s.template_repo.string(), repo.string()});
  const int64_t start = now_ns();
  run_command({"bash", s.shell_script.string()});
  if (keep) s.shell_ms.push_back(ms_between(start, now_ns()));
  fs::remove_all(repo);
  fs::remove_all(worktree);
}

// The N-file repository: bench_repo's tree plus a blueprint adding a package and its tests,
// under a policy whose only check is the test suite.
Scenario generated_scenario(const fs::path& work, uint64_t files) {
  Scenario s;
  s.label = std::to_string(files) + "-file repository";
  s.dir = work / ("repo-" + std::to_string(files));
  fs::create_directories(s.dir);
  s.template_repo = s.dir / "template";
  warden::bench::make_repo(s.template_repo, files);

  Json policy = {{"format", "warden.policy/v1"},
                 {"name", "bench-tests-only"},
                 {"language", "python"},
                 {"sandbox_profile", "default"},
                 {"checks", {{{"name", "tests"}, {"argv", {"python3", "/warden/checks/run_tests.py"}}, {"report_format", "tap"}}}},
                 {"required_checks", {"tests"}},
                 {"invariants", Json::object()}};
  const fs::path policy_path = s.dir / "policy.json";
  if (auto st = warden::write_file_atomic(policy_path, policy.dump()); !st) die(st.error().message);
  auto function = [](const std::string& name, const std::string& body) {
    return Json{{"names", {name}}, {"module", "pkg"}, {"path", "src/pkg/" + name + ".py"},
                {"content", "def " + name + "(x: int) -> int:\n    return " + body + "\n"}};
  };
  auto test = [](const std::string& name, const std::string& assertion) {
    return Json{{"name", "test_" + name}, {"path", "tests/test_" + name + ".py"}, {"covers", {name}},
                {"content", "from pkg." + name + " import " + name + "\n\n\ndef test_" + name + "() -> None:\n    assert " +
                                assertion + "\n"}};
  };
  Json blueprint = {{"format", "warden.blueprint/v1"},
                    {"name", "bench"},
                    {"language", "python"},
                    {"repository", {{"base", "HEAD"}}},
                    {"goals", {"a small package added to a large repository"}},
                    {"policy", policy_path.string()},
                    {"modules", {{{"name", "pkg"}, {"path", "src/pkg/__init__.py"}, {"content", "\"\"\"The bench package.\"\"\"\n"}}}},
                    {"functions", {function("inc", "x + 1"), function("twice", "2 * x")}},
                    {"tests", {test("inc", "inc(1) == 2"), test("twice", "twice(2) == 4")}},
                    {"constraints", {{"allowed_paths", {"src/**", "tests/**"}}}}};
  auto spec = warden::kernel::BlueprintSpec::from_json(blueprint);
  if (!spec) die(spec.error().message);
  s.blueprint = std::move(*spec);
  s.blueprint_dir = s.dir;
  auto loaded = warden::kernel::Policy::load(policy_path.string());
  if (!loaded) die(loaded.error().message);
  s.policy = std::move(*loaded);
  return s;
}

Scenario calculator_scenario(const fs::path& work, const fs::path& source_dir) {
  Scenario s;
  s.label = "calculator";
  s.dir = work / "calculator";
  fs::create_directories(s.dir);
  s.blueprint_dir = source_dir / "examples" / "calculator";
  auto spec = warden::kernel::BlueprintSpec::load((s.blueprint_dir / "blueprint.json").string());
  if (!spec) die(spec.error().message);
  s.blueprint = std::move(*spec);
  auto policy = warden::kernel::Policy::load(s.blueprint.policy);
  if (!policy) die(policy.error().message);
  s.policy = std::move(*policy);
  // The seeded first commit `warden build` would make, made once with the kernel's own code.
  s.template_repo = s.dir / "template";
  warden::LogicalClock clock(1'700'000'000'000, 1000);
  auto seeded = warden::kernel::open_or_seed_repository(s.template_repo, warden::kernel::RepositorySeed{s.blueprint_dir / *s.blueprint.seed}, clock);
  if (!seeded) die(seeded.error().message);
  return s;
}

void run_scenario(Scenario& s, int runs, bool quick, const warden::NoteSigner& signer, ChildLifetimes& children) {
  std::cerr << "kernel_bench: " << s.label << "...\n";
  auto profile = s.policy.sandbox_profile_with_programs();
  if (!profile) die(profile.error().message);
  auto sandbox = warden::Sandbox::create(std::move(*profile));
  if (!sandbox) die(sandbox.error().message);
  // The first build learns what the kernel does (and warms the caches); the quick run keeps it.
  s.attempts = warden_build(s, signer, children, quick);
  write_shell_loop(s, *sandbox);
  shell_build(s, quick);
  for (int i = quick ? 1 : 0; i < runs; ++i) {
    // Alternating which goes first, so a drift in the machine's load hits both alike.
    if (i % 2 == 0) {
      warden_build(s, signer, children, true);
      shell_build(s, true);
    } else {
      shell_build(s, true);
      warden_build(s, signer, children, true);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false, json = false;
  int runs = 5;
  uint64_t files = 10000;
  std::string source_dir = WARDEN_SOURCE_DIR;
  CLI::App app{"The kernel's overhead per build step, and a Warden build next to a plain shell loop"};
  app.add_flag("--quick", quick, "1 build of each, 200 files; always exits 0 unless a step fails");
  app.add_option("--runs", runs, "Builds of each kind per scenario (medians reported)")->check(CLI::Range(1, 100));
  app.add_option("--files", files, "Files in the generated repository")->check(CLI::Range(1, 1000000));
  app.add_option("--source-dir", source_dir, "Warden's source tree (for examples/calculator)");
  app.add_flag("--json", json, "Print one JSON object instead of a table");
  CLI11_PARSE(app, argc, argv);
  if (quick) {
    runs = 1;
    files = std::min<uint64_t>(files, 200);
  }

  ChildLifetimes children;
  auto work_dir = warden::ScratchDir::create(fs::temp_directory_path(), "kernel-bench-", 0711);
  if (!work_dir) die(work_dir.error().message);
  auto signer = warden::NoteSigner::generate("warden.local/kernel-bench");
  if (!signer) die(signer.error().message);

  std::vector<Scenario> scenarios;
  scenarios.push_back(calculator_scenario(work_dir->path(), source_dir));
  scenarios.push_back(generated_scenario(work_dir->path(), files));
  for (auto& s : scenarios) run_scenario(s, runs, quick, *signer, children);

  bool ok = true;
  Json out = {{"runs", runs}, {"scenarios", Json::array()}};
  if (!json) std::printf("Warden builds and the shell loop interleaved, %d of each per scenario\n", runs);
  for (const auto& s : scenarios) {
    const double overhead = median(s.overhead_ms), warden_ms = median(s.warden_ms), shell_ms = median(s.shell_ms);
    const double ratio = warden_ms / shell_ms;
    const bool overhead_ok = overhead <= 20.0, ratio_ok = ratio <= 1.1;
    ok = ok && overhead_ok && ratio_ok;
    size_t steps = s.overhead_ms.size() / s.warden_ms.size();
    if (json) {
      out["scenarios"].push_back({{"name", s.label},
                                  {"steps", steps},
                                  {"proposals", proposals(s)},
                                  {"overhead_ms", {{"median", overhead}, {"p90", percentile(s.overhead_ms, 0.9)}, {"max", percentile(s.overhead_ms, 1.0)}}},
                                  {"checks_per_step_ms", median(s.checks_ms)},
                                  {"outside_steps_ms", median(s.outside_ms)},
                                  {"warden_total_ms", warden_ms},
                                  {"shell_total_ms", shell_ms},
                                  {"ratio", ratio},
                                  {"ok", overhead_ok && ratio_ok}});
      continue;
    }
    auto verdict = [](bool pass) { return pass ? "PASS" : "FAIL"; };
    std::printf("\n%s: %zu steps, %zu proposals; %zu step samples\n", s.label.c_str(), steps, proposals(s),
                s.overhead_ms.size());
    std::printf("  %-34s median %8.1f ms  p90 %8.1f  max %8.1f   (target median <= 20 ms)  %s\n",
                "kernel overhead per step", overhead, percentile(s.overhead_ms, 0.9), percentile(s.overhead_ms, 1.0),
                verdict(overhead_ok));
    std::printf("  %-34s median %8.1f ms\n", "sandboxed checks per step", median(s.checks_ms));
    std::printf("  %-34s median %8.1f ms   (repository, plan, ledger seal)\n", "build work outside the steps",
                median(s.outside_ms));
    std::printf("  %-34s median %8.1f ms\n", "Warden build, total", warden_ms);
    std::printf("  %-34s median %8.1f ms   Warden %.2fx the shell loop (target <= 1.1x)  %s\n", "shell loop, total",
                shell_ms, ratio, verdict(ratio_ok));
  }
  if (json) {
    out["ok"] = ok;
    std::cout << out.dump(2) << "\n";
  }
  return quick || ok ? 0 : 1;
}
