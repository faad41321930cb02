// One sandbox profile made runnable: bubblewrap with every namespace unshared (no network),
// --die-with-parent and --new-session, a cleared fixed environment, read-only system binds,
// a read-only minimal /dev, a private size-capped /tmp (and /dev/shm when the profile has
// one), the workspace as the only other writable path, the profile's seccomp filter and
// resource limits, a cgroup of the run's own where the host offers one (run_cgroup.h: pids,
// memory, CPU; the RLIMITs stay as a second line), a wall-clock timeout that kills the whole
// process tree, and bounded output capture. The first run() is preceded by the preflight (preflight.h); if it
// fails, every run() is refused with the failing parts named.
//
// bwrap starts held: it sets up its namespaces and mounts, then waits for its seccomp program
// (SpawnSpec::seccomp), while Warden writes the run cgroup's limits and, for a Sandbox with a
// cache, looks up the remembered verdict; only then is it handed the program and the command
// let start. A Warden that dies meanwhile leaves bwrap an empty program, which the kernel
// refuses, and bwrap dies before the command could start.
//
// Process-tree cleanup does not depend on the sandboxed program's cooperation: the command
// runs in a fresh PID namespace whose init is bwrap's, so when the command exits (or bwrap
// is killed) the kernel kills everything left in the namespace, daemons and setsid()
// escapees included. bwrap runs under a reaper process (sandbox_process.h) that collects
// bwrap and its orphaned namespace init and exits only when both are gone; a run ends when
// the reaper has exited. On timeout, cancellation or an output flood the reaper SIGKILLs
// bwrap's process group, and every process in the run's cgroup is SIGKILLed too. Not thread-safe: one run at a time per Sandbox, and the thread that calls run()
// must live until it returns (the reaper's parent-death signal follows the spawning thread).
// Use one Sandbox per worker thread; distinct Sandboxes share nothing.
//
// Ownership: a Sandbox owns its cached preflight report; the profile's files reach bwrap on
// descriptors made for each run, so a Sandbox leaves nothing on disk. run() borrows the request; the
// workspace directory or overlay layers belong to the caller and must exist for the run.
// request.live is called on run()'s thread while the run is in progress.
//
// What a result means: a command that fails, times out or floods its output is a SandboxRun
// (exit_code, timed_out, output_limit_exceeded), not an Error. An Error means nothing was
// judged: invalid_argument (no command, or no workspace: neither a directory, an overlay nor
// a profile tmpfs at the workspace path), verification_failed (the preflight failed — it is
// run once and remembered, so this Sandbox refuses every later run(); create a new one to
// re-probe), internal (a process outlived its sandbox: distrust the host), or an errno error
// from starting bwrap. Nothing here is durable; the run's writes go where the request put them.
//
// sandbox.cc is one unit (~620 lines): one Sandbox, from its profile and host to the preflight
// and each run's start, hold and judgement, over its own state; the reaper, seccomp, cgroups
// and output capture are in files of their own.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/sha256.h"
#include "runner/sandbox/output_capture.h"
#include "runner/model/preflight.h"
#include "runner/sandbox/preflight_cache.h"
#include "runner/sandbox/run_cgroup.h"
#include "runner/sandbox/sandbox_process.h"
#include "runner/model/sandbox_profile.h"
#include "runner/sandbox/scratch_dir.h"

namespace warden {

// Where and as whom sandboxes run on this host. Not part of the profile: it does not change
// what a program sees inside.
struct SandboxHost {
  std::string bwrap = "/usr/bin/bwrap";
  // The host uid/gid sandboxed processes run as. As root Warden drops to nobody (65534):
  // the kernel never applies RLIMIT_NPROC to uid 0, so a fork bomb would be unbounded.
  uid_t uid = 0;
  gid_t gid = 0;
  bool drop = false;  // true when Warden is root and must switch to uid/gid
  // Scratch directories (generated files, overlay upper layers) go below this; it and its
  // parents must be searchable by `uid`.
  std::filesystem::path scratch_root = "/tmp";  // detect(): /dev/shm when it is a writable tmpfs
  bool scratch_on_tmpfs = false;  // detect(): scratch_root is a tmpfs (pages charged to their writer's memory cgroup)
  // Per-run cgroups; none when the host offers no usable one (detect() says why).
  CgroupHost cgroups = CgroupHost::none("not detected");
  // Each run's writable layer on a tmpfs of its own, bounded by the profile's disk_bytes and
  // disk_inodes (detect(): when Warden is root, the only way to mount one).
  bool run_tmpfs = false;
  // The RLIMIT_NPROC every run gets where a pids cgroup bounds each run (Sandbox::nproc_limit):
  // detect(): a quarter of what the kernel can hold (pids and threads both count).
  uint64_t nproc_backstop = 0;
  // What a remembered preflight verdict is keyed by on the host's side. detect() leaves it
  // empty: a Sandbox reads it the first time it needs a verdict's key (the one-shot, while
  // bwrap sets up, held before its seccomp program), and preflight_key() reads it where it is
  // still empty.
  std::optional<HostIdentity> identity;

