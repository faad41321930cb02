// Shared by the sandbox tests: a workspace holding the hostile helper, a test profile with
// limits small enough to hit quickly, and counting processes by marker on the host.
#pragma once

#include <sys/types.h>

#include <chrono>

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "runner/sandbox/sandbox.h"

namespace warden::test {

// The default profile with tight limits, so hostile programs hit them in milliseconds.
SandboxProfile test_profile();

// Processes on the host whose command line contains `marker`: their pids, and how many (the
// count also prints each one's status, as a survivor).
std::vector<pid_t> processes_with(const std::string& marker);
int count_processes_with(const std::string& marker);

// Waits (up to `limit`) until no process of host uid `uid` exists: RLIMIT_NPROC counts a
// uid's processes until they are reaped, so a test that spends the budget must start after
// the previous one's processes are really gone. Returns how many were left.
int wait_for_uid_to_drain(uid_t uid, std::chrono::milliseconds limit);

// A fresh marker such as "warden-marker-1a2b3c".
std::string fresh_marker();

// A scratch dir with a workspace directory owned by the sandbox's host uid, holding the
// hostile helper as ./hostile.
class HostileWorkspace {
 public:
  explicit HostileWorkspace(const SandboxHost& host);
  const std::filesystem::path& dir() const { return ws_; }
  const std::filesystem::path& root() const { return scratch_->path(); }

 private:
  std::optional<ScratchDir> scratch_;
  std::filesystem::path ws_;
};

// A root file system for environment tests (runner/environment): the host's /usr/bin/<name>
// for each of `programs` and the shared libraries ldd names for them, laid out under
// root/usr as a merged-/usr system is, each file with its host mode (the dynamic loader must
// stay executable). Throws when a program or library cannot be copied.
void copy_host_programs(const std::filesystem::path& root, const std::vector<std::string>& programs);

// Copies a file, setting its mode and owner.
void install_file(const std::filesystem::path& from, const std::filesystem::path& to, unsigned mode, uid_t uid, gid_t gid);

}  // namespace warden::test
