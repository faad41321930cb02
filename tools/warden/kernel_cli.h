// What the kernel's commands (build, propose, replay, run status|cancel) share: the clock and id source (system, or logical for golden runs), the executor named on
// the command line and the sandbox its program runs in, the runner's default cache, and
// Ctrl-C turned into a stop request.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/command_launcher.h"
#include "common/error.h"
#include "common/random_source.h"
#include "common/interrupts.h"
#include "executor/proposer.h"
#include "kernel/record/run_lifecycle.h"
#include "kernel/record/run_recovery.h"
#include "tools/warden/run_view.h"

namespace warden::cli {

// One line per dead run whose end was recorded (kernel/record/run_recovery.h), on stderr.
void print_recovered(const std::vector<kernel::RecoveredRun>& runs);

// The default runner cache: shared by every run on this host, reachable by the sandbox's user.
std::string default_cache_dir();

// Under the logical clock a held-out bundle's salt is drawn from a fixed seed, so its digest
// can be checked against a guessed bundle: said on stderr, for golden runs only.
void warn_logical_held_out(const std::string& clock_kind);

// How executors' programs are confined: a sandbox profile (a built-in name, "executor" by
// default, or a profile file) and whether they get the host's network. Both are recorded.
struct ExecutorSandboxOptions {
  std::string profile = "executor";
  bool network = false;
};

// The sandboxed launcher executors run through. With `preflight` (whenever a program is about
// to run) its preflight has passed: an Error (verification_failed) names what failed — there
// is no unconfined fallback. Without, nothing is started (`warden pipeline validate`).
Result<std::shared_ptr<CommandLauncher>> make_executor_launcher(const ExecutorSandboxOptions& options,
                                                                bool preflight = true);

// `fd` (given as `option`) as a channel to `warden serve`: an open, connected unix stream
// socket, made close-on-exec before anything else can run so no sandbox or check inherits it.
// invalid_argument when it is anything else (a standard stream, not open, not such a socket).
Result<UniqueFd> adopt_channel(int fd, std::string_view option);

// "plan", "command:CMD" (CMD's relative paths are relative to `dir`; it runs confined as
// `sandbox` says) or "remote:LABEL" with `channel`, the fd of the unix stream socket `warden
// serve` passes (executor/channel_proposer.h), adopted and made close-on-exec here. An Error
// (invalid_argument) when the spec is none of those, `channel` is missing for remote: or given
// for anything else, or the fd is not an open unix stream socket.
Result<std::unique_ptr<executor::Proposer>> make_proposer(const std::string& spec, const std::filesystem::path& dir,
                                                         const ExecutorSandboxOptions& sandbox,
                                                         std::optional<int> channel = std::nullopt);

}  // namespace warden::cli
