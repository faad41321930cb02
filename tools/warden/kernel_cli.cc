#include "tools/warden/kernel_cli.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <iostream>

#include "executor/command_proposer.h"
#include "executor/plan_proposer.h"
#include "runner/sandboxed_launcher.h"
#include "tools/warden/cli.h"

namespace warden::cli {

int run_exit_code(kernel::RunStatus status) {
  switch (status) {
    case kernel::RunStatus::completed: return kOk;
    case kernel::RunStatus::timeout: return kTimedOut;
    case kernel::RunStatus::cancelled: return kCancelled;
    default: return kVerificationFailed;
  }
}

void print_recovered(const std::vector<kernel::RecoveredRun>& runs) {
  for (const auto& r : runs) {
    if (r.recorded) std::cerr << "warden: run " << r.run_id << " recorded as interrupted: " << r.message << "\n";
  }
}

std::string default_cache_dir() {
  if (::geteuid() == 0) return "/var/cache/warden";
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return std::string(xdg) + "/warden";
  if (const char* home = std::getenv("HOME"); home && *home) return std::string(home) + "/.cache/warden";
  return "/tmp/warden-cache-" + std::to_string(::getuid());
}

Result<Sources> make_sources(const std::string& kind) {
  Sources s;
  if (kind == "logical") {
    // 2023-11-14T22:13:20Z, one second per reading: git dates look like dates, and every
    // reading is distinct.
    s.clock = std::make_unique<LogicalClock>(1'700'000'000'000, 1000);
    s.ids = std::make_unique<SequentialIdSource>();
  } else if (kind == "system") {
    s.clock = std::make_unique<SystemClock>();
    s.ids = std::make_unique<RandomIdSource>();
  } else {
    return fail(Errc::invalid_argument, "--clock must be system or logical, not " + kind);
  }
  return s;
}

Result<std::shared_ptr<CommandLauncher>> make_executor_launcher(const ExecutorSandboxOptions& options, bool preflight) {
  auto profile = SandboxProfile::load(options.profile);
  if (!profile) return std::unexpected(profile.error().with_context("--executor-profile"));
  profile->network = profile->network || options.network;
  auto launcher = SandboxedLauncher::create(std::move(*profile));
  if (!launcher) return std::unexpected(launcher.error());
  if (preflight) {
    if (Status st = (*launcher)->preflight(); !st) return std::unexpected(st.error());
  }
  return std::shared_ptr<CommandLauncher>(std::move(*launcher));
}

Result<std::unique_ptr<executor::Proposer>> make_proposer(const std::string& spec, const std::filesystem::path& dir,
                                                         const ExecutorSandboxOptions& sandbox) {
  if (spec == "plan") return std::make_unique<executor::PlanProposer>();
  constexpr std::string_view kCommand = "command:";
  if (spec.starts_with(kCommand) && spec.size() > kCommand.size()) {
    auto launcher = make_executor_launcher(sandbox);
    if (!launcher) return std::unexpected(launcher.error());
    return std::make_unique<executor::CommandProposer>(spec.substr(kCommand.size()), dir.empty() ? "." : dir,
                                                       std::move(*launcher));
  }
  return fail(Errc::invalid_argument, "--executor must be plan or command:CMD, not \"" + spec + "\"");
}

namespace {

sigset_t stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGUSR1);  // our own "no more waiting"
  return set;
}

}  // namespace

CancelOnSignal::CancelOnSignal() {
  sigset_t set = stop_signals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);  // threads started from here on inherit it
  waiter_ = std::thread([this, set] {
    for (;;) {
      int sig = 0;
      if (sigwait(&set, &sig) != 0) continue;
      if (sig == SIGUSR1) return;
      source_.request_stop();
    }
  });
}

CancelOnSignal::~CancelOnSignal() {
  pthread_kill(waiter_.native_handle(), SIGUSR1);
  waiter_.join();
  sigset_t set = stop_signals();
  pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
}

}  // namespace warden::cli
