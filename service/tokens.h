// Who may call the kernel service: bearer tokens, each with a name and roles.
//
// The tokens file (`warden serve --tokens FILE`) is a JSON object
//   {"tokens": [{"name": "ci-agent", "sha256": "sha256:<hex of the token>",
//                "roles": ["executor"]}, ...]}
// holding only SHA-256 hashes: a leaked file grants nothing. Roles: `observer` reads (the
// ledger, runs), `executor` proposes and attaches, `admin` may do everything. A client sends
// `authorization: Bearer <token>`; the server hashes it and compares in constant time.
//
// Without a tokens file the server listens on its 0600 unix socket only, so its one user is
// trusted with every role (`local`).
#pragma once

#include <grpcpp/server_context.h>

#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/sha256.h"

namespace warden::service {

enum class Role { observer, executor, admin };

// The caller a call was authorized as: recorded with what its calls cause.
struct Identity {
  std::string name;
  std::set<Role> roles;
};

class TokenTable {
 public:
  // invalid_argument naming the entry and field for a malformed file; a file another user
  // could write is refused (it decides who may commit).
  static Result<TokenTable> load(const std::filesystem::path& path);
  // Every caller is `local` with every role.
  static TokenTable local_only();

  // The caller of `context`, when it may act as `role` (admin may act as any role). Errors are
  // grpc statuses: UNAUTHENTICATED (no token, or one no entry hashes to), PERMISSION_DENIED
  // (a known token without the role).
  std::optional<Identity> authorize(const grpc::ServerContext& context, Role role, grpc::Status& denied) const;

 private:
  struct Entry {
    Identity identity;
    Digest hash;
  };
  bool open_ = false;  // local_only
  std::vector<Entry> entries_;
};

std::string_view role_name(Role role);

}  // namespace warden::service
