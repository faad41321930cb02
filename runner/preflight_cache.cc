#include "runner/preflight_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>
#include <random>

#include "common/canonical_json.h"
#include "common/file.h"
#include "runner/sandbox.h"

namespace warden {
namespace {

// Bump when what a cached report means changes (the judge, the report's shape).
constexpr int kFormat = 2;  // 2: bwrap named by its file's identity, not its bytes
constexpr off_t kMaxFileBytes = 64 << 10;

// The directory, opened, if it is ours alone: owned by our effective uid, no group or other
// write, not a symlink.
UniqueFd open_trusted_dir(const std::filesystem::path& dir) {
  UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  struct stat st;
  if (!fd || ::fstat(fd.get(), &st) != 0 || st.st_uid != ::geteuid() || (st.st_mode & 022) != 0) return {};
  return fd;
}

std::string file_name(const Digest& key) { return key.hex() + ".json"; }

int64_t nanoseconds(const struct timespec& t) { return int64_t{t.tv_sec} * 1'000'000'000 + t.tv_nsec; }

}  // namespace

HostIdentity HostIdentity::read(const std::filesystem::path& bwrap) {
  HostIdentity id;
  struct utsname u {};
  ::uname(&u);
  id.kernel = {u.sysname, u.release, u.version, u.machine};
  id.namespaces = own_namespaces();
  id.overflow_uid = warden::overflow_uid();
  id.euid = ::geteuid();
  struct stat st {};
  if (::stat(bwrap.c_str(), &st) == 0) {
    id.bwrap_file = std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino) + ":" + std::to_string(st.st_size) + ":" +
                    std::to_string(nanoseconds(st.st_mtim)) + ":" + std::to_string(nanoseconds(st.st_ctim));
  }
  return id;
}

Digest preflight_key(const SandboxProfile& profile, const Digest& profile_digest, const std::string& seccomp_program,
                     const SandboxHost& host) {
  const HostIdentity read = host.identity ? HostIdentity() : HostIdentity::read(host.bwrap);
  const HostIdentity& id = host.identity ? *host.identity : read;
  Json key = {{"format", kFormat},
              {"profile_sha256", profile_digest.str()},
              {"seccomp_sha256", sha256(seccomp_program).str()},
              {"probe_sha256", sha256(preflight_script(profile)).str()},
              {"bwrap", host.bwrap},
              {"bwrap_file", id.bwrap_file},
              {"kernel", id.kernel},
              {"namespaces", id.namespaces},
              {"overflow_uid", id.overflow_uid},
              {"euid", id.euid},
              {"uid", host.uid},
              {"gid", host.gid},
              {"drop", host.drop},
              {"scratch_root", host.scratch_root.string()}};
  // A path that is not UTF-8 is written with U+FFFD rather than throwing from a strict dump.
  auto canonical = canonicalize(key);
  return sha256(canonical ? *canonical : key.dump(-1, ' ', false, Json::error_handler_t::replace));
}

std::optional<PreflightReport> PreflightCache::get(const Digest& key) const {
  UniqueFd dir = open_trusted_dir(dir_);
  if (!dir) return std::nullopt;
  UniqueFd fd(::openat(dir.get(), file_name(key).c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  struct stat st;
  if (!fd || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid() ||
      (st.st_mode & 022) != 0 || st.st_size > kMaxFileBytes) {
    return std::nullopt;
  }
  auto age = std::chrono::system_clock::now() -
             std::chrono::system_clock::time_point(std::chrono::seconds(st.st_mtim.tv_sec));
  if (age > kMaxAge || age < -std::chrono::minutes(1)) return std::nullopt;
  std::string text(static_cast<size_t>(st.st_size), '\0');
  if (::read(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size())) return std::nullopt;
  auto json = parse_json(text, "cached preflight");
  if (!json || !json->is_object() || !json->contains("key") || !json->contains("report")) return std::nullopt;
  if ((*json)["key"] != key.hex()) return std::nullopt;
  auto report = PreflightReport::from_json((*json)["report"]);
  if (!report || !report->ok) return std::nullopt;
  return *report;
}

void PreflightCache::put(const Digest& key, const PreflightReport& report) const {
  if (!report.ok) return;
  std::error_code ec;
  std::filesystem::create_directories(dir_.parent_path(), ec);
  if (::mkdir(dir_.c_str(), 0700) != 0 && errno != EEXIST) return;
  UniqueFd dir = open_trusted_dir(dir_);
  if (!dir) return;
  auto text = canonicalize(Json{{"key", key.hex()}, {"report", report.to_json()}});
  if (!text) return;
  std::string tmp = ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(std::random_device{}());
  UniqueFd fd(::openat(dir.get(), tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd) return;
  // No fsync: a verdict torn by a crash fails to parse and is a miss.
  bool written = ::write(fd.get(), text->data(), text->size()) == static_cast<ssize_t>(text->size());
  fd.reset();
  if (!written || ::renameat(dir.get(), tmp.c_str(), dir.get(), file_name(key).c_str()) != 0) {
    ::unlinkat(dir.get(), tmp.c_str(), 0);
  }
}

void PreflightCache::forget(const Digest& key) const {
  if (UniqueFd dir = open_trusted_dir(dir_)) ::unlinkat(dir.get(), file_name(key).c_str(), 0);
}

}  // namespace warden
