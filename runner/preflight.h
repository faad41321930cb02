// The sandbox's proof of itself. Before a Sandbox runs anything it runs a small probe in
// the sandbox, exactly as a check would run (same profile, same overlay workspace), and
// judges what the probe saw: every namespace differs from the runner's, the only network
// interface is loopback, a seccomp filter is loaded with no-new-privileges, no capabilities
// are left, the resource limits are the profile's, the root and system directories are
// read-only, host secrets (/root, /home, /run, ...) are absent, /tmp is private and the
// workspace is writable through the overlay. Any failing part makes the sandbox refuse to
// run, naming the part; there is no weaker fallback.
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
#include "runner/sandbox_profile.h"

namespace warden {

struct PreflightCheck {
  std::string name;  // sandbox_start, namespaces, network, seccomp, capabilities, identity, limits, filesystem, workspace
  bool ok = false;
  std::string detail;  // why it failed (empty when it passed)
};

struct PreflightReport {
  bool ok = false;
  std::vector<PreflightCheck> checks;

  // {"ok": .., "checks": [{"name", "ok"}...]} plus "detail" for failed checks: deterministic
  // for a working sandbox, so it can sit in a RunResult's deterministic part.
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
};

// Pure: judges the probe's output against the profile.
PreflightReport judge_preflight(const SandboxProfile& profile, const HostFacts& facts);

// The runner's own namespace links, for comparison.
std::map<std::string, std::string> own_namespaces();
// /proc/sys/kernel/overflowuid, trimmed.
std::string overflow_uid();

}  // namespace warden
