// A sandbox profile: everything that decides what a sandboxed program sees and may do —
// read-only binds, generated files, the writable workspace, the environment, resource
// limits, output caps and the seccomp policy. Profiles are JSON files in
// policies/sandbox/; a profile's digest (SHA-256 of its canonical JSON) goes into every
// result it produces, so two results are comparable only when their profiles are equal.
//
// Profiles are plain values, safe to share read-only. An Error from from_json()/parse()
// (invalid_argument, naming the field) means the profile text is wrong; load() adds
// not_found for an unknown built-in name and the file errors of read_file().
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/canonical_json.h"
#include "common/error.h"
#include "common/sha256.h"

namespace warden {

struct BindMount {
  std::string src, dest;
  bool optional = false;  // skipped when src does not exist on this host
};

struct SymlinkEntry {
  std::string path, target;
};

// A small file made for the sandbox (passwd, hosts, ...), so nothing of the host's /etc leaks.
struct DataFile {
  std::string path, content;
};

struct TmpfsMount {
  std::string path;
  uint64_t size_bytes = 0;
};

struct ResourceLimits {
  uint64_t cpu_seconds = 0;          // RLIMIT_CPU (soft; the hard limit is one second more)
  uint64_t address_space_bytes = 0;  // RLIMIT_AS
  // Processes of one run: its cgroup's pids.max; RLIMIT_NPROC (counted per host uid) when
  // no pids cgroup holds the run.
  uint64_t processes = 0;
  uint64_t file_size_bytes = 0;      // RLIMIT_FSIZE
  uint64_t open_files = 0;           // RLIMIT_NOFILE
  int64_t wall_timeout_ms = 0;       // the whole process tree is killed after this
  // Bounded per run through its cgroup (run_cgroup.h) where the host has one:
  uint64_t memory_bytes = 0;       // RAM of the whole run, tmpfs pages (its /tmp, /dev/shm) included
  uint64_t cpu_quota_percent = 0;  // CPU time per period, 100 = one CPU
  // The run's writable layer (the overlay's upper directory) as a tmpfs of its own (as root):
  uint64_t disk_bytes = 0;
  uint64_t disk_inodes = 0;
};

struct OutputLimits {
  uint64_t keep_bytes = 0;  // per stream, kept and stored as a blob
  uint64_t head_bytes = 0;  // shown for display
  uint64_t tail_bytes = 0;
  uint64_t max_bytes = 0;   // per stream: past this the run is killed (output_limit_exceeded)
};

struct SeccompPolicy {
  std::string errno_name = "EPERM";  // what a denied call returns
  std::vector<std::string> deny;     // system call names
  std::vector<std::string> deny_socket_families;  // "AF_INET", ...
  bool deny_namespace_creation = true;            // clone() with CLONE_NEW* flags; clone3 gets ENOSYS
};

struct SandboxProfile {
  std::string name;
  std::string description;
  std::string workspace = "/workspace";
  uint32_t uid = 1000, gid = 1000;  // inside the sandbox
  std::string hostname = "warden";
  // Off: the sandbox has its own network namespace with loopback only. On (executors that
  // call a remote API): the host's network, with /etc/resolv.conf and the CA certificates
  // (/etc/ssl/certs) bound read-only. Written to JSON only when on, so profiles without
  // network keep their digests.
  bool network = false;
  std::vector<BindMount> ro_binds;
  std::vector<SymlinkEntry> symlinks;
  std::vector<DataFile> files;
  std::vector<TmpfsMount> tmpfs;
  std::map<std::string, std::string> env;
  ResourceLimits limits;
  OutputLimits output;
  SeccompPolicy seccomp;
  std::vector<std::string> toolchain;  // host files whose bytes identify the toolchain
  // Host directories whose whole content identifies the toolchain: what a check can read that
  // changes results besides the named files (/usr/local, interpreters' standard libraries and
  // site-packages). A final '*' names every sibling that starts so ("/usr/lib/python3*").
  // Written to JSON only when set, so profiles without them keep their digests.
  std::vector<std::string> toolchain_dirs;

  // Strict: unknown keys, missing fields, relative or non-normalized paths, empty limits
  // and a missing fixed-environment variable are all refused with the field named.
  static Result<SandboxProfile> from_json(const Json& json);
  static Result<SandboxProfile> parse(std::string_view text, std::string_view what);
  // A built-in name ("default", "strict": the files of policies/sandbox/, embedded at
  // build time) or a path to a JSON file.
  static Result<SandboxProfile> load(std::string_view name_or_path);
  // The text load() parses for `name_or_path`, and how its errors name it ("built-in profile
  // default", "profile PATH").
  struct Source {
    std::string text;
    std::string what;
  };
  static Result<Source> source(std::string_view name_or_path);

  Json to_json() const;
  Digest digest() const;  // SHA-256 of the canonical JSON
};

// What a profile with network sees of the host's name resolution and trust store.
inline constexpr std::string_view kNetworkFiles[] = {"/etc/resolv.conf", "/etc/ssl/certs", "/etc/ca-certificates"};

// The environment variables every profile must fix, so that a check's outcome does not
// depend on the host's time zone, locale, clock, home directory or Python hash seed.
inline constexpr std::string_view kRequiredEnv[] = {"TZ", "LC_ALL", "SOURCE_DATE_EPOCH", "HOME", "PYTHONHASHSEED"};

// The embedded policies/sandbox/<name>.json, byte for byte; empty when there is none.
std::string_view builtin_profile_text(std::string_view name);
std::vector<std::string_view> builtin_profile_names();

}  // namespace warden
