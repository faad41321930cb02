#include "runner/sandbox/private_dir.h"

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "common/file.h"

namespace warden {
namespace {

std::string user_name(uid_t uid) {
  struct passwd pw, *found = nullptr;
  char buf[1024];
  std::string id = "uid " + std::to_string(uid);
  if (::getpwuid_r(uid, &pw, buf, sizeof buf, &found) == 0 && found) return id + " (" + found->pw_name + ")";
  return id;
}

std::string octal(mode_t mode) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%04o", static_cast<unsigned>(mode & 07777));
  return buf;
}

// Ownership and write permission, the part of the rule directories and files share.
Status check_owner_and_writers(const std::filesystem::path& path, const struct stat& st, std::string_view what) {
  const uid_t self = ::geteuid();
  if (st.st_uid != self) {
    return fail(Errc::verification_failed,
                path.string() + " (" + std::string(what) + ") is owned by " + user_name(st.st_uid) + ", not by " + user_name(self) +
                    " that Warden runs as, so that user could have replaced what it holds; remove it (rm -rf " + path.string() +
                    ") and Warden recreates it, or, if you trust its contents, chown " + std::to_string(self) + " " +
                    path.string() + " && chmod go-w " + path.string());
  }
  if ((st.st_mode & 022) != 0) {
    return fail(Errc::verification_failed,
                path.string() + " (" + std::string(what) + ", owner " + user_name(st.st_uid) + ") has mode " + octal(st.st_mode) +
                    ": its group or others may write into it and could have replaced what it holds; remove it (rm -rf " +
                    path.string() + ") and Warden recreates it, or, if you trust its contents, chmod go-w " + path.string());
  }
  return {};
}

}  // namespace

Status ensure_private_dir(const std::filesystem::path& dir) {
  if (Status ok = ensure_owned_dir(dir); !ok) return ok;
  struct stat st;
  if (::lstat(dir.c_str(), &st) != 0) return std::unexpected(errno_error("stat " + dir.string(), errno));
  if ((st.st_mode & 077) != 0 && ::chmod(dir.c_str(), 0700) != 0) {
    return std::unexpected(errno_error("chmod 0700 " + dir.string(), errno));
  }
  return {};
}

Status ensure_owned_dir(const std::filesystem::path& dir) {
  struct stat st;
  if (::lstat(dir.c_str(), &st) != 0) {
    if (errno != ENOENT) return std::unexpected(errno_error("stat " + dir.string(), errno));
    std::error_code ec;
    if (dir.has_parent_path()) std::filesystem::create_directories(dir.parent_path(), ec);
    if (ec) return fail(Errc::io_error, "creating " + dir.parent_path().string() + ": " + ec.message());
    // Another process may create it at the same moment: EEXIST is judged below like any.
    if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) return std::unexpected(errno_error("mkdir " + dir.string(), errno));
    if (::lstat(dir.c_str(), &st) != 0) return std::unexpected(errno_error("stat " + dir.string(), errno));
  }
  if (!S_ISDIR(st.st_mode)) {
    return fail(Errc::verification_failed, dir.string() + " is not a directory" + (S_ISLNK(st.st_mode) ? " (a symlink)" : "") +
                                               ": Warden's cache must be a directory of its own; remove it");
  }
  return check_owner_and_writers(dir, st, "a directory of Warden's cache");
}

Status check_private_file(const std::filesystem::path& file) {
  struct stat st;
  if (::lstat(file.c_str(), &st) != 0) {
    if (errno == ENOENT) return {};
    return std::unexpected(errno_error("stat " + file.string(), errno));
  }
  if (!S_ISREG(st.st_mode)) return fail(Errc::verification_failed, file.string() + " is not a regular file: remove it");
  return check_owner_and_writers(file, st, "a file of Warden's cache");
}

}  // namespace warden
