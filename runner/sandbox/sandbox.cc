// One unit (~620 lines): why in sandbox.h.
#include "runner/sandbox/sandbox.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/vfs.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "common/file.h"
#include "common/subprocess.h"
#include "runner/sandbox/seccomp_filter.h"

namespace warden {
namespace {

using SteadyClock = std::chrono::steady_clock;

// After a kill, how long the pipes may stay open before the run is declared broken: every
// writer is in the dead PID namespace, so EOF normally follows at once.
constexpr auto kKillGrace = std::chrono::seconds(5);
constexpr int kSeccompFd = 3;  // SpawnSpec::seccomp; the request's own descriptors follow it
static_assert(kFirstPassedFd == kSeccompFd + 1);

Status write_new_file(const std::filesystem::path& path, std::string_view content, unsigned mode) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode));
  if (!fd) return std::unexpected(errno_error("create " + path.string(), errno));
  size_t done = 0;
  while (done < content.size()) {
    ssize_t n = ::write(fd.get(), content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return std::unexpected(errno_error("write " + path.string(), errno));
    done += static_cast<size_t>(n);
  }
  if (::fchmod(fd.get(), mode) != 0) return std::unexpected(errno_error("chmod " + path.string(), errno));
  return {};
}

// RLIMIT_NPROC when every run's processes are bounded by its own pids cgroup: it only guards
// the host against all runs together, so a quarter of what the kernel can hold (pids and
// threads both count).
uint64_t host_nproc_backstop() {
  auto number = [](const char* path) -> uint64_t {
    auto text = read_file(path, 64);
    return text ? std::strtoull(text->c_str(), nullptr, 10) : 0;
  };
  uint64_t room = std::min(number("/proc/sys/kernel/pid_max"), number("/proc/sys/kernel/threads-max"));
  return std::max<uint64_t>(room / 4, 1024);
}

Status chown_to(const std::filesystem::path& path, const SandboxHost& host) {
  if (host.drop && ::lchown(path.c_str(), host.uid, host.gid) != 0) {
    return std::unexpected(errno_error("chown " + path.string(), errno));
  }
  return {};
}

// The sandbox as drive() sees it: stopping it also SIGKILLs every process in the run's
// cgroup, so a timeout, a cancellation or an output flood ends the whole run whatever left
// bwrap's process group.
class RunChild final : public ChildProcess {
 public:
  RunChild(SandboxChild& child, const RunCgroup* cgroup) : child_(child), cgroup_(cgroup) {}
  int pidfd() const override { return child_.pidfd(); }
  bool exited() override { return child_.exited(); }
  void stop() override {
    child_.stop();
    if (cgroup_) cgroup_->kill();
  }
  int reap() override { return child_.reap(); }

 private:
  SandboxChild& child_;
  const RunCgroup* cgroup_;
};

Result<std::pair<UniqueFd, UniqueFd>> make_pipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return std::unexpected(errno_error("pipe2", errno));
  return std::pair{UniqueFd(fds[0]), UniqueFd(fds[1])};  // drive() makes the read end non-blocking
}

