#include "runner/environment/environment_store.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <set>
#include <thread>

#include "common/file.h"
#include "common/random_source.h"
#include "common/strings.h"
#include "runner/sandbox/private_dir.h"

namespace warden {
namespace {

namespace fs = std::filesystem;

Error io(std::string_view what, const fs::path& path, const std::error_code& ec) {
  return Error{Errc::io_error, std::string(what) + " " + path.string() + ": " + ec.message()};
}

// An exclusive flock on <dir>/lock for as long as it lives.
class StoreLock {
 public:
  static Result<StoreLock> take(const fs::path& dir) {
    StoreLock l;
    l.fd_.reset(::open((dir / "lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
    if (!l.fd_) return std::unexpected(errno_error("opening " + (dir / "lock").string(), errno));
    while (::flock(l.fd_.get(), LOCK_EX) != 0) {
      if (errno != EINTR) return std::unexpected(errno_error("locking " + (dir / "lock").string(), errno));
    }
    return l;
  }

 private:
  UniqueFd fd_;
};

// A manifest is not believed either: every entry must name a plain relative path below a
// directory the manifest itself makes, the root first. A path with "..", an absolute one, or
// one below a symlink of the manifest (which may point anywhere) would make files outside
// the tree before the final scan could refuse it.
Status check_contained(const TreeManifest& manifest) {
  std::set<std::string, std::less<>> dirs;
  for (const auto& e : manifest.entries) {
    auto refuse = [&](std::string_view why) {
      return fail(Errc::invalid_argument, "manifest entry \"" + e.path + "\" " + std::string(why));
    };
    if (e.path.empty()) {
      if (e.type != TreeEntry::Type::directory) return refuse("(the root) is not a directory");
      dirs.insert("");
      continue;
    }
    for (std::string_view part : split_path(e.path)) {
      if (part.empty() || part == "." || part == "..") return refuse("is not a plain relative path");
    }
    const size_t slash = e.path.rfind('/');
    if (!dirs.contains(std::string_view(e.path).substr(0, slash == std::string::npos ? 0 : slash))) {
      return refuse("is not below a directory of the manifest");
    }
    if (e.type == TreeEntry::Type::directory) dirs.insert(e.path);
  }
  return {};
}

// The mode exactly, whatever the process's umask: the sandbox's uid must search what the
// store makes 0755.
Status make_dir(const fs::path& dir, unsigned mode = 0755) {
  if (::mkdir(dir.c_str(), mode) != 0) {
    if (errno != EEXIST) return std::unexpected(errno_error("mkdir " + dir.string(), errno));
    return {};
  }
  if (::chmod(dir.c_str(), mode) != 0) return std::unexpected(errno_error("chmod " + dir.string(), errno));
  return {};
}

// A unique name part for temporary files (never part of what is stored).
std::string random_hex(size_t bytes) {
  std::vector<uint8_t> b(bytes);
  fill_system_random(b);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (uint8_t x : b) out += {kHex[x >> 4], kHex[x & 15]};
  return out;
}

// Shown by `warden env list`, never part of a result or a record.
int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// An environment's `used` file: its mtime orders gc, and runs hold a shared flock on it. It
// is 0600, so no other user can open it and lock an environment against runs or removal.
void touch_used(const fs::path& file) {
  UniqueFd fd(::open(file.c_str(), O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd) return;
  (void)::fchmod(fd.get(), 0600);
  ::futimens(fd.get(), nullptr);
}

// Whether `uid` may search every directory from / down to `dir`.
std::optional<fs::path> unreachable_by(const fs::path& dir, uid_t uid) {
  fs::path at = "/";
  for (const auto& part : dir.relative_path()) {
    struct stat st{};
    if (::stat(at.c_str(), &st) != 0) return at;
    bool ok = st.st_uid == uid ? (st.st_mode & S_IXUSR) : (st.st_mode & S_IXOTH);
    if (!ok) return at;
    at /= part;
  }
  return std::nullopt;
}

}  // namespace

fs::path EnvironmentStore::default_dir() {
  if (const char* e = std::getenv("WARDEN_ENV_STORE"); e && *e) return e;
  if (::geteuid() == 0) return "/var/cache/warden-environments";
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return fs::path(x) / "warden" / "environments";
  if (const char* h = std::getenv("HOME"); h && *h) return fs::path(h) / ".cache" / "warden" / "environments";
  return "/tmp/warden-environments";
}

Result<EnvironmentStore> EnvironmentStore::open(fs::path dir, std::optional<uid_t> sandbox_uid) {
  std::error_code ec;
  dir = fs::absolute(dir, ec).lexically_normal();
  if (!dir.has_filename()) dir = dir.parent_path();
  fs::create_directories(dir, ec);
  if (ec) return std::unexpected(io("creating the environment store", dir, ec));
  // Made with the umask's bits: the store is 0755 (the sandbox's uid reads it, no one else
  // writes it). Only a directory of this uid's own, not reached through a link, is changed;
  // anything else is left as it is for ensure_owned_dir to refuse.
  if (UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)); fd) {
    struct stat st{};
    if (::fstat(fd.get(), &st) == 0 && st.st_uid == ::geteuid()) (void)::fchmod(fd.get(), 0755);
  }
  if (Status s = ensure_owned_dir(dir); !s) return std::unexpected(s.error());
  for (const char* sub : {"objects", "envs", "recipes", "tmp"}) {
    if (Status s = make_dir(dir / sub); !s) return std::unexpected(s.error());
  }
  if (sandbox_uid) {
    if (auto blocked = unreachable_by(dir / "envs", *sandbox_uid)) {
      return std::unexpected(Error{Errc::verification_failed,
                                   "the environment store " + dir.string() + " cannot be reached by the sandbox's uid " +
                                       std::to_string(*sandbox_uid) + ": " + blocked->string() +
                                       " is not searchable by it; put the store elsewhere (--env-store, WARDEN_ENV_STORE) or "
                                       "let others search " + blocked->string() + " (chmod o+x)"});
    }
  }
  EnvironmentStore s;
  s.dir_ = dir;
  s.memo_ = FileDigestMemo::load(dir / "memo");
  return s;
}

fs::path EnvironmentStore::env_dir(const Digest& d) const { return dir_ / "envs" / d.hex(); }

fs::path EnvironmentStore::object_path(const Digest& sha256, bool executable) const {
  std::string hex = sha256.hex();
  return dir_ / "objects" / hex.substr(0, 2) / (hex + (executable ? "x" : ""));
}

Result<fs::path> EnvironmentStore::make_temp(std::string_view prefix) {
  std::string name = std::string(prefix) + std::to_string(::getpid()) + "-" + random_hex(8);
  fs::path p = dir_ / "tmp" / name;
  if (Status s = make_dir(p, 0755); !s) return std::unexpected(s.error());
  return p;
}

Result<Environment> EnvironmentStore::read_env(const fs::path& dir) const {
  auto text = read_file(dir / "environment.json", 1 << 20);
  if (!text) return std::unexpected(text.error());
  Json j = Json::parse(*text, nullptr, false);
  auto e = Environment::from_json(j);
  if (!e) return std::unexpected(e.error().with_context(dir.string()));
  if (e->digest.hex() != dir.filename().string()) {
    return std::unexpected(Error{Errc::corrupt, dir.string() + ": the record names another environment"});
  }
  e->root = dir / "root";
  return e;
}

Status EnvironmentStore::put_object(const Digest& sha256, bool executable, const std::function<Status(const fs::path&)>& write,
                                    std::string_view what) {
  fs::path obj = object_path(sha256, executable);
  if (::access(obj.c_str(), F_OK) == 0) return {};
  if (Status s = make_dir(obj.parent_path()); !s) return s;
  fs::path tmp = dir_ / "tmp" / ("object-" + std::to_string(::getpid()) + "-" + random_hex(8));
  std::error_code ec;
  if (Status s = write(tmp); !s) {
    fs::remove(tmp, ec);
    return std::unexpected(s.error().with_context(std::string(what)));
  }
  auto got = digest_file(tmp);
  if (!got || *got != sha256) {
    fs::remove(tmp, ec);
    return fail(Errc::verification_failed, std::string(what) + ": the bytes received are not the file the manifest names (" +
                                               (got ? got->str() : got.error().message) + " for " + sha256.str() + ")");
  }
  ::chmod(tmp.c_str(), executable ? 0555 : 0444);
  if (::rename(tmp.c_str(), obj.c_str()) != 0) {
    int err = errno;
    fs::remove(tmp, ec);
    return std::unexpected(errno_error("storing " + obj.string(), err));
  }
  return {};
}

Status EnvironmentStore::add_object(const Digest& sha256, bool executable, std::string_view bytes) {
  return put_object(sha256, executable, [&](const fs::path& tmp) { return write_file_atomic(tmp, bytes, 0644); },
                    sha256.hex() + (executable ? "x" : ""));
}

Status EnvironmentStore::check_installable(const TreeManifest& manifest, const std::map<std::string, std::string>& env) {
  for (const auto& [k, v] : env) {
    if (reserved_environment_variable(k)) return fail(Errc::invalid_argument, "an environment may not set " + k + ": the sandbox fixes it");
  }
  for (const auto& e : manifest.entries) {
    if (e.type == TreeEntry::Type::other) return fail(Errc::invalid_argument, "an environment holds no device, socket or fifo: " + e.path);
  }
  return check_contained(manifest);
}

Result<Environment> EnvironmentStore::install(const TreeManifest& manifest, const std::map<std::string, std::string>& env,
                                              const Json& source, const ObjectWriter& write) {
  if (Status s = check_installable(manifest, env); !s) return std::unexpected(s.error());
  const Digest tree = manifest.digest();
  const Digest digest = environment_digest(tree, env);
  auto lock = StoreLock::take(dir_);
  if (!lock) return std::unexpected(lock.error());
  if (auto held = find(digest); held && *held) return **held;

  // Objects: each new one written to tmp/, hashed, and renamed into place.
  for (const auto& e : manifest.entries) {
    if (e.type != TreeEntry::Type::file) continue;
    Status stored = put_object(e.sha256, e.executable(), [&](const fs::path& tmp) { return write(e, tmp); }, e.path);
    if (!stored) return std::unexpected(stored.error());
  }

  // The tree, made aside and renamed into place once it scans to its digest.
  auto work = make_temp("env-");
  if (!work) return std::unexpected(work.error());
  auto cleanup = [&] {
    std::error_code ec;
    fs::remove_all(*work, ec);
  };
  fs::path root = *work / "root";
  for (const auto& e : manifest.entries) {
    fs::path p = e.path.empty() ? root : root / e.path;
    int rc = 0;
    switch (e.type) {
      case TreeEntry::Type::directory: rc = ::mkdir(p.c_str(), 0755) == 0 ? ::chmod(p.c_str(), 0755) : -1; break;
      case TreeEntry::Type::file: rc = ::link(object_path(e.sha256, e.executable()).c_str(), p.c_str()); break;
      case TreeEntry::Type::symlink: rc = ::symlink(e.target.c_str(), p.c_str()); break;
      case TreeEntry::Type::other: break;
    }
    if (rc != 0) {
      int err = errno;
      cleanup();
      return std::unexpected(errno_error("making " + p.string(), err));
    }
  }
  auto scanned = TreeManifest::scan(root, memo_, TreeManifest::Normalize::environment);
  if (!scanned || scanned->digest() != tree) {
    cleanup();
    std::string why;
    if (!scanned) {
      why = scanned.error().message;
    } else {
      auto diff = differing_paths(manifest, *scanned, 3);
      for (const auto& p : diff) why += (why.empty() ? "differs at " : ", ") + p;
      if (why.empty()) why = std::to_string(manifest.entries.size()) + " entries against " + std::to_string(scanned->entries.size());
    }
    return std::unexpected(Error{Errc::corrupt, "the installed tree is not the manifest's: " + why});
  }
  Environment out;
  out.digest = digest;
  out.tree = tree;
  out.env = env;
  out.source = source;
  out.files = manifest.files();
  out.bytes = manifest.file_bytes();
  out.created_ms = wall_ms();
  if (Status s = write_file_atomic(*work / "manifest", manifest.text(), 0444); !s) return cleanup(), std::unexpected(s.error());
  if (Status s = write_file_atomic(*work / "environment.json", canonicalize(out.to_json()).value() + "\n", 0444); !s) {
    cleanup();
    return std::unexpected(s.error());
  }
  touch_used(*work / "used");
  fs::path final_dir = env_dir(digest);
  if (::rename(work->c_str(), final_dir.c_str()) != 0) {
    int err = errno;
    cleanup();
    if (err != EEXIST && err != ENOTEMPTY) return std::unexpected(errno_error("storing " + final_dir.string(), err));
  }
  (void)memo_.save();
  out.root = final_dir / "root";
  return out;
}

Result<Environment> EnvironmentStore::import_tree(const fs::path& root, const std::map<std::string, std::string>& env,
                                                  const Json& source) {
  auto manifest = TreeManifest::scan(root, memo_, TreeManifest::Normalize::environment);
  if (!manifest) return std::unexpected(manifest.error());
  return install(*manifest, env, source, [&](const TreeEntry& e, const fs::path& dest) -> Status {
    std::error_code ec;
    fs::copy_file(root / e.path, dest, fs::copy_options::overwrite_existing, ec);
    if (ec) return std::unexpected(io("copying", root / e.path, ec));
    return {};
  });
}

Result<std::optional<Environment>> EnvironmentStore::find(const Digest& digest) {
  fs::path d = env_dir(digest);
  if (::access((d / "environment.json").c_str(), F_OK) != 0) return std::optional<Environment>{};
  auto e = read_env(d);
  if (!e) return std::unexpected(e.error());
  touch_used(d / "used");
  return std::optional<Environment>(std::move(*e));
}

Result<Environment> EnvironmentStore::open_verified(const Digest& digest) {
  auto found = find(digest);
  if (!found) return std::unexpected(found.error());
  if (!*found) return std::unexpected(Error{Errc::not_found, "no environment " + digest.str() + " in the store " + dir_.string()});
  auto scanned = TreeManifest::scan((*found)->root, memo_, TreeManifest::Normalize::environment);
  if (!scanned) return std::unexpected(scanned.error());
  (void)memo_.save();
  if (scanned->digest() != (*found)->tree) {
    std::string where;
    if (auto m = manifest(digest)) {
      auto diff = differing_paths(*m, *scanned, 3);
      for (const auto& p : diff) where += (where.empty() ? "" : ", ") + p;
    }
    return std::unexpected(Error{Errc::corrupt, "the stored environment " + digest.str() + " was changed after it was installed" +
                                                    (where.empty() ? "" : " (" + where + ")") + "; remove it (warden env gc --remove) and build it again"});
  }
  return std::move(**found);
}

Result<TreeManifest> EnvironmentStore::manifest(const Digest& digest) const {
  auto text = read_file(env_dir(digest) / "manifest", uint64_t{1} << 30);
  if (!text) return std::unexpected(text.error());
  return TreeManifest::parse(*text);
}

Result<std::vector<Environment>> EnvironmentStore::list() const {
  std::vector<std::pair<int64_t, Environment>> found;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir_ / "envs", ec)) {
    auto e = read_env(entry.path());
    if (!e) continue;
    struct stat st{};
    int64_t used = ::stat((entry.path() / "used").c_str(), &st) == 0 ? int64_t{st.st_mtim.tv_sec} * 1'000'000'000 + st.st_mtim.tv_nsec : 0;
    found.emplace_back(used, std::move(*e));
  }
  if (ec) return std::unexpected(io("listing", dir_ / "envs", ec));
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.first > b.first || (a.first == b.first && a.second.digest < b.second.digest); });
  std::vector<Environment> out;
  for (auto& [used, e] : found) out.push_back(std::move(e));
  return out;
}

