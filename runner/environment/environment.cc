#include "runner/environment/environment.h"

#include "common/json_reader.h"
#include "runner/model/sandbox_profile.h"

namespace warden {

Digest environment_digest(const Digest& tree, const std::map<std::string, std::string>& env) {
  Json j = {{"format", kEnvironmentFormat}, {"tree", tree.str()}, {"env", env}};
  return sha256(canonicalize(j).value());
}

bool reserved_environment_variable(std::string_view name) {
  for (std::string_view r : kRequiredEnv) {
    if (name == r) return true;
  }
  return name.starts_with("WARDEN_");
}

Json Environment::identity() const { return {{"digest", digest.str()}, {"tree", tree.str()}, {"env", env}}; }

Json Environment::to_json() const {
  Json j = identity();
  j["format"] = kEnvironmentFormat;
  j["files"] = files;
  j["bytes"] = bytes;
  j["created_ms"] = created_ms;
  j["source"] = source;
  return j;
}

Result<Environment> Environment::from_json(const Json& json) {
  if (!json.is_object()) return std::unexpected(Error{Errc::corrupt, "environment record: not an object"});
  Environment e;
  auto digest = [&](const char* key, Digest& out) -> Status {
    const Json* v = json.contains(key) ? &json[key] : nullptr;
    if (!v || !v->is_string()) return std::unexpected(Error{Errc::corrupt, std::string("environment record: no ") + key});
    auto d = Digest::parse(v->get<std::string>());
    if (!d) return std::unexpected(Error{Errc::corrupt, std::string("environment record: bad ") + key});
    out = *d;
    return {};
  };
  if (Status s = digest("digest", e.digest); !s) return std::unexpected(s.error());
  if (Status s = digest("tree", e.tree); !s) return std::unexpected(s.error());
  if (json.contains("env")) {
    if (!json["env"].is_object()) return std::unexpected(Error{Errc::corrupt, "environment record: env is not an object"});
    for (const auto& [k, v] : json["env"].items()) {
      if (!v.is_string()) return std::unexpected(Error{Errc::corrupt, "environment record: env." + k + " is not a string"});
      e.env[k] = v.get<std::string>();
    }
  }
  if (environment_digest(e.tree, e.env) != e.digest) {
    return std::unexpected(Error{Errc::corrupt, "environment record: its digest is not the digest of its tree and variables"});
  }
  if (json.contains("files") && json["files"].is_number_unsigned()) e.files = json["files"].get<uint64_t>();
  if (json.contains("bytes") && json["bytes"].is_number_unsigned()) e.bytes = json["bytes"].get<uint64_t>();
  if (json.contains("created_ms") && json["created_ms"].is_number_integer()) e.created_ms = json["created_ms"].get<int64_t>();
  if (json.contains("source") && json["source"].is_object()) e.source = json["source"];
  return e;
}

}  // namespace warden
