// Starting bwrap for one sandboxed run, and owning it until every process of the run is
// gone. The runner's child is a small reaper (a child subreaper, see reaper_main) whose own
// child becomes bwrap; that child (between fork and exec, async-signal-safe calls only) joins
// the run's cgroup before anything else (so nothing of the run ever runs outside it), puts
// itself in its own process group, resets signals, wires stdin (the given descriptor, else /dev/null) and stdout/stderr to the capture pipes,
// drops to the sandbox's host uid when Warden runs as root (so RLIMIT_NPROC binds: the
// kernel never enforces it on uid 0), optionally mounts the overlay workspace inside a
// private user + mount namespace, applies the resource limits, asks to be killed if the
// runner dies, and executes bwrap. For the overlay, the child makes its namespaces before
// the uid drop (the reaper writes their id maps), opens every layer with Warden's uid and
// hands them to overlayfs as descriptors (/proc/self/fd/N), so a layer need not be reachable
// by the sandbox's uid; the descriptors are closed before bwrap starts. A failure on the way is reported through a close-on-exec
// pipe with the step that failed, never mistaken for the command's exit status.
#pragma once

#include <signal.h>
#include <sys/resource.h>
#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/file.h"
#include "common/subprocess.h"

namespace warden {

// An overlay mounted at `target` before bwrap starts (lowers: topmost first). The lowers, upper
// and work directories are opened with Warden's uid (they may sit in directories only Warden
// can reach); upper and work must be owned by the sandbox's uid, and `target` reachable by it.
struct OverlaySpec {
  std::vector<std::string> lowers;
  std::string upper, work, target;
};

struct SpawnSpec {
  std::vector<std::string> argv;  // argv[0] is the bwrap binary's path
  std::optional<uid_t> drop_uid;  // set when running as root
  std::optional<gid_t> drop_gid;
  std::optional<OverlaySpec> overlay;
  std::vector<std::pair<int, rlimit>> rlimits;
  // The run's cgroup.procs files (run_cgroup.h), open for writing: the child writes "0" to each.
  std::vector<int> cgroup_procs_fds;
  int stdin_fd = -1;  // -1: /dev/null
  int stdout_fd = -1, stderr_fd = -1;
  // Descriptors the child receives as 3, 4, ... (e.g. the seccomp program for --seccomp 3).
  std::vector<int> pass_fds;
  // The calling process reaps the sandbox itself, without a reaper child: one fork fewer and
  // no second copy of the caller's address space to set up and tear down (the one-shot
  // `warden sandbox exec` pays for both on every call). Taken only when the process is
  // single-threaded, has no other children and no overlay is asked for; otherwise the reaper
  // runs as usual. The process then stays a child subreaper for good, and SIGCHLD is blocked
  // (read through a signalfd) until the sandbox is reaped.
  bool reap_here = false;
  // bwrap's seccomp program, for `--seccomp 3`, and the gate bwrap is held at: descriptor 3
  // is a pipe that receives the program only at release() (pass_fds then follow from 4).
  // bwrap reads it to EOF once its namespaces and mounts are set up, just before it starts the
  // command, so it sets up while the caller finishes what the command must not run without
  // (the cgroup's limits, a remembered verdict). release() writes the whole program in one
  // write into an empty pipe that holds it (a seccomp program is at most 32 KB), so bwrap gets
  // all of it or nothing. A process that dies before releasing leaves bwrap an empty program,
  // which the kernel refuses (EINVAL): bwrap dies before the command could start, where a
  // gate opened by EOF (`--block-fd` on a pipe) would have let it go on. Borrowed until
  // release().
  std::optional<std::string_view> seccomp;
};

// A spawned sandbox, seen through its reaper (or, with SpawnSpec::reap_here, reaped by this
// process directly); common/subprocess.h's drive() watches it run. Move-only; the destructor
// stops the sandbox and reaps, so no error path leaves a process behind (one whose seccomp
// program was never released has run nothing of its command).
class SandboxChild final : public ChildProcess {
 public:
  static Result<SandboxChild> spawn(const SpawnSpec& spec);

  SandboxChild(SandboxChild&& other) noexcept;
  SandboxChild& operator=(SandboxChild&&) = delete;
  SandboxChild(const SandboxChild&) = delete;
  SandboxChild& operator=(const SandboxChild&) = delete;
  ~SandboxChild() override;

  pid_t pid() const { return pid_; }
  // Hands bwrap its seccomp program (SpawnSpec::seccomp): the command may now start. Once;
  // false when there is nothing to release (no program, released already) or the write failed.
  bool release();
  // Readable (POLLIN) once the child has exited; -1 when pidfds are unavailable. Reaping here,
  // a signalfd for SIGCHLD: readable whenever any process of the sandbox has ended.
  int pidfd() const override { return pidfd_.get(); }
  // Whether this process reaps the sandbox itself (SpawnSpec::reap_here was honoured).
  bool reaped_here() const { return here_.has_value(); }

  // True once the reaper has exited (reaping here: once bwrap and every orphan reparented to
  // this process are reaped): bwrap, its namespace init and everything in the sandbox are
  // gone by then.
  bool exited() override;
  // Asks the reaper to SIGKILL the sandbox (bwrap's process group); it then reaps and exits.
  void stop() override;
  // Reaps the reaper; returns bwrap's wait status (the reaper dies the way bwrap did).
  int reap() override;

 private:
  // Reaping here: bwrap's status once reaped, and the signal mask to restore afterwards.
  struct Here {
    std::optional<int> bwrap_status;
    sigset_t old_mask;
  };
  SandboxChild() = default;
  // Reaps every child that has ended; blocking, until none is left. True when none is left.
  bool reap_children(bool block);
  pid_t pid_ = -1;
  UniqueFd pidfd_;
  bool reaped_ = true;
  std::optional<Here> here_;
  // Until release(): the program, and both ends of its pipe (the read end kept so that the
  // release's write never meets a pipe without readers: SIGPIPE).
  std::string_view seccomp_;
  UniqueFd gate_read_, gate_write_;
};

}  // namespace warden
