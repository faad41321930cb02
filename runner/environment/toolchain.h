// The toolchain's identity: what, besides the tree, the checks and the profile, decides a
// check's outcome — the runner's format, the bwrap binary, the kernel, and the file system
// the check runs on. Part of the result cache key and of every RunResult.
//
// On the host's /usr: the OS release, the files the profile names as its toolchain
// (compilers, interpreters), each by content digest, and every directory the profile names
// in toolchain_dirs (/usr/local, the interpreters' standard libraries and site-packages) by
// the digest of its whole tree (tree_manifest.h), so a host that gained a package or a .pth
// hook has another identity. In an environment: the environment's identity (its digest
// covers every file of it), and nothing of the host's /usr.
//
// toolchain_identity() cannot fail: a file or directory that cannot be resolved or read is
// recorded as "absent", so an unreadable one and a missing one give the same identity. Tree
// digests go through `memo` (file_digest_memo.h: stat() alone for files read before); the
// caller saves it. Thread-safe when each caller has its own memo.
#pragma once

#include "common/canonical_json.h"
#include "common/sha256.h"
#include "runner/environment/environment.h"
#include "runner/environment/file_digest_memo.h"
#include "runner/sandbox/sandbox.h"

namespace warden {

inline constexpr const char* kRunnerIdentity = "warden-runner/1";

struct ToolchainInputs {
  // Without the kernel's release, "kernel" is only the system and machine ("Linux x86_64"):
  // golden runs must give the same bytes on every host that has the same packages installed.
  bool kernel_release = true;
  const Environment* environment = nullptr;  // none: the host's /usr
};

// Host: {"runner", "bwrap": {"path", "sha256"}, "kernel", "os_release_sha256",
//        "files": {path: "sha256:..."|"absent"}, "dirs": {dir: "sha256:..."|"absent"}}
//   ("dirs" only when the profile names toolchain_dirs).
// Environment: {"runner", "bwrap", "kernel", "environment": Environment::identity()}.
Json toolchain_identity(const SandboxProfile& profile, const SandboxHost& host, FileDigestMemo& memo,
                        const ToolchainInputs& inputs = {});

// Where the host's file digests are remembered between processes: a host-wide file beside
// the default cache (/var/cache/warden/file-digests as root, else under $XDG_CACHE_HOME or
// ~/.cache), since what it remembers is the host's, whichever cache a run uses.
std::filesystem::path default_file_digest_memo();

// The directories a toolchain_dirs list names on this host, its final-'*' patterns expanded,
// sorted; a plain entry is listed whether or not it exists.
std::vector<std::string> expand_toolchain_dirs(const std::vector<std::string>& patterns);

}  // namespace warden