  static SandboxHost detect();

  // What detect() found besides who runs: the scratch root, the run tmpfs, the cgroups and
  // the RLIMIT_NPROC backstop. The one-shot sandbox remembers it (CompiledProfile), starts
  // bwrap from it, and checks it against a fresh detect() before the command may start.
  Json layout() const;
  // This process's host (uid, gid, drop as detect() sets them) with a remembered layout;
  // nullopt when `layout` is malformed.
  static std::optional<SandboxHost> with_layout(const Json& layout);
  bool same_layout(const SandboxHost& other) const;
};

// A file made for one run from bytes Warden holds open: the sandbox sees a copy at `dest`
// with `mode`, never the host path (which the sandbox's uid may not even reach).
struct FileCopy {
  int fd = -1;
  std::string dest;
  unsigned mode = 0444;
};

struct SandboxRequest {
  std::vector<std::string> argv;
  // The workspace: either a host directory bound read-write ...
  std::filesystem::path workspace_dir;
  // ... or an overlay (read-only layers with an upper directory for the run's writes),
  // mounted at overlay->target before bwrap binds it. With neither, the workspace is the
  // profile's tmpfs at its workspace path: private to the run, empty at start, gone after.
  std::optional<OverlaySpec> overlay;
  // Files copied in read-only for this run, after the workspace (so a dest may lie inside
  // it): bwrap reads each borrowed descriptor from its offset to EOF before the command runs.
  std::vector<FileCopy> files;
  // The command's standard input, borrowed for the run (read from where it stands); -1:
  // /dev/null.
  int stdin_fd = -1;
  // This run's output caps; each field is clamped to the profile's. None: the profile's.
  std::optional<OutputLimits> output;
  std::optional<int64_t> timeout_ms;        // never above the profile's wall_timeout_ms
  std::map<std::string, std::string> env;   // extra variables for this run
  // Called with (1 or 2, bytes) as output arrives (e.g. `warden sandbox exec` forwarding).
  std::function<void(int, std::string_view)> live;
  // A stop request kills the sandbox as a timeout would (SandboxRun::cancelled).
  std::stop_token stop;
  // Descriptors the command inherits, borrowed for the run: pass_fds[i] becomes descriptor
  // kFirstPassedFd + i inside the sandbox (3 carries bwrap's seccomp program).
  std::vector<int> pass_fds;
  // The calling process may reap the sandbox itself rather than through a reaper child
  // (SpawnSpec::reap_here): for a single-threaded process that starts one sandbox and exits,
  // such as `warden sandbox exec`. Ignored where it cannot hold.
  bool reap_here = false;
};

inline constexpr int kFirstPassedFd = 4;

struct SandboxRun {
  int exit_code = -1;  // bwrap's exit status: the command's, or 128+N when a signal ended it
  int signal = 0;      // set when the runner's own SIGKILL ended the sandbox
  bool timed_out = false;
  bool cancelled = false;
  bool output_limit_exceeded = false;
  int64_t duration_ms = 0;
  StreamEvidence out, err;
  // What the run's cgroup saw (absent without one), and the limits it reached: "memory" (the
  // OOM killer ran), "pids" (a fork failed at the process limit).
  std::optional<CgroupEvents> cgroup;
  std::vector<std::string> limits_hit;
};

class Sandbox {
 public:
  static Result<Sandbox> create(SandboxProfile profile, SandboxHost host = SandboxHost::detect());
  // The profile `name_or_path` (SandboxProfile::load) made runnable with `cache` remembering
  // its verdicts (set_preflight_cache) and what it compiles to (CompiledProfile): a later
  // process with the same profile bytes, executable and host takes the profile's digest, its
  // seccomp program and its verdict's key from there instead of deriving them. For the
  // one-shot `warden sandbox exec`, which runs one command and exits. Only as root (the sandbox
  // then runs as another uid, which cannot write the cache); otherwise it derives every time.
  static Result<Sandbox> open(std::string_view name_or_path, SandboxHost host, PreflightCache cache);
  // The same on this host without detecting it first: the layout remembered beside the
  // compiled profile (SandboxHost::layout()) is taken as a guess, bwrap starts from it, and a
  // fresh detection must agree before the command may start (otherwise bwrap is stopped and
  // the run starts again from the fresh layout, which is remembered instead).
  static Result<Sandbox> open(std::string_view name_or_path, PreflightCache cache);

  // Runs on `root` (an environment's materialized root, runner/environment) instead of the
  // host: every read-only bind of the profile takes its source below `root` (all may be
  // absent but usr/), and root/opt is bound at /opt. The root and every directory above it
  // must be searchable by the sandbox's uid. Forgets the preflight verdict: the next run
  // probes the new file system. invalid_argument when `root` has no usr/.
  Status use_system_root(std::filesystem::path root);
  const std::filesystem::path& system_root() const { return system_root_; }

  const SandboxProfile& profile() const { return profile_; }
  const Digest& profile_digest() const { return profile_digest_; }
  const SandboxHost& host() const { return host_; }