Result<fs::path> EnvironmentStore::object(const Digest& sha256, bool executable) const {
  fs::path p = object_path(sha256, executable);
  if (::access(p.c_str(), R_OK) != 0) return std::unexpected(Error{Errc::not_found, "no object " + sha256.str()});
  return p;
}

Result<std::optional<Environment>> EnvironmentStore::built_from(const Digest& recipe) {
  auto text = read_file(dir_ / "recipes" / recipe.hex(), 256);
  if (!text) return std::optional<Environment>{};
  auto d = Digest::parse(std::string(trim(*text)));
  if (!d) return std::optional<Environment>{};
  return find(*d);
}

Status EnvironmentStore::remember_recipe(const Digest& recipe, const Digest& environment) {
  return write_file_atomic(dir_ / "recipes" / recipe.hex(), environment.str() + "\n", 0644);
}

Result<StoreHold> EnvironmentStore::hold_fetched_objects() const {
  const fs::path file = dir_ / "fetching";
  StoreHold h;
  h.fd_.reset(::open(file.c_str(), O_RDONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!h.fd_) return std::unexpected(errno_error("opening " + file.string(), errno));
  // gc holds it exclusively only while it sweeps objects.
  while (::flock(h.fd_.get(), LOCK_SH) != 0) {
    if (errno != EINTR) return std::unexpected(errno_error("locking " + file.string(), errno));
  }
  return h;
}

Result<StoreHold> EnvironmentStore::use(const Digest& digest) const {
  const fs::path dir = env_dir(digest);
  const fs::path used = dir / "used";
  // remove() holds its exclusive lock only while it moves the tree away, so a lock that stays
  // taken this long is someone else's doing, and the run is refused rather than left waiting.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  auto stayed_locked = [&] {
    return fail(Errc::io_error, "environment " + digest.str() + " stayed locked for 30 s (" + used.string() +
                                    "): another process holds it exclusively");
  };
  for (;;) {
    if (::access((dir / "environment.json").c_str(), F_OK) != 0) {
      return std::unexpected(Error{Errc::not_found, "no environment " + digest.str() + " in the store " + dir_.string()});
    }
    if (std::chrono::steady_clock::now() > deadline) return stayed_locked();
    StoreHold u;
    u.fd_.reset(::open(used.c_str(), O_RDONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!u.fd_) {
      if (errno == ENOENT) continue;  // removed since: judged again above
      return std::unexpected(errno_error("opening " + used.string(), errno));
    }
    bool locked = false;
    while (!locked) {
      if (::flock(u.fd_.get(), LOCK_SH | LOCK_NB) == 0) {
        locked = true;
      } else if (errno == EWOULDBLOCK) {
        if (std::chrono::steady_clock::now() > deadline) return stayed_locked();
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      } else if (errno != EINTR) {
        return std::unexpected(errno_error("locking " + used.string(), errno));
      }
    }
    // A remove() that held it meanwhile has moved the environment away (and an install may
    // have put it back): the file locked must still be the one at its path.
    struct stat held{}, now{};
    if (::fstat(u.fd_.get(), &held) == 0 && ::stat(used.c_str(), &now) == 0 && held.st_ino == now.st_ino && held.st_dev == now.st_dev) {
      return u;
    }
  }
}

Status EnvironmentStore::remove(const Digest& digest) {
  auto lock = StoreLock::take(dir_);
  if (!lock) return std::unexpected(lock.error());
  fs::path d = env_dir(digest);
  if (::access(d.c_str(), F_OK) != 0) return std::unexpected(Error{Errc::not_found, "no environment " + digest.str()});
  // Held exclusively until the tree is moved away: a use() that waits for it then finds the
  // environment gone.
  UniqueFd used(::open((d / "used").c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (used && ::flock(used.get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK) {
      return fail(Errc::failed_precondition, "environment " + digest.str() + " is in use by a running check");
    }
    return std::unexpected(errno_error("locking " + (d / "used").string(), errno));
  }
  // Renamed out of envs/ first, so no reader finds a half-removed tree.
  fs::path doomed = dir_ / "tmp" / ("removed-" + digest.hex() + "-" + random_hex(4));
  if (::rename(d.c_str(), doomed.c_str()) != 0) return std::unexpected(errno_error("removing " + d.string(), errno));
  std::error_code ec;
  fs::remove_all(doomed, ec);
  return {};
}

Result<uint64_t> EnvironmentStore::object_bytes() const {
  uint64_t total = 0;
  std::error_code ec;
  for (const auto& e : fs::recursive_directory_iterator(dir_ / "objects", ec)) {
    if (e.is_regular_file(ec)) total += e.file_size(ec);
  }
  if (ec) return std::unexpected(io("reading", dir_ / "objects", ec));
  return total;
}

Result<EnvironmentStore::GcReport> EnvironmentStore::gc(const Budget& budget, std::optional<Digest> keep) {
  GcReport report;
  auto envs = list();  // most recently used first
  if (!envs) return std::unexpected(envs.error());
  // Bytes each environment alone would keep are hard to split; the bound is on distinct
  // objects, so environments are dropped oldest first until the objects left fit.
  size_t count = envs->size();
  auto bytes = object_bytes();
  if (!bytes) return std::unexpected(bytes.error());
  uint64_t total = *bytes;
  for (auto it = envs->rbegin(); it != envs->rend() && (count > budget.max_count || total > budget.max_bytes); ++it) {
    if (keep && it->digest == *keep) continue;
    if (Status s = remove(it->digest); !s) {
      if (s.error().code != Errc::failed_precondition) return std::unexpected(s.error());
      report.in_use.push_back(it->digest);
      continue;
    }
    report.removed.push_back(it->digest);
    --count;
    // Objects only this environment linked now have one link left: freed below.
    auto after = object_bytes();
    if (!after) return std::unexpected(after.error());
    uint64_t unlinked = 0;
    std::error_code ec;
    for (const auto& e : fs::recursive_directory_iterator(dir_ / "objects", ec)) {
      struct stat st{};
      if (e.is_regular_file(ec) && ::stat(e.path().c_str(), &st) == 0 && st.st_nlink == 1) unlinked += static_cast<uint64_t>(st.st_size);
    }
    total = *after - unlinked;
  }
  auto lock = StoreLock::take(dir_);
  if (!lock) return std::unexpected(lock.error());
  std::error_code ec;
  // Objects no environment links are a fetch's on their way to an install while any fetch
  // holds the store's fetching lock: then they are all kept.
  UniqueFd fetching(::open((dir_ / "fetching").c_str(), O_RDONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fetching) return std::unexpected(errno_error("opening " + (dir_ / "fetching").string(), errno));
  if (::flock(fetching.get(), LOCK_EX | LOCK_NB) != 0) {
    report.kept_for_fetch = true;
    report.kept = count;
    auto left = object_bytes();
    report.bytes_kept = left ? *left : 0;
    return report;
  }
  for (const auto& e : fs::recursive_directory_iterator(dir_ / "objects", ec)) {
    struct stat st{};
    if (!e.is_regular_file(ec) || ::stat(e.path().c_str(), &st) != 0 || st.st_nlink != 1) continue;
    report.bytes_freed += static_cast<uint64_t>(st.st_size);
    ++report.objects_removed;
    fs::remove(e.path(), ec);
  }
  report.kept = count;
  auto left = object_bytes();
  report.bytes_kept = left ? *left : 0;
  return report;
}

}  // namespace warden
