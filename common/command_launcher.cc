#include "common/command_launcher.h"

#include "common/json_reader.h"

namespace warden {

Json LaunchConfinement::to_json() const {
  return {{"profile", profile}, {"profile_sha256", profile_sha256.str()}, {"network", network}};
}

Result<LaunchConfinement> LaunchConfinement::from_json(const Json& json, std::string_view where) {
  JsonReader r(json, std::string(where));
  LaunchConfinement c;
  r.string("profile", c.profile);
  if (r.ok() && c.profile.empty()) r.fail("profile", "must not be empty");
  r.digest("profile_sha256", c.profile_sha256);
  r.boolean("network", c.network);
  if (Status st = r.finish(); !st) return std::unexpected(st.error());
  return c;
}

}  // namespace warden
