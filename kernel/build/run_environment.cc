#include "kernel/build/run_environment.h"

#include "runner/environment/environment_recipe.h"

namespace warden::kernel {

Status settle_environment(Policy& policy, const std::string& named, const std::filesystem::path& relative_to,
                          const std::filesystem::path& env_store, const std::function<void(std::string_view)>& progress) {
  if (named.empty()) return {};
  auto resolved = resolve_environment(named, relative_to, env_store, progress);
  if (!resolved) return std::unexpected(resolved.error());
  if (policy.environment && *policy.environment != resolved->digest) {
    return fail(Errc::invalid_argument, "policy " + policy.name + " runs its checks in environment " + policy.environment->str() +
                                            "; " + named + " is " + resolved->digest.str());
  }
  policy.environment = resolved->digest;
  if (resolved->recipe_record.is_object()) policy.environment_recipe = std::move(resolved->recipe_record);
  return {};
}

}  // namespace warden::kernel