// Whether `uid`:`gid` (no supplementary groups: the drop clears them) may search `dir` and
// every directory above it, by the mode bits. The first one it may not, with its owner and
// mode, or empty. A directory with an access ACL is taken as passable: its bits do not tell.
std::string unsearchable_part(const std::filesystem::path& dir, uid_t uid, gid_t gid) {
  std::filesystem::path at = "/";
  std::filesystem::path rel = dir.relative_path();
  auto blocked = [&](const std::filesystem::path& p) -> std::string {
    struct stat st;
    if (::stat(p.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return "";  // bwrap reports these itself
    if (::getxattr(p.c_str(), "system.posix_acl_access", nullptr, 0) > 0) return "";
    unsigned bits = st.st_uid == uid ? (st.st_mode >> 6) : st.st_gid == gid ? (st.st_mode >> 3) : st.st_mode;
    if (bits & 01) return "";
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", st.st_mode & 07777);
    return p.string() + " (owner uid " + std::to_string(st.st_uid) + ", group " + std::to_string(st.st_gid) +
           ", mode " + mode + ")";
  };
  if (auto b = blocked(at); !b.empty()) return b;
  for (const auto& part : rel) {
    at /= part;
    if (auto b = blocked(at); !b.empty()) return b;
  }
  return "";
}

}  // namespace

namespace {

// Who sandboxed processes run as: as root, nobody (the kernel never applies RLIMIT_NPROC to
// uid 0, so a fork bomb would be unbounded); otherwise Warden's own uid.
SandboxHost runs_as() {
  SandboxHost h;
  if (::geteuid() == 0) {
    h.uid = 65534;
    h.gid = 65534;
    h.drop = true;
  } else {
    h.uid = ::getuid();
    h.gid = ::getgid();
  }
  h.run_tmpfs = ::geteuid() == 0;
  return h;
}

}  // namespace

SandboxHost SandboxHost::detect() {
  SandboxHost h = runs_as();
  // Scratch directories live for one run and are removed after it: on a memory file system
  // that is microseconds, on a disk that discards on delete it was milliseconds per directory.
  struct statfs fs{};
  if (::statfs("/dev/shm", &fs) == 0 && fs.f_type == TMPFS_MAGIC && ::access("/dev/shm", W_OK | X_OK) == 0) {
    h.scratch_root = "/dev/shm";
    h.scratch_on_tmpfs = true;
  }
  h.cgroups = CgroupHost::detect();
  h.nproc_backstop = host_nproc_backstop();
  // Not the identity: a Sandbox reads it when it first needs a verdict's key, which the
  // one-shot does while bwrap sets up.
  return h;
}

Json SandboxHost::layout() const {
  return {{"scratch_root", scratch_root.string()},
          {"scratch_on_tmpfs", scratch_on_tmpfs},
          {"run_tmpfs", run_tmpfs},
          {"cgroups", cgroups.to_json()},
          {"nproc_backstop", nproc_backstop}};
}

std::optional<SandboxHost> SandboxHost::with_layout(const Json& layout) {
  if (!layout.is_object()) return std::nullopt;
  auto field = [&](const char* name, Json::value_t type) { return layout.contains(name) && layout[name].type() == type; };
  if (!field("scratch_root", Json::value_t::string) || !field("scratch_on_tmpfs", Json::value_t::boolean) ||
      !field("run_tmpfs", Json::value_t::boolean) || !field("nproc_backstop", Json::value_t::number_unsigned) ||
      !layout.contains("cgroups")) {
    return std::nullopt;
  }
  auto cgroups = CgroupHost::from_json(layout["cgroups"]);
  if (!cgroups) return std::nullopt;
  // Only what detect() can find: the run's scratch and cgroups are made (and orphans removed)
  // under these paths as root, so a guess never names anywhere else, even before it is checked.
  const std::string scratch = layout["scratch_root"].get<std::string>();
  if (scratch != "/tmp" && scratch != "/dev/shm") return std::nullopt;
  SandboxHost h = runs_as();
  // Who runs is this process's, never remembered; a layout that disagrees is simply stale.
  h.scratch_root = scratch;
  h.scratch_on_tmpfs = layout["scratch_on_tmpfs"].get<bool>();
  h.run_tmpfs = layout["run_tmpfs"].get<bool>();
  h.cgroups = std::move(*cgroups);
  h.nproc_backstop = layout["nproc_backstop"].get<uint64_t>();
  return h;
}

bool SandboxHost::same_layout(const SandboxHost& other) const {
  return scratch_root == other.scratch_root && scratch_on_tmpfs == other.scratch_on_tmpfs && run_tmpfs == other.run_tmpfs &&
         cgroups == other.cgroups && nproc_backstop == other.nproc_backstop;
}

Result<Sandbox> Sandbox::create(SandboxProfile profile, SandboxHost host) {
  return make(std::move(profile), std::move(host), nullptr);
}

Result<Sandbox> Sandbox::open(std::string_view name_or_path, SandboxHost host, PreflightCache cache) {
  return open_with(name_or_path, std::move(host), std::move(cache));
}

Result<Sandbox> Sandbox::open(std::string_view name_or_path, PreflightCache cache) {
  return open_with(name_or_path, std::nullopt, std::move(cache));
}

Result<Sandbox> Sandbox::open_with(std::string_view name_or_path, std::optional<SandboxHost> host, PreflightCache cache) {
  auto source = SandboxProfile::source(name_or_path);
  if (!source) return std::unexpected(source.error());
  auto profile = SandboxProfile::parse(source->text, source->what);
  if (!profile) return std::unexpected(profile.error());
  const SandboxHost runner = host ? *host : runs_as();
  // Only where the sandbox's uid is not the cache's owner (Warden is root and runs sandboxes as
  // nobody): a cached program is the filter itself, and a sandbox running as Warden's own uid
  // could reach the cache through a workspace that holds it and plant a weaker one for later
  // calls. Elsewhere the profile is derived every time.
  const std::optional<Digest> key = runner.drop ? compiled_profile_key(source->text, runner) : std::nullopt;
  const std::optional<CompiledProfile> compiled = key ? cache.get_compiled(*key) : std::nullopt;
  bool guessed = false;
  if (!host && compiled && compiled->host_layout) {
    // Started from, and checked against a fresh detection before the command may start.
    host = SandboxHost::with_layout(*compiled->host_layout);
    guessed = host.has_value();
  }
  if (!host) host = SandboxHost::detect();
  auto s = make(std::move(*profile), std::move(*host), compiled ? &*compiled : nullptr);
  if (!s) return s;
  s->compiled_key_ = key;
  s->layout_guessed_ = guessed;
  s->compiled_from_cache_ = compiled.has_value();
  if (key && (!compiled || !compiled->host_layout || !guessed)) {
    cache.put_compiled(*key, CompiledProfile{s->profile_digest_, s->seccomp_program_, s->host_.layout()});
  }
  s->set_preflight_cache(std::move(cache));
  return s;
}

Result<Sandbox> Sandbox::make(SandboxProfile profile, SandboxHost host, const CompiledProfile* compiled) {
  Sandbox s;
  s.profile_ = std::move(profile);
  s.host_ = std::move(host);
  if (compiled) {
    s.profile_digest_ = compiled->profile_digest;
    s.seccomp_program_ = compiled->seccomp_program;
  } else {
    s.profile_digest_ = s.profile_.digest();
    auto program = compile_seccomp(s.profile_.seccomp);
    if (!program) return std::unexpected(program.error().with_context("profile " + s.profile_.name));
    s.seccomp_program_ = std::move(*program);
  }
  s.nproc_limit_ = s.nproc_for(s.host_);
  s.lay_out_system();
  const SandboxProfile& p = s.profile_;
  // The profile's files come next (command_line()), then these.
  auto& b = s.args_after_files_;
  b = {"--dev", "/dev", "--proc", "/proc"};
  for (const auto& t : p.tmpfs) b.insert(b.end(), {"--size", std::to_string(t.size_bytes), "--tmpfs", t.path});
  // bwrap's /dev is a tmpfs of device nodes: read-only, nothing of the run's goes there (a
  // profile's /dev/shm, mounted above, stays writable and bounded; without one it is absent).
  b.insert(b.end(), {"--remount-ro", "/dev"});
  return s;
}

void Sandbox::lay_out_system() {
  const SandboxProfile& p = profile_;
  auto& a = args_before_files_;
  a = {"--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent", "--new-session",
       "--uid", std::to_string(p.uid), "--gid", std::to_string(p.gid), "--hostname", p.hostname, "--clearenv"};
  if (p.network) a.insert(a.begin() + 1, "--share-net");
  namespace fs = std::filesystem;
  // In an environment, what the profile binds from the host comes from the environment's
  // root instead (every bind there may be absent but /usr), and the environment's /opt,
  // where recipes put what their prepare commands made, is bound too.
  auto source = [&](const std::string& src) { return system_root_.empty() ? src : inside_root(src).value_or(""); };
  for (const auto& b : p.ro_binds) {
    bool optional = b.optional || (!system_root_.empty() && b.dest != "/usr");
    const std::string from = source(b.src);
    if (!from.empty()) a.insert(a.end(), {optional ? "--ro-bind-try" : "--ro-bind", from, b.dest});
  }
  if (!system_root_.empty()) {
    if (std::string opt = source("/opt"); !opt.empty()) a.insert(a.end(), {"--ro-bind-try", opt, "/opt"});
  }
  if (p.network) {
    for (std::string_view f : kNetworkFiles) a.insert(a.end(), {"--ro-bind-try", std::string(f), std::string(f)});
  }
  for (const auto& l : p.symlinks) {
    // An environment whose /bin (say) is a directory rather than merged into /usr keeps it.
    std::error_code ec;
    const std::string dir = source(l.path);
    if (!system_root_.empty() && !dir.empty() && fs::is_directory(fs::symlink_status(dir, ec))) {
      a.insert(a.end(), {"--ro-bind", dir, l.path});
    } else {
      a.insert(a.end(), {"--symlink", l.target, l.path});
    }
  }
}

// bwrap resolves a bind's source on the host, so a symlink in an environment that leads out
// of its root (an absolute one, or one through ..) would bind the host's file where the
// environment's digest names only the link: such a source is treated as absent.
std::optional<std::string> Sandbox::inside_root(const std::string& src) const {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path resolved = fs::weakly_canonical(system_root_ / fs::path(src).relative_path(), ec);
  if (ec) return std::nullopt;
  auto [r, p] = std::mismatch(system_root_.begin(), system_root_.end(), resolved.begin(), resolved.end());
  if (r != system_root_.end()) return std::nullopt;
  return resolved.string();
}

Status Sandbox::use_system_root(std::filesystem::path root) {
  std::error_code ec;
  std::filesystem::path canonical = std::filesystem::canonical(root, ec);
  if (ec) return std::unexpected(Error{Errc::not_found, "the environment root " + root.string() + ": " + ec.message()});
  system_root_ = canonical;
  auto usr = inside_root("/usr");
  if (!usr || !std::filesystem::is_directory(*usr, ec)) {
    system_root_.clear();
    return std::unexpected(Error{Errc::invalid_argument, "the environment root " + root.string() +
                                                             " has no usr/ directory of its own (a link out of the root is not one)"});
  }
  lay_out_system();
  // A verdict was about another file system.
  preflight_.reset();
  verdict_key_.reset();
  preflight_from_cache_ = false;
  return {};
}

Result<std::vector<UniqueFd>> Sandbox::profile_files() const {
  std::vector<UniqueFd> out;
  for (const auto& f : profile_.files) {
    UniqueFd fd(::memfd_create("warden-profile-file", MFD_CLOEXEC));
    if (!fd) return std::unexpected(errno_error("memfd_create", errno));
    // pwrite leaves the offset at 0, where bwrap starts reading.
    size_t done = 0;
    while (done < f.content.size()) {
      ssize_t n = ::pwrite(fd.get(), f.content.data() + done, f.content.size() - done, static_cast<off_t>(done));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return std::unexpected(errno_error("writing profile file " + f.path, errno));
      done += static_cast<size_t>(n);
    }
    out.push_back(std::move(fd));
  }
  return out;
}

Result<ScratchDir> Sandbox::run_scratch(std::string_view prefix) const {
  if (!host_.run_tmpfs) return ScratchDir::create(host_.scratch_root, prefix, 0711);
  return ScratchDir::create_tmpfs(host_.scratch_root, prefix, 0711, profile_.limits.disk_bytes, profile_.limits.disk_inodes);
}

uint64_t Sandbox::nproc_limit() const { return nproc_limit_; }

uint64_t Sandbox::nproc_for(const SandboxHost& host) const {
  return host.cgroups.has("pids") ? std::max(profile_.limits.processes, host.nproc_backstop) : profile_.limits.processes;
}

bool Sandbox::confirm_layout() {
  if (!layout_guessed_) return true;
  layout_guessed_ = false;
  SandboxHost fresh = SandboxHost::detect();
  if (fresh.same_layout(host_)) return true;
  fresh.identity = std::move(host_.identity);
  fresh.bwrap = host_.bwrap;
  host_ = std::move(fresh);
  nproc_limit_ = nproc_for(host_);
  verdict_key_.reset();
  // Remembered as it is now, so the next call starts from the right one.
  if (compiled_key_ && preflight_cache_) {
    preflight_cache_->put_compiled(*compiled_key_, CompiledProfile{profile_digest_, seccomp_program_, host_.layout()});
  }
  return false;
}

std::vector<std::string> Sandbox::command_line(const SandboxRequest& request) const {
  std::vector<std::string> argv{host_.bwrap};
  argv.insert(argv.end(), args_before_files_.begin(), args_before_files_.end());
  // Copied by bwrap from descriptors (profile_files()) rather than bound from files on the
  // host: nothing to write, clean up, or leave behind per sandbox.
  const int first_file_fd = kFirstPassedFd + static_cast<int>(request.pass_fds.size() + request.files.size());
  for (size_t i = 0; i < profile_.files.size(); ++i) {
    argv.insert(argv.end(), {"--perms", "0444", "--ro-bind-data", std::to_string(first_file_fd + static_cast<int>(i)),
                             profile_.files[i].path});
  }
  argv.insert(argv.end(), args_after_files_.begin(), args_after_files_.end());
  std::map<std::string, std::string> env = profile_.env;
  for (const auto& [k, v] : request.env) env[k] = v;
  for (const auto& [k, v] : env) argv.insert(argv.end(), {"--setenv", k, v});
  std::string source = request.overlay ? request.overlay->target : request.workspace_dir.string();
  if (!source.empty()) argv.insert(argv.end(), {"--bind", source, profile_.workspace});
  for (size_t i = 0; i < request.files.size(); ++i) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", request.files[i].mode & 07777);
    int fd = kFirstPassedFd + static_cast<int>(request.pass_fds.size() + i);
    argv.insert(argv.end(), {"--perms", mode, "--ro-bind-data", std::to_string(fd), request.files[i].dest});
  }
  argv.insert(argv.end(), {"--chdir", profile_.workspace, "--remount-ro", "/", "--seccomp", std::to_string(kSeccompFd), "--"});
  argv.insert(argv.end(), request.argv.begin(), request.argv.end());
  return argv;
}

