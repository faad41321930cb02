// Who may call the kernel service: bearer tokens, each with a name and roles.
//
// The tokens file (`warden serve --tokens FILE`) is a JSON object
//   {"tokens": [{"name": "ci-agent", "sha256": "sha256:<hex of the token>",
//                "roles": ["executor"]}, ...]}
// holding only SHA-256 hashes: a leaked file grants nothing. Roles: `observer` reads (the
// ledger, runs, the fleet), `executor` proposes and attaches, `runner` enrols a runner
// (warden.v1.Runners, proto/fleet.proto), `admin` may do everything. A client sends
// `authorization: Bearer <token>`; the server hashes it and compares in constant time.
//
// Without a tokens file the server listens on its 0600 unix socket only, so its one user is
// trusted with every role (`local`).
//
// Revoking a token takes effect on the next call, without a restart: the file is read again
// whenever it has changed (inode, size, modification time), and an entry may say
// `"revoked": true` (its calls get UNAUTHENTICATED "revoked") or be removed. A file that no
// longer loads fails closed: every call is refused with UNAVAILABLE (the server's fault,
// which clients and runners retry) until it loads again. The caller is told only that; why
// (the file's path, the entry that does not parse) goes to `report`, the server's log, once
// per change of the file: an unauthenticated caller learns nothing of the file. Write it with a
// rename (write a new file, then mv) so no call sees it half-written.
#pragma once

#include <grpcpp/server_context.h>
#include <sys/stat.h>

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/sha256.h"

namespace warden::service {

enum class Role { observer, executor, runner, admin };

// The caller a call was authorized as: recorded with what its calls cause.
struct Identity {
  std::string name;
  std::set<Role> roles;
};

// Thread-safe: authorize() may be called from every gRPC thread at once; a copy shares the
// file's state with its original.
class TokenTable {
 public:
  // invalid_argument naming the entry and field for a malformed file; a file another user
  // could write is refused (it decides who may commit).
  static Result<TokenTable> load(const std::filesystem::path& path,
                                 std::function<void(const std::string&)> report = {});
  // Every caller is `local` with every role.
  static TokenTable local_only();

  // The caller of `context`, when it may act as `role` (admin may act as any role). Errors are
  // grpc statuses: UNAUTHENTICATED (no token, or one no entry hashes to), PERMISSION_DENIED
  // (a known token without the role).
  std::optional<Identity> authorize(const grpc::ServerContext& context, Role role, grpc::Status& denied) const;
  // The caller whose call carries `metadata`, whatever its roles: UNAUTHENTICATED as above.
  std::optional<Identity> identify(const std::multimap<grpc::string_ref, grpc::string_ref>& metadata,
                                   grpc::Status& denied) const;

 private:
  struct Entry {
    Identity identity;
    Digest hash;
    bool revoked = false;
  };
  using Entries = std::vector<Entry>;
  // The file as last read, and whether it has changed since.
  struct Watched {
    std::filesystem::path path;
    std::mutex mu;
    struct stat seen {};                        // guarded by mu
    std::shared_ptr<const Entries> entries;     // guarded by mu; null while the file is broken
    std::string broken;                         // guarded by mu: why the file no longer loads
    std::function<void(const std::string&)> report;  // fixed at load
  };
  static Result<Entries> parse(const std::filesystem::path& path, struct stat& st);
  // The entries, or null while the file does not load (reported once per change, outside
  // the lock). current_locked re-reads a changed file under the lock and says what changed.
  std::shared_ptr<const Entries> current() const;
  std::shared_ptr<const Entries> current_locked(std::string& change) const;

  bool open_ = false;  // local_only
  std::shared_ptr<Watched> watched_;
};

std::string_view role_name(Role role);

}  // namespace warden::service
