#include "tools/warden/env_flags.h"

#include <algorithm>

namespace warden::cli {

Result<EnvironmentStore> open_env_store(const std::string& dir, std::optional<uid_t> sandbox_uid) {
  return EnvironmentStore::open(dir.empty() ? EnvironmentStore::default_dir() : std::filesystem::path(dir), sandbox_uid);
}

Result<Environment> find_stored_environment(const EnvironmentStore& store, std::string_view text) {
  std::string prefix(text);
  if (text.starts_with("sha256:")) {
    auto full = Digest::parse(text);
    if (!full) return std::unexpected(full.error().with_context("environment " + prefix));
    prefix = full->hex();
  } else {
    bool hex = std::all_of(prefix.begin(), prefix.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
    if (!hex || prefix.size() < kMinDigestPrefix || prefix.size() > 64) {
      return fail(Errc::invalid_argument, "environment \"" + prefix + "\": give sha256:<64 hex> or at least " +
                                              std::to_string(kMinDigestPrefix) + " lowercase hex characters of it (warden env list)");
    }
  }
  auto envs = store.list();
  if (!envs) return std::unexpected(envs.error());
  std::vector<Environment> matches;
  for (auto& e : *envs) {
    if (e.digest.hex().starts_with(prefix)) matches.push_back(std::move(e));
  }
  if (matches.empty()) return fail(Errc::not_found, "no environment " + std::string(text) + " in the store " + store.dir().string());
  if (matches.size() > 1) {
    return fail(Errc::invalid_argument, "environment " + std::string(text) + " is ambiguous: " + std::to_string(matches.size()) +
                                            " stored environments start so; give more of the digest");
  }
  return std::move(matches.front());
}

Result<EnvironmentForRun> open_environment_for_run(const std::string& dir, std::string_view text, const SandboxHost& host) {
  auto store = open_env_store(dir, host.drop ? std::optional<uid_t>(host.uid) : std::nullopt);
  if (!store) return std::unexpected(store.error());
  auto named = find_stored_environment(*store, text);
  if (!named) return std::unexpected(named.error());
  auto use = store->use(named->digest);
  if (!use) return std::unexpected(use.error());
  auto verified = store->open_verified(named->digest);
  if (!verified) return std::unexpected(verified.error());
  return EnvironmentForRun{std::move(*verified), std::move(*use)};
}

Result<std::map<std::string, std::string>> parse_env_assignments(const std::vector<std::string>& words) {
  std::map<std::string, std::string> out;
  for (const auto& w : words) {
    auto eq = w.find('=');
    if (eq == std::string::npos || eq == 0) return fail(Errc::invalid_argument, "--env " + w + ": want NAME=VALUE");
    if (!out.emplace(w.substr(0, eq), w.substr(eq + 1)).second) {
      return fail(Errc::invalid_argument, "--env " + w.substr(0, eq) + " is given twice");
    }
  }
  return out;
}

}  // namespace warden::cli