const HostIdentity& Sandbox::identity() {
  if (!host_.identity) host_.identity = HostIdentity::read(host_.bwrap);
  return *host_.identity;
}

const Digest& Sandbox::verdict_key() {
  if (!verdict_key_) {
    identity();
    verdict_key_ = preflight_key(profile_, profile_digest_, seccomp_program_, host_);
    if (!system_root_.empty()) verdict_key_ = sha256(verdict_key_->hex() + "\n" + system_root_.string());
  }
  return *verdict_key_;
}

bool Sandbox::take_remembered_verdict() {
  auto cached = preflight_cache_->get(verdict_key());
  if (!cached) return false;
  preflight_from_cache_ = true;
  preflight_ = std::move(*cached);
  return true;
}

const PreflightReport& Sandbox::preflight() {
  if (preflight_) return *preflight_;
  // The facts judged and the key they are filed under are the host's as it is, never a
  // remembered guess (run() has confirmed it already; a direct call confirms it here).
  confirm_layout();
  std::optional<Digest> key;
  if (preflight_cache_) {
    key = verdict_key();
    if (auto cached = preflight_cache_->get(*key)) {
      preflight_from_cache_ = true;
      preflight_ = std::move(*cached);
      return *preflight_;
    }
  }
  HostFacts facts;
  facts.namespaces = identity().namespaces;
  facts.overflow_uid = identity().overflow_uid;
  facts.cgroup_by = std::string(host_.cgroups.by());
  facts.cgroup_pids = host_.cgroups.has("pids");
  facts.cgroup_memory = host_.cgroups.has("memory");
  facts.cgroup_cpu = host_.cgroups.has("cpu");
  facts.nproc_limit = nproc_limit_;
  facts.run_tmpfs = host_.run_tmpfs;
  facts.scratch_on_tmpfs = host_.scratch_on_tmpfs;
  auto prepare = [&]() -> Result<std::pair<ScratchDir, SandboxRequest>> {
    // Laid out as a run's: the probe sees the file system a run's writable layer gets.
    auto dir = run_scratch("warden-preflight-");
    if (!dir) return std::unexpected(dir.error());
    for (const char* sub : {"lower", "layer", "upper", "work", "merged"}) {
      if (Status st = make_owned_dir(*dir / sub, host_.uid, host_.gid); !st) return std::unexpected(st.error());
    }
    for (auto [name, content] : {std::pair{kProbeLowerFile, "warden-lower\n"}, std::pair{kProbeHiddenFile, "hidden\n"}}) {
      auto path = *dir / "lower" / name;
      if (Status st = write_new_file(path, content, 0644); !st) return std::unexpected(st.error());
      if (Status st = chown_to(path, host_); !st) return std::unexpected(st.error());
    }
    // An overlay whiteout: a 0/0 character device hides the lower layer's file.
    auto whiteout = *dir / "layer" / kProbeHiddenFile;
    if (::mknod(whiteout.c_str(), S_IFCHR | 0644, makedev(0, 0)) != 0) return std::unexpected(errno_error("mknod " + whiteout.string(), errno));
    if (Status st = chown_to(whiteout, host_); !st) return std::unexpected(st.error());
    SandboxRequest req;
    req.argv = {"/bin/sh", "-c", preflight_script(profile_)};
    req.overlay = OverlaySpec{{(*dir / "layer").string(), (*dir / "lower").string()}, (*dir / "upper").string(),
                              (*dir / "work").string(), (*dir / "merged").string()};
    req.timeout_ms = std::min<int64_t>(30'000, profile_.limits.wall_timeout_ms);
    return std::pair{std::move(*dir), std::move(req)};
  };
  auto prepared = prepare();
  if (!prepared) {
    facts.start_error = prepared.error().message;
  } else {
    // The probe's own output must be readable whatever the profile keeps.
    auto executed = execute(prepared->second, OutputLimits{1 << 20, 0, 0, 1 << 20});
    if (!executed) {
      facts.start_error = executed.error().message;
    } else {
      const std::optional<SandboxRun>& run = *executed;  // never held back: no release check
      facts.probe_started = true;
      facts.exit_code = run->exit_code;
      facts.stdout_text = run->out.kept;
      facts.stderr_text = run->err.kept;
      auto written = read_file(prepared->first / "upper" / kProbeWrittenFile, 4096);
      facts.workspace_write_seen = written && *written == "probe\n";
      if (run->cgroup) {
        facts.cgroup_memory_peak = run->cgroup->memory_peak;
        facts.cgroup_pids_peak = run->cgroup->pids_peak;
      }
    }
  }
  preflight_ = judge_preflight(profile_, facts);
  if (key) preflight_cache_->put(*key, *preflight_);
  return *preflight_;
}

Result<SandboxRun> Sandbox::run(const SandboxRequest& request) {
  if (request.argv.empty()) return fail(Errc::invalid_argument, "sandbox: no command given");
  if (host_.drop && !request.overlay && !request.workspace_dir.empty()) {
    // bwrap would only say "Can't chdir to /workspace: Permission denied".
    std::error_code ec;
    auto dir = std::filesystem::weakly_canonical(request.workspace_dir, ec);
    if (std::string part = ec ? "" : unsearchable_part(dir, host_.uid, host_.gid); !part.empty()) {
      std::string who = std::to_string(host_.uid) + ":" + std::to_string(host_.gid);
      return fail(Errc::invalid_argument,
                  "workspace " + request.workspace_dir.string() + ": the sandbox runs as uid " + std::to_string(host_.uid) +
                      " (Warden is root and never runs sandboxed code as root), which cannot enter " + part +
                      "; give that user access (e.g. chown " + who + " " + dir.string() +
                      " and make its parents searchable), or use a workspace it can reach");
    }
  }
  if (request.workspace_dir.empty() && !request.overlay &&
      std::none_of(profile_.tmpfs.begin(), profile_.tmpfs.end(), [&](const auto& t) { return t.path == profile_.workspace; })) {
    return fail(Errc::invalid_argument, "sandbox: no workspace (neither a directory, an overlay nor a tmpfs at " +
                                            profile_.workspace + " in profile " + profile_.name + ")");
  }
  OutputLimits output = profile_.output;
  if (request.output) {
    output.keep_bytes = std::min(output.keep_bytes, request.output->keep_bytes);
    output.head_bytes = std::min(output.head_bytes, request.output->head_bytes);
    output.tail_bytes = std::min(output.tail_bytes, request.output->tail_bytes);
    output.max_bytes = std::min(output.max_bytes, request.output->max_bytes);
  }
  if (!preflight_ && preflight_cache_) {
    // A remembered verdict is looked up while bwrap sets up, held until it is handed its
    // seccomp program: the command starts only once one is found. Without one, bwrap is
    // stopped before the command could start, and the probe runs first, as below.
    auto gated = execute(request, output, [this] { return take_remembered_verdict(); });
    if (!gated) return judged_start(std::unexpected(gated.error()));
    if (*gated) return judged_start(std::move(**gated));
  }
  const PreflightReport& report = preflight();
  if (!report.ok) {
    return fail(Errc::verification_failed, "sandbox preflight failed for profile " + profile_.name +
                                               ", refusing to run anything: " + report.failures());
  }
  auto executed = execute(request, output);
  if (!executed) return judged_start(std::unexpected(executed.error()));
  return judged_start(std::move(**executed));
}

Result<SandboxRun> Sandbox::judged_start(Result<SandboxRun> result) {
  // bwrap fails closed: a host that changed under a remembered verdict shows here first.
  bool start_failed = !result || (result->exit_code == 1 && result->err.kept.starts_with("bwrap: "));
  if (start_failed && preflight_from_cache_) preflight_cache_->forget(verdict_key());
  // What the profile compiled to goes too: a stale one would otherwise fail every call for a day.
  if (start_failed && compiled_from_cache_) preflight_cache_->forget_compiled(*compiled_key_);
  return result;
}

Result<std::optional<SandboxRun>> Sandbox::execute(const SandboxRequest& request, const OutputLimits& output,
                                                   const std::function<bool()>& release) {
  // A second attempt only when the first was started from a remembered layout that turned
  // out stale; confirm_layout() has replaced it with the host as it is, so there is no third.
  for (int attempt = 0;; ++attempt) {
    auto tried = execute_once(request, output, release);
    if (!tried) return std::unexpected(tried.error());
    if (!tried->stale_layout || attempt > 0) return std::move(tried->run);
  }
}

Result<Sandbox::Attempt> Sandbox::execute_once(const SandboxRequest& request, const OutputLimits& output,
                                               const std::function<bool()>& release) {
  const auto start = SteadyClock::now();
  int64_t timeout_ms = std::min(request.timeout_ms.value_or(profile_.limits.wall_timeout_ms), profile_.limits.wall_timeout_ms);
  auto out_pipe = make_pipe();
  if (!out_pipe) return std::unexpected(out_pipe.error());
  auto err_pipe = make_pipe();
  if (!err_pipe) return std::unexpected(err_pipe.error());
  SpawnSpec spec;
  spec.argv = command_line(request);
  if (host_.drop) {
    spec.drop_uid = host_.uid;
    spec.drop_gid = host_.gid;
  }
  spec.overlay = request.overlay;
  const ResourceLimits& l = profile_.limits;
  spec.rlimits = {{RLIMIT_CPU, {l.cpu_seconds, l.cpu_seconds + 1}},
                  {RLIMIT_AS, {l.address_space_bytes, l.address_space_bytes}},
                  {RLIMIT_NPROC, {nproc_limit_, nproc_limit_}},
                  {RLIMIT_FSIZE, {l.file_size_bytes, l.file_size_bytes}},
                  {RLIMIT_NOFILE, {l.open_files, l.open_files}},
                  {RLIMIT_CORE, {0, 0}}};
  spec.stdin_fd = request.stdin_fd;
  spec.reap_here = request.reap_here;
  // The program is the gate: bwrap gets it, and goes on into the command, only at release().
  spec.seccomp = seccomp_program_;
  spec.stdout_fd = out_pipe->second.get();
  spec.stderr_fd = err_pipe->second.get();
  spec.pass_fds = request.pass_fds;
  for (const auto& f : request.files) spec.pass_fds.push_back(f.fd);
  auto files = profile_files();
  if (!files) return std::unexpected(files.error());
  for (const auto& f : *files) spec.pass_fds.push_back(f.get());
  // A stale guess starts the run again, and bwrap reads the caller's files and stdin while it
  // sets up: their offsets would have moved for the second start. Confirmed first, then.
  if (!request.files.empty() || request.stdin_fd >= 0) confirm_layout();
  // Made before bwrap starts, so that its processes are born in it; limited while bwrap sets
  // up, held until it is handed its seccomp program, before anything of the command can run.
  std::optional<RunCgroup> cgroup;
  if (host_.cgroups.usable()) {
    auto made = RunCgroup::make(host_.cgroups);
    // Made where a remembered layout said: if the host has changed since, that is why.
    if (!made && !confirm_layout()) return Attempt{std::nullopt, true};
    if (!made) return std::unexpected(made.error().with_context("sandbox: the run's cgroup"));
    cgroup.emplace(std::move(*made));
    spec.cgroup_procs_fds = cgroup->join_fds();
  }
  // Declared after the cgroup: on every way out it is stopped and reaped before the cgroup
  // is removed, and one never released has run nothing of the command.
  auto spawned = SandboxChild::spawn(spec);
  if (!spawned) return std::unexpected(spawned.error());
  RunChild child(*spawned, cgroup ? &*cgroup : nullptr);
  // Started from a remembered layout: it must be the host's as it is now, or bwrap is stopped
  // before the command could start and the run starts again from the fresh one.
  if (!confirm_layout()) return Attempt{std::nullopt, true};
  if (cgroup) {
    if (Status st = cgroup->limit(CgroupLimits{l.processes, l.memory_bytes, l.cpu_quota_percent}); !st) {
      return std::unexpected(st.error().with_context("sandbox: the run's cgroup"));
    }
  }
  if (!reclaimed_) {
    // Processes killed before their destructors ran left their scratch and cgroups behind;
    // nothing else would ever remove them (on /dev/shm the scratch is host memory). Once per
    // Sandbox, while bwrap starts on the other core rather than before it: the one-shot CLI
    // pays for this on every call.
    reclaim_orphaned_scratch(host_.scratch_root);
    host_.cgroups.reclaim_orphans();
    reclaimed_ = true;
  }
  // Our copies of the write ends must go, or EOF would never come.
  out_pipe->second.reset();
  err_pipe->second.reset();
  if (release && !release()) return Attempt{};
  if (!spawned->release()) return std::unexpected(errno_error("sandbox: handing bwrap its seccomp program (the sandbox was stopped)", errno));

  StreamCapture captures[2] = {StreamCapture(output), StreamCapture(output)};
  DriveOptions options;
  options.start = start;
  options.timeout = std::chrono::milliseconds(timeout_ms);
  options.stop = request.stop;
  options.grace = kKillGrace;
  for (int i = 0; i < 2; ++i) {
    (i == 0 ? options.out : options.err).take = [&capture = captures[i], &live = request.live, i](std::string_view bytes) {
      size_t accepted = capture.append(bytes);
      if (live && accepted > 0) live(i + 1, bytes.substr(0, accepted));
      return !capture.over_limit();
    };
  }
  // The run ends when the reaper has exited (so every process of the sandbox is gone: the
  // PID namespace dies with its init, and the reaper outlives both) and both pipes are at EOF.
  auto driven = drive(child, ChildPipes{{}, {}, std::move(out_pipe->first), std::move(err_pipe->first)}, options);
  if (!driven) return std::unexpected(driven.error());
  if (driven->outlived) {
    return fail(Errc::internal, "sandbox: output pipes still open " + std::to_string(kKillGrace.count()) +
                                    " s after the sandbox was killed: a process outlived its sandbox");
  }

  SandboxRun result;
  result.timed_out = driven->ending == DriveOutcome::Ending::timed_out;
  result.cancelled = driven->ending == DriveOutcome::Ending::cancelled;
  result.output_limit_exceeded = driven->overflow;
  int status = driven->wait_status.value_or(0);
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
  result.duration_ms = driven->elapsed.count();
  result.out = captures[0].finish();
  result.err = captures[1].finish();
  if (cgroup) {
    result.cgroup = cgroup->events();
    if (result.cgroup->memory_oom) result.limits_hit.push_back("memory");
    if (result.cgroup->pids_max) result.limits_hit.push_back("pids");
  }
  return Attempt{std::move(result), false};
}

}  // namespace warden
