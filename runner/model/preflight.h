// The sandbox's proof of itself. Before a Sandbox runs anything it runs a small probe in
// the sandbox, exactly as a check would run (same profile, same overlay workspace), and
// judges what the probe saw: every namespace differs from the runner's, the only network
// interface is loopback, a seccomp filter is loaded with no-new-privileges, no capabilities
// are left, the resource limits are the profile's, the root and system directories are
// read-only, host secrets (/root, /home, /run, ...) are absent, /tmp is private and the
// workspace is writable through the overlay; where the run has a cgroup, the probe's
// processes were charged to it, and where the writable layer is a tmpfs of the run's own, the
// workspace shows that file system's size and inodes. Any failing part makes the sandbox
// refuse to run, naming the part; there is no weaker fallback.
//
// The report also says which limits are enforced, and by what (EnforcedLimit): a cgroup, a
// tmpfs, an RLIMIT, or nothing. Where no cgroup facility is usable that is recorded, not a
// failure: the RLIMITs (always set, a second line where cgroups hold) bound the run instead.
//
// This file is values and pure functions: judge_preflight() only reads its arguments, and
// own_namespaces()/overflow_uid() only read /proc. Running the probe, and remembering its
// report, is Sandbox's job (sandbox.h). A failed PreflightReport is not an Error: it is the
// finding that this host cannot sandbox with this profile.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/canonical_json.h"
#include "runner/model/sandbox_profile.h"

namespace warden {

struct PreflightCheck {
  std::string name;  // sandbox_start, namespaces, network, seccomp, capabilities, identity, limits, filesystem, workspace
  bool ok = false;
  std::string detail;  // why it failed (empty when it passed)
};

// One limit and what enforces it. Deterministic for a host and a profile: no paths of the
// host, no pids, no times.
struct EnforcedLimit {
  // memory, pids, cpu (percent of one CPU), processes_per_uid (RLIMIT_NPROC), cpu_seconds,
  // address_space, file_size, open_files, disk_bytes, disk_inodes (the writable layer),
  // tmpfs_bytes, tmpfs_inodes (a profile tmpfs inside the sandbox, named by `where`). The
  // disk_* limits are an overlay run's (a check's); a workspace bound directly (`warden
  // sandbox exec --workspace`) is the caller's directory, bounded by its own file system.
  std::string limit;
  std::string where;  // the sandbox path of a tmpfs_* limit; empty otherwise
  uint64_t value = 0;  // for a limit `by` a memory cgroup that bounds it indirectly: the memory limit
  std::string by;     // cgroup-v1 | cgroup-v2 | tmpfs | rlimit | none
  bool operator==(const EnforcedLimit&) const = default;
};

struct PreflightReport {
  bool ok = false;
  std::vector<PreflightCheck> checks;
  std::vector<EnforcedLimit> enforced;

  // {"ok": .., "checks": [{"name", "ok"}...], "enforced": [...]} plus "detail" for failed
  // checks: deterministic for a working sandbox on a host, so it can sit in a RunResult's
  // deterministic part. "enforced" is written only when not empty and optional when read, so
  // results recorded before it (in ledgers being replayed) keep their bytes and digests.
  Json to_json() const;
  static Result<PreflightReport> from_json(const Json& json);
  // "seccomp: Seccomp is 0, want 2 (filter); limits: ..." — the failing parts.
  std::string failures() const;
};

// The names of the files the probe expects in the overlay workspace: the lower layer holds
// kProbeLowerFile ("warden-lower\n") and kProbeHiddenFile, which the top layer whites out.
inline constexpr const char* kProbeLowerFile = "lower.txt";
inline constexpr const char* kProbeHiddenFile = "hidden.txt";
inline constexpr const char* kProbeWrittenFile = ".warden-probe";

// The shell script the probe runs with /bin/sh -c.
std::string preflight_script(const SandboxProfile& profile);

// What the runner knows from outside.
struct HostFacts {
  std::map<std::string, std::string> namespaces;  // "net" -> "net:[4026531840]" for the runner itself
  bool probe_started = false;                     // the sandbox ran at all
  std::string start_error;                        // why not
  int exit_code = -1;
  std::string stdout_text, stderr_text;
  bool workspace_write_seen = false;  // the probe's write reached the overlay's upper directory
  std::string overflow_uid = "65534";  // /proc/sys/kernel/overflowuid: how unmapped owners show

  // How runs are bounded on this host (SandboxHost), and what the probe's run showed.
  std::string cgroup_by;                        // cgroup-v1 | cgroup-v2 | "" (none usable)
  bool cgroup_pids = false, cgroup_memory = false, cgroup_cpu = false;
  uint64_t nproc_limit = 0;                     // the RLIMIT_NPROC every run gets
  bool run_tmpfs = false;                       // writable layers on a tmpfs of the run's own
  bool scratch_on_tmpfs = false;                // else, where they go is a tmpfs (charged to memory)
  uint64_t cgroup_memory_peak = 0, cgroup_pids_peak = 0;  // of the probe's run
};

// Pure: which limits a run of `profile` gets on the host `facts` describe, and by what.
std::vector<EnforcedLimit> enforced_limits(const SandboxProfile& profile, const HostFacts& facts);

// Pure: judges the probe's output against the profile.
PreflightReport judge_preflight(const SandboxProfile& profile, const HostFacts& facts);

// The runner's own namespace links, for comparison.
std::map<std::string, std::string> own_namespaces();
// /proc/sys/kernel/overflowuid, trimmed.
std::string overflow_uid();

}  // namespace warden
