#include "runner/agent/state_dir.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "common/encoding.h"
#include "common/random_source.h"
#include "runner/sandbox/private_dir.h"
#include "store/record_checks.h"

namespace warden::agent {
namespace {

namespace fs = std::filesystem;

// One runner per state directory: two sharing a key and an id would take the agent from each
// other on every reconnect. Held (by the returned descriptor) for the process's life.
Result<UniqueFd> lock_dir(const fs::path& dir) {
  const fs::path path = dir / "runner.lock";
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd) return std::unexpected(errno_error("open " + path.string(), errno));
  if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK) return fail(Errc::already_exists, "another runner uses the state directory " + dir.string());
    return std::unexpected(errno_error("flock " + path.string(), errno));
  }
  return fd;
}

// An id for a runner that was given none: the host's name (as an agent id may spell it)
// and 32 random bits, so runners sharing a host name stay apart.
std::string fresh_agent_id() {
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  std::string id;
  for (const char* p = host; *p && id.size() < 64; ++p) {
    const char c = *p;
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-';
    id += ok ? c : '-';
  }
  if (id.empty()) id = "runner";
  SystemRandomSource random;
  char suffix[16];
  std::snprintf(suffix, sizeof suffix, "-%08x", static_cast<unsigned>(random.next_u64()));
  return id + suffix;
}

}  // namespace

std::string default_state_dir() {
  if (const char* xdg = std::getenv("XDG_STATE_HOME"); xdg && *xdg) return std::string(xdg) + "/warden/runner";
  if (const char* home = std::getenv("HOME"); home && *home) return std::string(home) + "/.local/state/warden/runner";
  return "";
}

Result<UniqueFd> claim_state_dir(const fs::path& dir) {
  if (Status st = ensure_private_dir(dir); !st) return std::unexpected(st.error());
  return lock_dir(dir);
}

Result<RunnerIdentity> load_identity(const fs::path& dir, const std::string& given_id) {
  RunnerIdentity identity;
  const fs::path key_file = dir / "runner.key";
  std::error_code ec;
  if (!fs::exists(key_file, ec)) {
    auto key = Ed25519PrivateKey::generate();
    if (!key) return std::unexpected(key.error());
    if (Status st = create_file_atomic(key_file, to_hex(key->seed()) + "\n", 0600); !st) return std::unexpected(st.error());
  }
  // The key is the runner's identity: only a regular file of ours that nobody else can read.
  struct stat st;
  if (::lstat(key_file.c_str(), &st) != 0) return std::unexpected(errno_error("stat " + key_file.string(), errno));
  if (!S_ISREG(st.st_mode) || st.st_uid != ::geteuid()) {
    return fail(Errc::invalid_argument, key_file.string() + ": not a regular file of yours (a link is refused)");
  }
  if ((st.st_mode & 077) != 0) {
    return fail(Errc::invalid_argument, key_file.string() + ": others may read the runner's key; it may have leaked: "
                                                            "remove it to make a new one, then forget the runner's id");
  }
  auto text = read_file(key_file, 4096);
  if (!text) return std::unexpected(text.error());
  std::string hex = *text;
  while (!hex.empty() && (hex.back() == '\n' || hex.back() == ' ')) hex.pop_back();
  auto seed = from_hex(hex);
  if (!seed || seed->size() != 32) return fail(Errc::invalid_argument, key_file.string() + ": not a runner key (64 hex digits)");
  auto key = Ed25519PrivateKey::from_seed(*seed);
  if (!key) return std::unexpected(key.error());
  identity.key.emplace(std::move(*key));

  const fs::path id_file = dir / "runner.id";
  if (!given_id.empty()) {
    identity.agent_id = given_id;
  } else if (fs::exists(id_file, ec)) {
    auto stored = read_file(id_file, 4096);
    if (!stored) return std::unexpected(stored.error());
    identity.agent_id = *stored;
    while (!identity.agent_id.empty() && identity.agent_id.back() == '\n') identity.agent_id.pop_back();
  } else {
    identity.agent_id = fresh_agent_id();
    if (Status st = create_file_atomic(id_file, identity.agent_id + "\n", 0600); !st) return std::unexpected(st.error());
  }
  if (auto ok = store::check_id(identity.agent_id, "the runner's id"); !ok) return std::unexpected(ok.error());
  return identity;
}

}  // namespace warden::agent
