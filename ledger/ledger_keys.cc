#include "ledger/ledger_keys.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>

#include "common/file.h"

namespace warden {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kMaxKeyBytes = 64 * 1024;

std::string trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ' || text.back() == '\t')) {
    text.pop_back();
  }
  return text;
}

std::string octal_mode(mode_t mode) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%04o", static_cast<unsigned>(mode & 07777));
  return buf;
}

Result<NoteSigner> parse_key(const std::string& text, const fs::path& path) {
  auto signer = NoteSigner::parse(trimmed(text));
  if (!signer) return std::unexpected(Error{Errc::invalid_argument, "signer key " + path.string() + ": " + signer.error().message});
  return signer;
}

// A key file Warden wrote: read as it was written, or refused (ledger_keys.h says why).
Result<SignerKey> read_own_key(const fs::path& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!fd) {
    if (errno == ELOOP) {
      return fail(Errc::invalid_argument, "signer key " + path.string() +
                                              " is a symlink: refused (Warden writes this file itself; a link may "
                                              "point at another key). Replace it with the key file, mode 0600");
    }
    return std::unexpected(errno_error("signer key " + path.string(), errno));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return std::unexpected(errno_error("signer key " + path.string(), errno));
  if (!S_ISREG(st.st_mode)) return fail(Errc::invalid_argument, "signer key " + path.string() + " is not a regular file");
  if ((st.st_mode & 077) != 0) {
    return fail(Errc::invalid_argument, "signer key " + path.string() + " has mode " + octal_mode(st.st_mode) +
                                            ": refused, group or others may read or change it (if nobody else could "
                                            "have read it: chmod 600 " + path.string() + ")");
  }
  auto text = read_fd(fd.get(), kMaxKeyBytes, "signer key " + path.string());
  if (!text) return std::unexpected(text.error());
  auto signer = parse_key(*text, path);
  if (!signer) return std::unexpected(signer.error());
  return SignerKey{std::move(*signer), path, {}};
}

// Where an older Warden kept the signer key of the ledger in `dir`.
std::vector<fs::path> legacy_locations(const fs::path& dir) {
  fs::path d = dir.has_filename() ? dir : dir.parent_path();
  std::vector<fs::path> out{fs::path(d.string() + ".key")};
  if (d.filename() == "ledger") out.push_back(d.parent_path() / "kernel.key");
  return out;
}

bool exists_no_follow(const fs::path& path) {
  std::error_code ec;
  return fs::symlink_status(path, ec).type() != fs::file_type::not_found && !ec;
}

bool holds_ledger(const fs::path& dir) {
  std::error_code ec;
  return fs::exists(dir / "data.mdb", ec);
}

}  // namespace

fs::path ledger_signer_key_path(const fs::path& dir) { return dir / kLedgerSignerKeyFile; }
fs::path ledger_verifier_key_path(const fs::path& dir) { return dir / kLedgerVerifierKeyFile; }

Result<SignerKey> read_given_signer_key(const fs::path& file) {
  auto text = read_file(file, kMaxKeyBytes);
  if (!text) return std::unexpected(text.error().with_context("signer key"));
  auto signer = parse_key(*text, file);
  if (!signer) return std::unexpected(signer.error());
  SignerKey key{std::move(*signer), file, {}};
  struct stat st {};
  if (file != "-" && ::stat(file.c_str(), &st) == 0 && (st.st_mode & 077) != 0) {
    key.warnings.push_back("signer key " + file.string() + " has mode " + octal_mode(st.st_mode) +
                           ": group or others may read it (chmod 600 " + file.string() + ")");
  }
  return key;
}

Result<SignerKey> find_ledger_signer_key(const fs::path& dir, const std::optional<fs::path>& given) {
  if (given) return read_given_signer_key(*given);
  const fs::path own = ledger_signer_key_path(dir);
  if (exists_no_follow(own)) return read_own_key(own);
  if (holds_ledger(dir)) {
    for (const fs::path& old : legacy_locations(dir)) {
      if (!exists_no_follow(old)) continue;
      auto key = read_own_key(old);
      if (!key) return key;
      key->warnings.push_back("signer key read from " + old.string() + ", where an older Warden kept it; its place is " +
                              own.string() + " (mv " + old.string() + " " + own.string() + ")");
      return key;
    }
  }
  return fail(Errc::not_found, "no signer key for the ledger " + dir.string() + ": " + own.string() + " does not exist");
}

Result<SignerKey> ledger_signer_key(const fs::path& dir, const std::optional<fs::path>& given, const std::string& name) {
  const fs::path own = ledger_signer_key_path(dir);
  if (given || holds_ledger(dir) || exists_no_follow(own)) return find_ledger_signer_key(dir, given);
  auto signer = NoteSigner::generate(name);
  if (!signer) return std::unexpected(signer.error());
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return fail(Errc::io_error, "creating the ledger directory " + dir.string() + ": " + ec.message());
  Status written = create_file_atomic(own, signer->encoded() + "\n", 0600);
  if (!written && written.error().code == Errc::already_exists) return read_own_key(own);  // another process's, first
  if (!written) return std::unexpected(written.error());
  return SignerKey{std::move(*signer), own, {}};
}

Status check_ledger_key_slot(const fs::path& dir, const NoteSigner& signer) {
  const fs::path own = ledger_signer_key_path(dir);
  if (!exists_no_follow(own)) return {};
  auto there = read_own_key(own);
  if (!there) return std::unexpected(there.error());
  if (there->signer.encoded() != signer.encoded()) {
    return fail(Errc::already_exists, own.string() + " holds another signer key (" +
                                          there->signer.verifier().encoded() +
                                          ") than the one this ledger would be created with: pass that key, or "
                                          "remove the file if no ledger needs it");
  }
  return {};
}

Status write_ledger_keys(const fs::path& dir, const NoteVerifier& verifier, const NoteSigner* signer) {
  if (signer && !exists_no_follow(ledger_signer_key_path(dir))) {
    Status st = create_file_atomic(ledger_signer_key_path(dir), signer->encoded() + "\n", 0600);
    if (!st && st.error().code != Errc::already_exists) return st;
  }
  return write_file_atomic(ledger_verifier_key_path(dir), verifier.encoded() + "\n", 0644);
}

}  // namespace warden
