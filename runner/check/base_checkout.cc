#include "runner/check/base_checkout.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <random>

#include "common/file.h"
#include "runner/check/diff_layer.h"
#include "runner/sandbox/private_dir.h"
#include "runner/sandbox/scratch_dir.h"
#include "runner/sandbox/stat_snapshot.h"

namespace warden {

namespace fs = std::filesystem;

namespace {

constexpr size_t kMaxSealBytes = 4096;

std::unexpected<Refusal> failure(const Error& e) { return std::unexpected(Refusal{RefusalCode::workspace_error, "", e.message}); }

std::string seal_text(const ObjectId& tree, const StatSnapshot& snapshot) {
  return "warden base checkout seal 1\ntree " + tree.hex() + "\nentries " + std::to_string(snapshot.entries) + "\nsnapshot " +
         snapshot.sha256.hex() + "\n";
}

// A name beside the entries, unique to this call.
fs::path sibling(const fs::path& dir, std::string_view kind, const ObjectId& tree) {
  std::random_device rd;
  return dir / ("." + std::string(kind) + "-" + tree.hex() + "-" + std::to_string(rd()) + std::to_string(rd()));
}

// Whether an open file or directory is Warden's alone: its owner, nothing for group or others.
std::optional<std::string> not_private(int fd, std::string_view what) {
  struct stat st;
  if (::fstat(fd, &st) != 0) return std::string("cannot stat its ") + std::string(what);
  if (st.st_uid != ::geteuid() || (st.st_mode & 077) != 0) {
    return "its " + std::string(what) + " is owned by uid " + std::to_string(st.st_uid) + " with mode " +
           std::to_string((st.st_mode >> 6) & 7) + std::to_string((st.st_mode >> 3) & 7) + std::to_string(st.st_mode & 7) +
           ", not Warden's alone";
  }
  return std::nullopt;
}

// Moves an entry out of the way and removes it. Another process may have done so first.
void discard(const fs::path& dir, const fs::path& entry, const ObjectId& tree) {
  fs::path aside = sibling(dir, "discarded", tree);
  if (::rename(entry.c_str(), aside.c_str()) == 0) remove_tree(aside);
}

}  // namespace

BaseCheckouts::BaseCheckouts(fs::path dir, SandboxHost host)
    : dir_(std::move(dir)), host_(std::move(host)), trusted_(std::make_unique<Trusted>()) {}

bool BaseCheckouts::trusted(const ObjectId& tree) const {
  std::lock_guard lock(trusted_->mu);
  return trusted_->trees.contains(tree.hex());
}

void BaseCheckouts::trust(const ObjectId& tree) {
  std::lock_guard lock(trusted_->mu);
  trusted_->trees.insert(tree.hex());
}

std::optional<std::string> BaseCheckouts::verify(const ObjectId& tree) const {
  UniqueFd entry(::open(entry_of(tree).c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!entry) return "it is not a directory Warden can open";
  UniqueFd seal(::openat(entry.get(), "seal", O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!seal) return std::string("it has no seal (left unfinished, or not made by Warden)");
  if (auto why = not_private(entry.get(), "directory")) return why;
  if (auto why = not_private(seal.get(), "seal")) return why;
  std::string sealed(kMaxSealBytes, '\0');
  ssize_t n = ::read(seal.get(), sealed.data(), sealed.size());
  if (n < 0) return std::string("its seal cannot be read");
  sealed.resize(static_cast<size_t>(n));
  UniqueFd checkout(::openat(entry.get(), "checkout", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!checkout) return std::string("it has no checkout directory");
  auto snapshot = stat_snapshot(checkout.get());
  if (!snapshot) return "its checkout cannot be walked: " + snapshot.error().message;
  if (sealed != seal_text(tree, *snapshot)) {
    return "its checkout no longer matches its seal: a file or directory was changed, added, removed or replaced after it "
           "was made";
  }
  return std::nullopt;
}

Checked<void> BaseCheckouts::make(GitRepo& repo, const ObjectId& tree, bool& made) {
  fs::path tmp = sibling(dir_, "tmp", tree);
  // The temporary directory is removed on every failure path.
  struct Cleanup {
    fs::path path;
    ~Cleanup() {
      if (!path.empty()) remove_tree(path);
    }
  } cleanup{tmp};
  if (::mkdir(tmp.c_str(), 0700) != 0) return failure(errno_error("mkdir " + tmp.string(), errno));
  if (Status st = make_owned_dir(tmp / "checkout", host_.uid, host_.gid, 0755); !st) return failure(st.error());
  if (auto st = write_full_tree(repo, tree, tmp / "checkout", host_); !st) return std::unexpected(st.error());
  UniqueFd checkout(::open((tmp / "checkout").c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!checkout) return failure(errno_error("open " + (tmp / "checkout").string(), errno));
  auto snapshot = stat_snapshot(checkout.get());
  if (!snapshot) return failure(snapshot.error());
  if (Status st = write_file_atomic(tmp / "seal", seal_text(tree, *snapshot), 0600); !st) return failure(st.error());
  // Renaming the entry moves neither checkout/ nor anything in it: the seal stays true.
  if (::rename(tmp.c_str(), entry_of(tree).c_str()) != 0) {
    int err = errno;
    if (err != EEXIST && err != ENOTEMPTY) return failure(errno_error("rename " + entry_of(tree).string(), err));
    // Another process made the same checkout first: theirs is as good as ours once it verifies.
    if (auto why = verify(tree)) {
      return failure(Error{Errc::verification_failed,
                           "the base checkout " + entry_of(tree).string() + ", made meanwhile by another process, fails: " + *why});
    }
    return {};
  }
  cleanup.path.clear();
  made = true;
  return {};
}

Checked<BaseCheckouts::Got> BaseCheckouts::get(GitRepo& repo, const ObjectId& tree) {
  if (Status st = ensure_private_dir(dir_); !st) return failure(st.error());
  Got got;
  got.path = path_of(tree);
  struct stat st;
  const bool exists = ::lstat(entry_of(tree).c_str(), &st) == 0;
  if (exists && trusted(tree)) return got;
  if (exists) {
    got.discarded = verify(tree);
    if (!got.discarded) {
      trust(tree);
      return got;
    }
    discard(dir_, entry_of(tree), tree);
  }
  if (auto made = make(repo, tree, got.made); !made) return std::unexpected(made.error());
  trust(tree);
  return got;
}

}  // namespace warden
