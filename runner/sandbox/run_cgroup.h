// Per-run control groups: every sandboxed run gets a cgroup of its own that bounds its
// processes (pids), memory and CPU, and through which the whole run is killed. Two layouts:
//
//  - cgroup v2, when this process's own cgroup is a delegated subtree: writable, with pids
//    and memory (cpu when offered) already enabled in its cgroup.subtree_control. Runs go in
//    <own cgroup>/warden/<name>.
//  - cgroup v1, per hierarchy: pids, memory and cpu, each used when it is mounted and this
//    process may write below its own cgroup there (/proc/self/cgroup names it). Runs go in
//    <mount>/<own cgroup>/warden/<name> of every usable hierarchy.
//
// <name> is "p<pid>.<start time>-<tid>.<n>" (common/process_identity.h): a Warden killed
// before it removed its runs' cgroups leaves them behind, and CgroupHost::reclaim_orphans()
// (called when a Sandbox is made) kills whatever still runs in those whose owner is gone and
// removes them, as reclaim_orphaned_scratch() does for scratch directories.
//
// How a run joins: RunCgroup opens the join file of every cgroup it made before the sandbox
// is forked (v1: `tasks`, v2: cgroup.procs); the sandbox's first process writes "0" to each
// (one write(2) per hierarchy, async-signal-safe) before it forks anything or executes bwrap,
// so no process of the run ever exists outside the cgroup. The file was opened by Warden, so
// the kernel checks Warden's credentials, not those of the dropped uid that writes. On v1 a
// single-threaded process moving itself through `tasks` skips the global threadgroup lock
// (whose write side waits for an RCU grace period: ~8 ms per run measured here through
// cgroup.procs, ~0.05 ms through tasks). On v2 cgroup.procs is the only way in short of
// clone3(CLONE_INTO_CGROUP), and it pays that grace period.
//
// Thread safety: CgroupHost is a plain value, safe to share read-only. A RunCgroup belongs to
// one run on one thread. Nothing here is durable: the kernel's cgroup tree is the state.
// Errors: detect() never fails (an unusable host is a CgroupHost whose unavailable() says
// why); RunCgroup::create() returns the errno error of the step that failed, and leaves no
// directory behind.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/canonical_json.h"
#include "common/error.h"
#include "common/file.h"

namespace warden {

struct CgroupLimits {
  uint64_t pids = 0;               // pids.max
  uint64_t memory_bytes = 0;       // v1 memory.limit_in_bytes (+ memsw), v2 memory.max (+ swap.max 0)
  uint64_t cpu_quota_percent = 0;  // 100 = one CPU's time per period (cfs quota / cpu.max)
};

class CgroupHost {
 public:
  // Reads /proc/self/cgroup and /proc/self/mountinfo; probes writability with access(2).
  static CgroupHost detect();
  // A host with no cgroup facility: runs are bounded by RLIMITs alone.
  static CgroupHost none(std::string reason);

  // "pids", "memory" or "cpu": whether runs get that controller.
  bool has(std::string_view controller) const;
  bool usable() const { return !controllers_.empty(); }
  // "cgroup-v1" or "cgroup-v2"; empty when !usable().
  std::string_view by() const;
  // Why no cgroup (or which controllers are missing, and why); empty when all three are used.
  const std::string& unavailable() const { return unavailable_; }

  // Kills the processes of, and removes, the run cgroups whose owning process is gone.
  // Returns how many were removed. Best effort: one that cannot be removed is left.
  size_t reclaim_orphans() const;

  // What detect() found, as a value to remember (the one-shot sandbox starts from a remembered
  // layout and checks it against a fresh detect() before its command may start), and back;
  // from_json() names this process as the owner, as detect() does, and refuses a malformed one.
  Json to_json() const;
  static std::optional<CgroupHost> from_json(const Json& json);
  bool operator==(const CgroupHost&) const = default;

 private:
  friend class RunCgroup;
  struct Controller {
    std::string name;               // pids, memory, cpu
    std::filesystem::path parent;   // .../warden, where this controller's run cgroups go
    bool operator==(const Controller&) const = default;
  };
  bool v2_ = false;
  std::vector<Controller> controllers_;
  std::string unavailable_;
  std::string owner_;  // "p<pid>.<start time>" of this process, the names' prefix
  // The distinct parents (one for v2, one per hierarchy for v1).
  std::vector<std::filesystem::path> parents() const;
};

// What a run's cgroup saw, read after the run.
struct CgroupEvents {
  bool memory_oom = false;   // the memory limit was reached and the OOM killer ran in the run
  bool pids_max = false;     // a fork or clone failed at pids.max
  uint64_t memory_peak = 0;  // bytes: nonzero once any process of the run was charged
  uint64_t pids_peak = 0;    // processes at once (0 where the kernel does not keep it)
};

// One run's cgroup (in every usable hierarchy). Move-only; the destructor kills whatever is
// still in it, waits for it to empty (bounded) and removes the directories.
class RunCgroup {
 public:
  // make() and limit(): a cgroup that bounds its processes from the start.
  static Result<RunCgroup> create(const CgroupHost& host, const CgroupLimits& limits);
  // The directories and their join files, without limits yet: for a run whose processes
  // join now but run nothing of theirs before limit() has succeeded (Sandbox holds bwrap
  // before its seccomp program meanwhile, so the limits are written while bwrap sets up).
  static Result<RunCgroup> make(const CgroupHost& host);
  Status limit(const CgroupLimits& limits) const;

  RunCgroup(RunCgroup&&) noexcept = default;
  RunCgroup& operator=(RunCgroup&&) = delete;
  RunCgroup(const RunCgroup&) = delete;
  RunCgroup& operator=(const RunCgroup&) = delete;
  ~RunCgroup();

  // Open for writing: a single-threaded process joins the run by writing "0" to each.
  std::vector<int> join_fds() const;
  // SIGKILLs every process of the run without waiting for them to go (v2: cgroup.kill; v1:
  // every pid cgroup.procs lists). Safe to call from drive()'s stop(), which must not block.
  void kill() const;
  CgroupEvents events() const;
  const std::vector<std::filesystem::path>& dirs() const { return dirs_; }

 private:
  RunCgroup() = default;
  bool v2_ = false;
  std::vector<std::filesystem::path> dirs_;  // one per hierarchy, made by make()
  std::vector<UniqueFd> dir_fds_;            // those directories, open (O_PATH): files are opened relative to them
  std::vector<UniqueFd> procs_;              // their join files, open for writing
  int pids_ = -1, memory_ = -1, cpu_ = -1;   // the index in dirs_ of each controller's directory; -1: none
};

// SIGKILLs every process `dir`/cgroup.procs lists; with `wait`, again until it lists none
// (bounded to ~2 s). True when it was seen empty.
bool kill_cgroup_processes(const std::filesystem::path& dir, bool wait = true);

}  // namespace warden