  // Runs the preflight once and remembers it; with a cache (set_preflight_cache), a passing
  // verdict recorded for the same key is taken instead of probing.
  const PreflightReport& preflight();
  // Remember passing verdicts across processes in `cache` (preflight_cache.h). A run whose
  // sandbox then fails to start drops the verdict, so the next process probes again.
  void set_preflight_cache(PreflightCache cache) { preflight_cache_.emplace(std::move(cache)); }
  // Takes the verdict another sandbox of the same profile and host made (LocalRunner::sibling):
  // runs beside each other record one preflight, and the probe runs once.
  void adopt_preflight(const PreflightReport& report) { preflight_ = report; }
  // True when the current verdict came from the cache rather than a probe.
  bool preflight_from_cache() const { return preflight_from_cache_; }
  // True when open() took the profile's digest, program and key from the cache.
  bool compiled_from_cache() const { return compiled_from_cache_; }
  // Refuses (Errc::verification_failed, naming the failing parts) when the preflight fails.
  Result<SandboxRun> run(const SandboxRequest& request);

  // A directory for one run's overlay layers (upper, work, merged): a tmpfs of its own,
  // bounded by the profile's disk_bytes and disk_inodes, when host().run_tmpfs; else a
  // plain scratch directory.
  Result<ScratchDir> run_scratch(std::string_view prefix = "warden-run-") const;
  // The RLIMIT_NPROC every run gets: the profile's processes, or with a pids cgroup holding
  // each run, a host-wide backstop, so concurrent runs do not share one small per-uid budget.
  uint64_t nproc_limit() const;

  // bwrap's argv for a request, and what it reads on its descriptors: the seccomp program on
  // 3, then request.pass_fds, request.files, and the profile's files (one descriptor each,
  // read from offset 0: profile_files()). What the benchmark runs as "bare bwrap with the
  // same profile".
  std::vector<std::string> command_line(const SandboxRequest& request) const;
  const std::string& seccomp_program() const { return seccomp_program_; }
  Result<std::vector<UniqueFd>> profile_files() const;

 private:
  Sandbox() = default;
  // create(), with the digest and program taken from `compiled` when given.
  static Result<Sandbox> make(SandboxProfile profile, SandboxHost host, const CompiledProfile* compiled);
  static Result<Sandbox> open_with(std::string_view name_or_path, std::optional<SandboxHost> host, PreflightCache cache);
  // RLIMIT_NPROC for runs on `host`: the profile's processes, or with a pids cgroup per run
  // the larger host backstop.
  uint64_t nproc_for(const SandboxHost& host) const;
  // With a remembered layout (open() without a host): detects the host and, where it
  // differs, takes the fresh one (and remembers it); false then. True when nothing was
  // guessed or the guess held.
  bool confirm_layout();
  // host_.identity, read the first time it is needed.
  const HostIdentity& identity();
  // The key this sandbox's verdicts are remembered under, derived once.
  const Digest& verdict_key();
  // Takes a passing verdict remembered under verdict_key(), if there is one.
  bool take_remembered_verdict();
  // Runs `request` in bwrap, held before its seccomp program (SpawnSpec::seccomp) until the
  // run's cgroup is limited and `release`, when given, has said yes; a no stops bwrap before
  // the command could start and gives nullopt.
  Result<std::optional<SandboxRun>> execute(const SandboxRequest& request, const OutputLimits& output,
                                            const std::function<bool()>& release = {});
  // One try of execute(): `stale_layout` when it was started from a remembered layout that a
  // fresh detection contradicted (nothing of the command ran).
  struct Attempt {
    std::optional<SandboxRun> run;
    bool stale_layout = false;
  };
  Result<Attempt> execute_once(const SandboxRequest& request, const OutputLimits& output,
                               const std::function<bool()>& release);
  // A run's result, after forgetting what was remembered when its sandbox failed to start.
  Result<SandboxRun> judged_start(Result<SandboxRun> result);

  // The arguments that lay out the file system the command sees (args_before_files_).
  void lay_out_system();
  // `src` below system_root_, resolved as bwrap will resolve it; nullopt when it leads out.
  std::optional<std::string> inside_root(const std::string& src) const;

  SandboxProfile profile_;
  std::filesystem::path system_root_;  // empty: the host's
  Digest profile_digest_;
  SandboxHost host_;
  std::string seccomp_program_;
  // bwrap's arguments from the profile, around its files (command_line()).
  std::vector<std::string> args_before_files_, args_after_files_;
  std::optional<PreflightReport> preflight_;
  std::optional<PreflightCache> preflight_cache_;
  std::optional<Digest> verdict_key_;
  std::optional<Digest> compiled_key_;  // open(): where the compiled profile is remembered
  bool preflight_from_cache_ = false;
  bool compiled_from_cache_ = false;
  bool layout_guessed_ = false;  // host_'s layout is a remembered one, not yet confirmed (open() without a host)
  uint64_t nproc_limit_ = 0;
  bool reclaimed_ = false;  // orphaned scratch and cgroups reclaimed (the first execute())
};

}  // namespace warden
