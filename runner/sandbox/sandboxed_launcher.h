// The CommandLauncher (common/command_launcher.h) executors run through: every program in a
// sandbox of the executor's profile (policies/sandbox/executor.json, or one the operator
// names), as the sandbox's host uid, in fresh namespaces:
//   - its workspace (and working directory) is the profile's tmpfs at /workspace: private,
//     empty at start, gone after — never the repository, the ledger, keys or the cache;
//   - the files its request names appear read-only where its command line expects them:
//     an absolute path at that same path, a relative one below /workspace (so "agent.py" or
//     "agents/critic.sh" resolve from the working directory as they did from the executor's
//     folder). They are copies of the bytes Warden read (sealed memfds bwrap copies in,
//     mode r-x or r--), not binds: the sandbox's uid need not reach the host path, and
//     nothing inside can reach the host file. Relative paths that leave the folder ("../x")
//     are not copied, nor is a name reached through a symlink anywhere in it as written
//     (Warden reads as root, and a file in a repository an executor has changed may be a
//     link to a key or a ledger), files the profile shows already (under /usr) are not copied again, and
//     64 MiB per file, 256 MiB in all, is the most copied (more is an error);
//   - stdin is the request's bytes in a sealed memfd, stdout and stderr are captured under
//     the request's cap;
//   - its environment is the profile's plus the request's declared variables, nothing of
//     Warden's own;
//   - the network is the profile's choice (`network`: false, loopback only; true, the
//     host's, with resolv.conf and CA certificates) and is part of confinement();
//   - every process it starts ends with it: the sandbox's PID namespace dies with its init.
// A failing preflight refuses every launch (Errc::verification_failed, the failing parts
// named); there is no unconfined fallback.
//
// Ownership and threads: launch() may run on several threads at once; each concurrent
// launch takes a Sandbox of its own from a pool guarded by a mutex (a Sandbox runs one
// thing at a time), and a Sandbox made for a second concurrent launch runs its own
// preflight once. The launcher owns its sandboxes and their scratch files.
#pragma once

#include <memory>
#include <mutex>
#include <vector>

#include "common/command_launcher.h"
#include "runner/sandbox/sandbox.h"

namespace warden {

class SandboxedLauncher final : public CommandLauncher {
 public:
  // Compiles the profile's seccomp filter and writes its files; starts nothing.
  static Result<std::shared_ptr<SandboxedLauncher>> create(SandboxProfile profile,
                                                           SandboxHost host = SandboxHost::detect());

  // Runs the preflight now (once): an Error (verification_failed) names the failing parts.
  // Callers that must not start work on a host that cannot confine executors ask this first.
  Status preflight();
  Result<SubprocessResult> launch(const LaunchRequest& request) override;
  LaunchConfinement confinement() const override;

 private:
  SandboxedLauncher(SandboxProfile profile, SandboxHost host) : profile_(std::move(profile)), host_(std::move(host)) {}
  Result<std::unique_ptr<Sandbox>> take();
  void give_back(std::unique_ptr<Sandbox> sandbox);

  const SandboxProfile profile_;
  const Digest profile_sha256_ = profile_.digest();
  const SandboxHost host_;
  std::mutex mu_;
  std::vector<std::unique_ptr<Sandbox>> idle_;  // guarded by mu_
};

}  // namespace warden
