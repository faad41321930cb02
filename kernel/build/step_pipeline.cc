#include "kernel/build/step_pipeline.h"

#include <algorithm>

namespace warden::kernel {

Result<executor::PipelineConfig> step_pipeline_config(int64_t max_retries) {
  const int64_t retries = std::max<int64_t>(max_retries, 1);
  auto stage = [](const char* name, const char* next) {
    return Json{{"name", name}, {"kind", "kernel"}, {"default_next", next}};
  };
  Json verify = stage("verify", retries > 1 ? "propose" : "end");
  verify["routing"] = Json::array({{{"when", {{"field", "accepted"}, {"op", "equals"}, {"value", true}}}, {"next", "commit"}}});
  Json config = {
      {"name", "warden-build-step"},
      {"description", "propose -> run -> verify -> commit, or back to propose with the refusal"},
      {"stages", Json::array({stage("propose", "run"), stage("run", "verify"), verify, stage("commit", "end")})},
      {"edge_limits", Json::array({{{"from", "verify"}, {"to", "propose"}, {"max_count", retries - 1}}})},
      {"max_iterations", retries + 1},
      {"max_llm_calls", 1000000},
      {"max_agent_hops", 4 * retries + 1},
      {"default_timeout_seconds", 3600},
  };
  return executor::PipelineConfig::parse(config);
}

}  // namespace warden::kernel
