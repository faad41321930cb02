#include "service/tokens.h"

#include <openssl/crypto.h>
#include <sys/stat.h>

#include <cstring>

#include "common/canonical_json.h"
#include "common/file.h"
#include "common/json_reader.h"

namespace warden::service {
namespace {

constexpr uint64_t kMaxTokensFileBytes = 1 << 20;
constexpr std::string_view kBearer = "Bearer ";

std::optional<Role> parse_role(std::string_view name) {
  for (Role r : {Role::observer, Role::executor, Role::runner, Role::admin}) {
    if (role_name(r) == name) return r;
  }
  return std::nullopt;
}

}  // namespace

std::string_view role_name(Role role) {
  switch (role) {
    case Role::observer: return "observer";
    case Role::executor: return "executor";
    case Role::runner: return "runner";
    case Role::admin: return "admin";
  }
  return "unknown";
}

Result<TokenTable> TokenTable::load(const std::filesystem::path& path, std::function<void(const std::string&)> report) {
  struct stat st {};
  auto entries = parse(path, st);
  if (!entries) return std::unexpected(entries.error());
  TokenTable table;
  table.watched_ = std::make_shared<Watched>();
  table.watched_->path = path;
  table.watched_->report = std::move(report);
  table.watched_->seen = st;
  table.watched_->entries = std::make_shared<const Entries>(std::move(*entries));
  return table;
}

namespace {

bool same_file(const struct stat& a, const struct stat& b) {
  return a.st_ino == b.st_ino && a.st_dev == b.st_dev && a.st_size == b.st_size && a.st_mtim.tv_sec == b.st_mtim.tv_sec &&
         a.st_mtim.tv_nsec == b.st_mtim.tv_nsec && a.st_ctim.tv_sec == b.st_ctim.tv_sec && a.st_ctim.tv_nsec == b.st_ctim.tv_nsec;
}

}  // namespace

std::shared_ptr<const TokenTable::Entries> TokenTable::current() const {
  Watched& w = *watched_;
  std::string change;  // reported after the lock is released: a slow log must not stall every call
  std::shared_ptr<const Entries> entries = current_locked(change);
  if (!change.empty() && w.report) w.report(change);
  return entries;
}

std::shared_ptr<const TokenTable::Entries> TokenTable::current_locked(std::string& change) const {
  Watched& w = *watched_;
  std::lock_guard lock(w.mu);
  struct stat now {};
  const std::string was = w.broken;
  if (::stat(w.path.c_str(), &now) != 0) {
    w.entries.reset();
    w.broken = "the tokens file " + w.path.string() + " is gone";
    std::memset(&w.seen, 0, sizeof w.seen);
  } else if (!same_file(now, w.seen)) {
    struct stat st {};
    auto entries = parse(w.path, st);
    w.seen = now;
    if (entries) {
      w.entries = std::make_shared<const Entries>(std::move(*entries));
      w.broken.clear();
    } else {
      w.entries.reset();  // fail closed: a revocation must not be undone by a typo
      w.broken = "the tokens file no longer loads: " + entries.error().message;
    }
  }
  if (w.broken != was) {
    change = w.broken.empty() ? "the tokens file " + w.path.string() + " loads again" : w.broken + "; every call is refused";
  }
  return w.entries;
}

Result<TokenTable::Entries> TokenTable::parse(const std::filesystem::path& path, struct stat& st) {
  if (::stat(path.c_str(), &st) != 0) return std::unexpected(errno_error("--tokens " + path.string(), errno));
  if ((st.st_mode & 022) != 0 || (st.st_uid != ::geteuid() && st.st_uid != 0)) {
    return fail(Errc::invalid_argument, "--tokens " + path.string() +
                                            ": another user could write it (it decides who may call the kernel); "
                                            "chown it to the server's user and chmod 0600");
  }
  auto text = read_file(path, kMaxTokensFileBytes);
  if (!text) return std::unexpected(text.error().with_context("--tokens"));
  auto json = parse_json(*text, "tokens file " + path.string());
  if (!json) return std::unexpected(json.error());
  if (!json->is_object()) return fail(Errc::invalid_argument, "tokens file " + path.string() + ": must be a JSON object");
  JsonReader reader(*json, "tokens");
  Entries table;
  const Json& list = reader.array("tokens");
  std::set<std::string> names;
  std::set<Digest> hashes;
  for (size_t i = 0; reader.ok() && i < list.size(); ++i) {
    JsonReader e = reader.element("tokens", list, i);
    Entry entry;
    e.string("name", entry.identity.name);
    e.digest("sha256", entry.hash);
    std::vector<std::string> roles;
    e.strings("roles", roles);
    if (e.has("revoked")) e.boolean("revoked", entry.revoked);
    if (!e.ok()) break;
    if (entry.identity.name.empty() || entry.identity.name == "local") {
      e.fail("name", "must be non-empty and not \"local\" (the name of the socket's own user)");
      break;
    }
    if (!names.insert(entry.identity.name).second) {
      e.fail("name", "\"" + entry.identity.name + "\" is used twice");
      break;
    }
    if (!hashes.insert(entry.hash).second) {
      e.fail("sha256", "the same token is listed twice");
      break;
    }
    for (const auto& r : roles) {
      auto role = parse_role(r);
      if (!role) {
        e.fail("roles", "unknown role \"" + r + "\" (observer, executor, runner, admin)");
        break;
      }
      entry.identity.roles.insert(*role);
    }
    if (e.ok() && entry.identity.roles.empty()) e.fail("roles", "must name at least one role");
    if (e.ok()) table.push_back(std::move(entry));
  }
  if (Status st = reader.finish(); !st) return std::unexpected(st.error());
  // An empty table would lock every caller out: a mistake, not a policy.
  if (table.empty()) return fail(Errc::invalid_argument, "tokens.tokens: must list at least one token");
  return table;
}

TokenTable TokenTable::local_only() {
  TokenTable table;
  table.open_ = true;
  return table;
}

std::optional<Identity> TokenTable::authorize(const grpc::ServerContext& context, Role role, grpc::Status& denied) const {
  auto identity = identify(context.client_metadata(), denied);
  if (!identity) return std::nullopt;
  if (!identity->roles.contains(role) && !identity->roles.contains(Role::admin)) {
    denied = grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                          "token \"" + identity->name + "\" lacks the " + std::string(role_name(role)) + " role");
    return std::nullopt;
  }
  return identity;
}

