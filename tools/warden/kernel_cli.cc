#include "tools/warden/kernel_cli.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <iostream>

#include "common/identifier.h"
#include "executor/channel_proposer.h"
#include "executor/command_proposer.h"
#include "executor/plan_proposer.h"
#include "runner/sandbox/sandboxed_launcher.h"
#include "tools/warden/cli.h"

namespace warden::cli {

void print_recovered(const std::vector<kernel::RecoveredRun>& runs) {
  for (const auto& r : runs) {
    if (r.recorded) std::cerr << "warden: run " << r.run_id << " recorded as interrupted: " << r.message << "\n";
    if (!r.held_out.empty()) std::cerr << "warden: run " << r.run_id << ": " << r.held_out << "\n";
  }
}

std::string default_cache_dir() {
  if (::geteuid() == 0) return "/var/cache/warden";
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return std::string(xdg) + "/warden";
  if (const char* home = std::getenv("HOME"); home && *home) return std::string(home) + "/.cache/warden";
  return "/tmp/warden-cache-" + std::to_string(::getuid());
}

void warn_logical_held_out(const std::string& clock_kind) {
  if (clock_kind != "logical") return;
  std::cerr << "warden: warning: --clock logical draws the held-out salt from a fixed seed, so the bundle's digest "
               "can be checked against a guessed bundle: use it for golden runs, never for tests that must stay unseen\n";
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

namespace {

// A remote executor's label: what follows "remote:" in the recorded executor name.
bool valid_remote_label(std::string_view label) { return is_identifier(label, 64); }

}  // namespace

Result<UniqueFd> adopt_channel(int fd, std::string_view option) {
  const std::string what = std::string(option) + " " + std::to_string(fd);
  // Standard streams carry the build's own output (--json lines): never the protocol's.
  if (fd <= STDERR_FILENO) return fail(Errc::invalid_argument, what + " is a standard stream, not a channel");
  if (::fcntl(fd, F_GETFD) < 0) return fail(Errc::invalid_argument, what + " is not an open file descriptor");
  if (::fcntl(fd, F_SETFD, FD_CLOEXEC) < 0) return fail(Errc::io_error, what + ": cannot make it close-on-exec");
  struct stat st{};
  int type = 0;
  socklen_t type_len = sizeof type;
  sockaddr_storage addr{}, peer{};
  socklen_t addr_len = sizeof addr, peer_len = sizeof peer;
  if (::fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode) ||
      ::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &type_len) != 0 || type != SOCK_STREAM ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &addr_len) != 0 || addr.ss_family != AF_UNIX ||
      ::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_len) != 0) {
    return fail(Errc::invalid_argument,
                what + " is not a connected unix stream socket (it is the channel `warden serve` passes)");
  }
  return UniqueFd(fd);
}

Result<std::unique_ptr<executor::Proposer>> make_proposer(const std::string& spec, const std::filesystem::path& dir,
                                                         const ExecutorSandboxOptions& sandbox,
                                                         std::optional<int> channel) {
  constexpr std::string_view kRemote = "remote:";
  if (spec.starts_with(kRemote)) {
    if (!channel) {
      return fail(Errc::invalid_argument, "--executor " + spec + " needs --executor-channel: remote executors attach "
                                          "through `warden serve`, which runs the build with the channel");
    }
    const std::string label = spec.substr(kRemote.size());
    if (!valid_remote_label(label)) {
      return fail(Errc::invalid_argument, "--executor remote:LABEL needs a LABEL of 1 to 64 " + std::string(kIdentifierRule));
    }
    auto socket = adopt_channel(*channel, "--executor-channel");
    if (!socket) return std::unexpected(socket.error());
    return std::make_unique<executor::ChannelProposer>(label, std::move(*socket));
  }
  if (channel) return fail(Errc::invalid_argument, "--executor-channel is only for --executor remote:LABEL");
  if (spec == "plan") return std::make_unique<executor::PlanProposer>();
  constexpr std::string_view kCommand = "command:";
  if (spec.starts_with(kCommand) && spec.size() > kCommand.size()) {
    auto launcher = make_executor_launcher(sandbox);
    if (!launcher) return std::unexpected(launcher.error());
    return std::make_unique<executor::CommandProposer>(spec.substr(kCommand.size()), dir.empty() ? "." : dir,
                                                       std::move(*launcher));
  }
  return fail(Errc::invalid_argument, "--executor must be plan, command:CMD or remote:LABEL, not \"" + spec + "\"");
}

}  // namespace warden::cli
