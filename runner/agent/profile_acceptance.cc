#include "runner/agent/profile_acceptance.h"

#include <algorithm>

namespace warden::agent {

namespace fs = std::filesystem;

Status acceptable_profile(const SandboxProfile& profile, const fs::path& state_dir, bool allow_network) {
  if (profile.network && !allow_network) {
    return fail(Errc::failed_precondition, "the task's sandbox profile " + profile.name +
                                               " has the network on; this runner was not started with --allow-network");
  }
  std::error_code ec;
  const fs::path state = fs::weakly_canonical(state_dir, ec);
  auto touches = [&](const std::string& host) {
    const fs::path p = fs::weakly_canonical(host, ec);
    auto within = [](const fs::path& inner, const fs::path& outer) {
      auto [o, i] = std::mismatch(outer.begin(), outer.end(), inner.begin(), inner.end());
      return o == outer.end();
    };
    return within(state, p) || within(p, state);
  };
  for (const BindMount& b : profile.ro_binds) {
    if (touches(b.src)) return fail(Errc::failed_precondition, "the task's sandbox profile binds " + b.src + ", which holds the runner's state");
  }
  for (const std::string& t : profile.toolchain) {
    if (touches(t)) return fail(Errc::failed_precondition, "the task's sandbox profile reads " + t + ", in the runner's state");
  }
  return {};
}

}  // namespace warden::agent
