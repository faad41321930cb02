// Passed preflight verdicts remembered across processes, so a one-shot `warden sandbox exec`
// (an agent harness calls one per tool call) does not re-run the probe every time; and what
// each profile compiles to (CompiledProfile), so it does not re-derive that either.
//
// A verdict is keyed by everything the probe's outcome depends on (PreflightKey): the
// profile digest, the seccomp program, the probe script, the bwrap binary's identity, the
// kernel's identity, the runner's namespaces and the uids involved. Only passing verdicts
// are kept: a failing host is probed again each time, so fixing it takes effect at once. A
// verdict is never older than kMaxAge, and the caller forgets it when a sandbox then fails to
// start (bwrap refuses closed rather than starting a weaker sandbox, so a changed host shows
// up as a start failure and the next call probes again).
//
// Trust: a remembered verdict lets commands run without a probe, so it is only taken from a
// directory and file owned by this process's effective uid and writable by no one else
// (checked on the open descriptors, no symlinks followed); anything else is ignored as if
// absent and never overwritten. The directory is created 0700.
//
// A PreflightCache is a path and a clock reading; safe to copy; concurrent processes may
// share a directory (writes are atomic renames). Errors are never returned: a cache that
// cannot be read or written is a miss, and the probe runs.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/sha256.h"
#include "runner/model/preflight.h"

namespace warden {

struct SandboxHost;
struct SandboxProfile;

// The host side of a verdict's key: the kernel (uname), this process's namespaces and
// effective uid, how unmapped owners show (overflowuid), and which bwrap binary runs. bwrap is
// named by its file's identity (device, inode, size, modification and change times), not its
// bytes: replacing or rewriting the file changes the inode or the change time, which no
// unprivileged caller can set back, and stat() costs microseconds where hashing 70 KB did not.
// Read once per Sandbox, the first time a verdict's key is needed: on the one-shot path,
// while bwrap sets up, held before its seccomp program (SpawnSpec::seccomp).
struct HostIdentity {
  std::vector<std::string> kernel;                 // sysname, release, version, machine
  std::map<std::string, std::string> namespaces;   // own_namespaces()
  std::string overflow_uid;
  uid_t euid = 0;
  std::string bwrap_file;  // "dev:ino:size:mtime_ns:ctime_ns"; empty when bwrap cannot be stat()ed

  static HostIdentity read(const std::filesystem::path& bwrap);
};

// What the probe's verdict depends on, digested: the profile's parts and host.identity (read
// here when the host has none).
Digest preflight_key(const SandboxProfile& profile, const Digest& profile_digest, const std::string& seccomp_program,
                     const SandboxHost& host);

// What a profile compiles to, remembered so that a one-shot process need not derive it
// again (Sandbox::open): the profile's digest and its seccomp program. Not the verdict's
// key: that depends on the host (namespaces, bwrap), which the one-shot reads while bwrap
// sets up, not before it starts.
struct CompiledProfile {
  Digest profile_digest;
  std::string seccomp_program;
  // Beside it, the host's layout last seen (SandboxHost::layout()): the one-shot starts bwrap
  // from it rather than detecting the host first, and checks it against a fresh detection
  // before the command may start. A guess, never trusted for more.
  std::optional<Json> host_layout;
};

// The key a CompiledProfile is remembered under: what the derivation depends on, and no
// more. The bytes the profile was parsed from; this executable's build id (the code that
// digests and compiles, libseccomp included when linked in) and libseccomp's version (a
// shared library's is not in the build id); the kernel (uname), whose seccomp support the
// compiler asks about; and the uids (the cache is only trusted where the sandbox's uid is
// not the cache's owner). nullopt for an executable without a build id: nothing is
// remembered. Only for a profile used exactly as parsed: one changed afterwards is not its
// bytes.
std::optional<Digest> compiled_profile_key(std::string_view profile_source, const SandboxHost& host);

class PreflightCache {
 public:
  static constexpr std::chrono::hours kMaxAge{24};

  explicit PreflightCache(std::filesystem::path dir) : dir_(std::move(dir)) {}

  const std::filesystem::path& dir() const { return dir_; }
  // A passing verdict recorded for `key` by this uid within kMaxAge.
  std::optional<PreflightReport> get(const Digest& key) const;
  // Records a passing verdict (a failing one is ignored).
  void put(const Digest& key, const PreflightReport& report) const;
  // Drops the verdict for `key`, if any.
  void forget(const Digest& key) const;

  // What a profile compiled to, recorded under compiled_profile_key() by this uid within
  // kMaxAge, if its program is the one its digest names.
  std::optional<CompiledProfile> get_compiled(const Digest& key) const;
  void put_compiled(const Digest& key, const CompiledProfile& compiled) const;
  void forget_compiled(const Digest& key) const;

 private:
  // The trusted file `name`'s text (see Trust above); nullopt when absent or not trusted.
  std::optional<std::string> read_entry(const std::string& name) const;
  // Writes `text` as `name` by an atomic rename; failures are silent (a later miss).
  void write_entry(const std::string& name, std::string_view text) const;

  std::filesystem::path dir_;
};

}  // namespace warden