std::optional<Identity> TokenTable::identify(const std::multimap<grpc::string_ref, grpc::string_ref>& metadata,
                                             grpc::Status& denied) const {
  if (open_) return Identity{"local", {Role::observer, Role::executor, Role::runner, Role::admin}};
  auto it = metadata.find("authorization");
  if (it == metadata.end()) {
    denied = grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "no token: send `authorization: Bearer <token>`");
    return std::nullopt;
  }
  std::string_view value(it->second.data(), it->second.size());
  if (!value.starts_with(kBearer)) {
    denied = grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "the authorization header must be `Bearer <token>`");
    return std::nullopt;
  }
  std::shared_ptr<const Entries> entries = current();
  if (!entries) {
    // The server's own fault, not the caller's token: UNAVAILABLE, which clients retry (a
    // runner that took it for a refused token would stop for good over a half-written file).
    // Why is the server log's: the file's entries are nothing an unauthenticated caller may read.
    denied = grpc::Status(grpc::StatusCode::UNAVAILABLE,
                          "the server's tokens file no longer loads; an operator must fix it (the server's log says why)");
    return std::nullopt;
  }
  Digest presented = sha256(value.substr(kBearer.size()));
  // Every entry is compared, in constant time, so the timing says nothing about which matched.
  const Entry* match = nullptr;
  for (const auto& entry : *entries) {
    if (CRYPTO_memcmp(entry.hash.bytes().data(), presented.bytes().data(), Digest::kSize) == 0) match = &entry;
  }
  if (!match) {
    denied = grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "unknown token");
    return std::nullopt;
  }
  if (match->revoked) {
    denied = grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "token \"" + match->identity.name + "\" was revoked");
    return std::nullopt;
  }
  return match->identity;
}

}  // namespace warden::service
