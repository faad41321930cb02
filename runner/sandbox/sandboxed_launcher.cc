#include "runner/sandbox/sandboxed_launcher.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <set>

#include "common/file.h"

namespace warden {
namespace {

namespace fs = std::filesystem;

// Through a signal, bwrap exits 128+N when the command it ran was killed by signal N.
constexpr int kSignalExitBase = 128;
constexpr int kMaxSignal = 64;
constexpr uint64_t kStderrTail = 4096;
constexpr uint64_t kMaxFileBytes = uint64_t{64} << 20;    // one file the command names
constexpr uint64_t kMaxFilesBytes = uint64_t{256} << 20;  // all of them

bool below(const fs::path& path, const fs::path& dir) {
  auto [d, p] = std::mismatch(dir.begin(), dir.end(), path.begin(), path.end());
  return d == dir.end();
}

// An absolute path the profile already shows as it is on the host (/usr/..., /bin/sh).
bool shown_by_profile(const SandboxProfile& profile, const fs::path& path) {
  for (const auto& b : profile.ro_binds) {
    if (b.src == b.dest && below(path, b.dest)) return true;
  }
  for (const auto& l : profile.symlinks) {
    if (below(path, l.path)) return true;
  }
  return false;
}

// The named file, opened without following a symlink anywhere in the name as written
// (beneath the request's directory for a relative name): Warden reads it as root, and a file
// in a repository an executor has changed may be a link to a key or a ledger. Empty when it
// cannot be opened that way or is not a regular file: it is not copied.
UniqueFd open_named(const fs::path& named, const fs::path& dir, struct stat& st) {
  open_how how{};
  how.flags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC;
  how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  UniqueFd base;
  if (!named.is_absolute()) {
    base.reset(::open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!base) return {};
    how.resolve |= RESOLVE_BENEATH;
  }
  UniqueFd fd(static_cast<int>(::syscall(SYS_openat2, base ? base.get() : AT_FDCWD, named.c_str(), &how, sizeof how)));
  if (!fd || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return {};
  return fd;
}

Result<std::string> read_named(int fd, const std::string& name) {
  std::string bytes;
  char buf[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return std::unexpected(errno_error("reading the executor's file " + name, errno));
    if (n == 0) return bytes;
    bytes.append(buf, static_cast<size_t>(n));
    if (bytes.size() > kMaxFileBytes) {
      return fail(Errc::limit_exceeded, "the executor's file " + name + " is larger than " + std::to_string(kMaxFileBytes >> 20) + " MiB");
    }
  }
}

// The request's files as copies where its command line names them (see the header):
// existing regular files reached without a symlink only, each destination once. Copies, not
// binds: the sandbox's uid need not reach the host path, and nothing inside can reach the
// file itself.
Status copy_files(const SandboxProfile& profile, const LaunchRequest& request, std::vector<UniqueFd>& fds,
                  std::vector<FileCopy>& copies) {
  std::set<fs::path> seen;
  uint64_t total = 0;
  for (const auto& name : request.files) {
    fs::path named(name);
    fs::path inside;
    if (named.is_absolute()) {
      inside = named.lexically_normal();
      if (shown_by_profile(profile, inside)) continue;
    } else {
      fs::path relative = named.lexically_normal();
      if (relative.empty() || *relative.begin() == "..") continue;
      inside = fs::path(profile.workspace) / relative;
    }
    struct stat st;
    UniqueFd source = open_named(named, request.dir, st);
    if (!source) continue;
    if (!seen.insert(inside).second) continue;
    auto bytes = read_named(source.get(), name);
    if (!bytes) return std::unexpected(bytes.error());
    total += bytes->size();
    if (total > kMaxFilesBytes) {
      return fail(Errc::limit_exceeded, "the executor's files are larger than " + std::to_string(kMaxFilesBytes >> 20) + " MiB together");
    }
    auto fd = sealed_memfd("warden-executor-file", *bytes);
    if (!fd) return std::unexpected(fd.error());
    // Readable by all, executable where it was: a script stays runnable, nothing is writable.
    unsigned mode = 0444 | (st.st_mode & 0111);
    copies.push_back(FileCopy{fd->get(), inside.string(), mode});
    fds.push_back(std::move(*fd));
  }
  return {};
}

SubprocessResult to_subprocess_result(SandboxRun run) {
  SubprocessResult r;
  r.elapsed = std::chrono::milliseconds(run.duration_ms);
  using Ending = SubprocessResult::Ending;
  if (run.timed_out || run.cancelled) {
    r.ending = Ending::timed_out;
  } else if (run.output_limit_exceeded) {
    r.ending = Ending::stdout_overflow;
  } else if (run.signal != 0) {
    r.ending = Ending::signaled;
    r.signal = run.signal;
  } else if (run.exit_code > kSignalExitBase && run.exit_code <= kSignalExitBase + kMaxSignal) {
    r.ending = Ending::signaled;
    r.signal = run.exit_code - kSignalExitBase;
  } else {
    r.exit_code = run.exit_code;
  }
  r.out = std::move(run.out.kept);
  r.err_truncated = run.err.truncated;
  r.err = run.err.truncated ? std::move(run.err.tail) : std::move(run.err.kept);
  return r;
}

}  // namespace

Result<std::shared_ptr<SandboxedLauncher>> SandboxedLauncher::create(SandboxProfile profile, SandboxHost host) {
  std::shared_ptr<SandboxedLauncher> launcher(new SandboxedLauncher(std::move(profile), std::move(host)));
  auto first = Sandbox::create(launcher->profile_, launcher->host_);
  if (!first) return std::unexpected(first.error().with_context("executor sandbox"));
  launcher->idle_.push_back(std::make_unique<Sandbox>(std::move(*first)));
  return launcher;
}

Result<std::unique_ptr<Sandbox>> SandboxedLauncher::take() {
  {
    std::lock_guard lock(mu_);
    if (!idle_.empty()) {
      auto sandbox = std::move(idle_.back());
      idle_.pop_back();
      return sandbox;
    }
  }
  auto made = Sandbox::create(profile_, host_);
  if (!made) return std::unexpected(made.error().with_context("executor sandbox"));
  return std::make_unique<Sandbox>(std::move(*made));
}

void SandboxedLauncher::give_back(std::unique_ptr<Sandbox> sandbox) {
  std::lock_guard lock(mu_);
  idle_.push_back(std::move(sandbox));
}

Status SandboxedLauncher::preflight() {
  auto sandbox = take();
  if (!sandbox) return std::unexpected(sandbox.error());
  const PreflightReport& report = (*sandbox)->preflight();
  bool ok = report.ok;
  std::string failures = ok ? "" : report.failures();
  give_back(std::move(*sandbox));
  if (!ok) {
    return fail(Errc::verification_failed, "the executor sandbox's preflight failed for profile " + profile_.name +
                                               ", refusing to run any executor: " + failures);
  }
  return {};
}

Result<SubprocessResult> SandboxedLauncher::launch(const LaunchRequest& request) {
  if (request.argv.empty()) return fail(Errc::invalid_argument, "executor: no command given");
  auto input = sealed_memfd("warden-executor-stdin", request.stdin_data);
  if (!input) return std::unexpected(input.error());
  SandboxRequest sr;
  std::vector<UniqueFd> file_fds;  // open until the run has ended
  if (Status st = copy_files(profile_, request, file_fds, sr.files); !st) return std::unexpected(st.error());
  sr.argv = request.argv;
  sr.env = request.env;
  sr.stdin_fd = input->get();
  sr.timeout_ms = std::max<int64_t>(1, request.timeout.count());
  sr.stop = request.stop;
  sr.output = OutputLimits{request.max_output, 0, kStderrTail, request.max_output};

  auto sandbox = take();
  if (!sandbox) return std::unexpected(sandbox.error());
  auto run = (*sandbox)->run(sr);
  give_back(std::move(*sandbox));
  if (!run) return std::unexpected(run.error());
  return to_subprocess_result(std::move(*run));
}

LaunchConfinement SandboxedLauncher::confinement() const {
  return LaunchConfinement{profile_.name, profile_sha256_, profile_.network};
}

}  // namespace warden
