// The toolchain's identity: what, besides the tree, the checks and the profile, decides a
// check's outcome on this host — the runner's format, the bwrap binary, the kernel release,
// the OS release and the files the profile names as its toolchain (compilers, interpreters),
// each by content digest. Part of the result cache key and of every RunResult.
//
// toolchain_identity() reads and hashes every named file on each call (no cache, no shared
// state: thread-safe) and cannot fail: a file that cannot be resolved or read is recorded as
// "absent", so an unreadable file and a missing one give the same identity.
#pragma once

#include "common/canonical_json.h"
#include "common/sha256.h"
#include "runner/sandbox/sandbox.h"

namespace warden {

inline constexpr const char* kRunnerIdentity = "warden-runner/1";

// {"runner", "bwrap": {"path", "sha256"}, "kernel", "os_release_sha256", "files": {path: "sha256:..."|"absent"}}
// Without `kernel_release`, "kernel" is only the system and machine ("Linux x86_64"): golden
// runs must give the same bytes on every host that has the same packages installed.
Json toolchain_identity(const SandboxProfile& profile, const SandboxHost& host, bool kernel_release = true);

}  // namespace warden
