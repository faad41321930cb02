#include "runner/sandbox/preflight_cache.h"

#include <fcntl.h>
#include <seccomp.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>
#include <random>

#include "common/build_id.h"
#include "common/canonical_json.h"
#include "common/encoding.h"
#include "common/file.h"
#include "common/json_reader.h"
#include "runner/sandbox/sandbox.h"

namespace warden {
namespace {

// Bump when what a cached report means changes (the judge, the report's shape).
// 2: bwrap named by its file's identity, not its bytes. 3: the host's layout (scratch,
// cgroups, RLIMIT_NPROC backstop) in the key, as the judge reads it.
constexpr int kFormat = 3;
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

namespace {

// A key's digest: canonical JSON, where a path that is not UTF-8 is written with U+FFFD
// rather than throwing from a strict dump.
Digest digest_of(const Json& key) {
  auto canonical = canonicalize(key);
  return sha256(canonical ? *canonical : key.dump(-1, ' ', false, Json::error_handler_t::replace));
}

// The host's side of both keys: host.identity, read here when the host has none.
Json host_fields(const SandboxHost& host) {
  const HostIdentity read = host.identity ? HostIdentity() : HostIdentity::read(host.bwrap);
  const HostIdentity& id = host.identity ? *host.identity : read;
  return {{"bwrap", host.bwrap},
          {"bwrap_file", id.bwrap_file},
          {"kernel", id.kernel},
          {"namespaces", id.namespaces},
          {"overflow_uid", id.overflow_uid},
          {"euid", id.euid},
          {"uid", host.uid},
          {"gid", host.gid},
          {"drop", host.drop},
          {"layout", host.layout()}};
}

std::string compiled_file_name(const Digest& key) { return key.hex() + ".profile.json"; }

}  // namespace

Digest preflight_key(const SandboxProfile& profile, const Digest& profile_digest, const std::string& seccomp_program,
                     const SandboxHost& host) {
  Json key = host_fields(host);
  key["format"] = kFormat;
  key["profile_sha256"] = profile_digest.str();
  key["seccomp_sha256"] = sha256(seccomp_program).str();
  key["probe_sha256"] = sha256(preflight_script(profile)).str();
  return digest_of(key);
}

std::optional<Digest> compiled_profile_key(std::string_view profile_source, const SandboxHost& host) {
  std::string build = executable_build_id();
  if (build.empty()) return std::nullopt;
  struct utsname u {};
  ::uname(&u);
  // Where libseccomp is a shared library, the build id does not name it.
  const scmp_version* libseccomp = seccomp_version();
  Json key = {{"compiled_format", 2},
              {"build_id", build},
              {"libseccomp", std::to_string(libseccomp->major) + "." + std::to_string(libseccomp->minor) + "." +
                                 std::to_string(libseccomp->micro)},
              {"kernel", {u.sysname, u.release, u.version, u.machine}},
              {"euid", ::geteuid()},
              {"uid", host.uid},
              {"gid", host.gid},
              {"drop", host.drop},
              {"profile_source_sha256", sha256(profile_source).str()}};
  return digest_of(key);
}

std::optional<std::string> PreflightCache::read_entry(const std::string& name) const {
  UniqueFd dir = open_trusted_dir(dir_);
  if (!dir) return std::nullopt;
  UniqueFd fd(::openat(dir.get(), name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
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
  return text;
}

void PreflightCache::write_entry(const std::string& name, std::string_view text) const {
  std::error_code ec;
  std::filesystem::create_directories(dir_.parent_path(), ec);
  if (::mkdir(dir_.c_str(), 0700) != 0 && errno != EEXIST) return;
  UniqueFd dir = open_trusted_dir(dir_);
  if (!dir) return;
  std::string tmp = ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(std::random_device{}());
  UniqueFd fd(::openat(dir.get(), tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd) return;
  // No fsync: an entry torn by a crash fails to parse and is a miss.
  bool written = ::write(fd.get(), text.data(), text.size()) == static_cast<ssize_t>(text.size());
  fd.reset();
  if (!written || ::renameat(dir.get(), tmp.c_str(), dir.get(), name.c_str()) != 0) {
    ::unlinkat(dir.get(), tmp.c_str(), 0);
  }
}

std::optional<PreflightReport> PreflightCache::get(const Digest& key) const {
  auto text = read_entry(file_name(key));
  if (!text) return std::nullopt;
  auto json = parse_json(*text, "cached preflight");
  if (!json || !json->is_object() || !json->contains("key") || !json->contains("report")) return std::nullopt;
  if ((*json)["key"] != key.hex()) return std::nullopt;
  auto report = PreflightReport::from_json((*json)["report"]);
  if (!report || !report->ok) return std::nullopt;
  return *report;
}

void PreflightCache::put(const Digest& key, const PreflightReport& report) const {
  if (!report.ok) return;
  if (auto text = canonicalize(Json{{"key", key.hex()}, {"report", report.to_json()}})) write_entry(file_name(key), *text);
}

std::optional<CompiledProfile> PreflightCache::get_compiled(const Digest& key) const {
  auto text = read_entry(compiled_file_name(key));
  if (!text) return std::nullopt;
  auto json = parse_json(*text, "cached compiled profile");
  if (!json) return std::nullopt;
  JsonReader r(*json, "cached compiled profile");
  CompiledProfile compiled;
  Digest entry_key, program_sha;
  r.digest("key", entry_key);
  r.digest("profile_sha256", compiled.profile_digest);
  r.digest("seccomp_sha256", program_sha);
  if (const Json* layout = r.any("host_layout", false)) compiled.host_layout = *layout;
  auto program = from_hex(r.string("seccomp_program"));
  if (!r.finish() || entry_key != key || !program || program->empty() || sha256(*program) != program_sha) return std::nullopt;
  compiled.seccomp_program = std::move(*program);
  return compiled;
}

void PreflightCache::forget_compiled(const Digest& key) const {
  if (UniqueFd dir = open_trusted_dir(dir_)) ::unlinkat(dir.get(), compiled_file_name(key).c_str(), 0);
}

void PreflightCache::put_compiled(const Digest& key, const CompiledProfile& compiled) const {
  Json entry = {{"key", key.str()},
                {"profile_sha256", compiled.profile_digest.str()},
                {"seccomp_program", to_hex(compiled.seccomp_program)},
                {"seccomp_sha256", sha256(compiled.seccomp_program).str()}};
  if (compiled.host_layout) entry["host_layout"] = *compiled.host_layout;
  if (auto text = canonicalize(entry)) write_entry(compiled_file_name(key), *text);
}

void PreflightCache::forget(const Digest& key) const {
  if (UniqueFd dir = open_trusted_dir(dir_)) ::unlinkat(dir.get(), file_name(key).c_str(), 0);
}

}  // namespace warden
