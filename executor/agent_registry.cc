#include "executor/agent_registry.h"

#include "executor/builtin_stages.h"
#include "executor/command_agent.h"

namespace warden::executor {

std::vector<std::string> AgentRegistry::kinds() const {
  std::vector<std::string> out;
  for (const auto& [kind, factory] : factories_) out.push_back(kind);
  return out;
}

Result<AgentSet> AgentRegistry::bind(const PipelineConfig& config, const AgentEnvironment& env) const {
  AgentSet agents;
  agents.reserve(config.stages.size());
  for (const auto& spec : config.stages) {
    std::string where = "stages[" + std::to_string(spec.id) + "] (" + spec.name + ")";
    auto it = factories_.find(spec.kind);
    if (it == factories_.end()) {
      std::string known;
      for (const auto& k : kinds()) known += (known.empty() ? "" : ", ") + k;
      return fail(Errc::invalid_argument, where + ".kind: unknown stage kind \"" + spec.kind + "\" (known: " + known + ")");
    }
    auto agent = it->second(config, spec, env);
    if (!agent) return std::unexpected(agent.error().with_context(where));
    agents.push_back(std::move(*agent));
  }
  return agents;
}

AgentRegistry standard_agents() {
  AgentRegistry registry;
  registry.add("command", [](const PipelineConfig&, const StageSpec& spec, const AgentEnvironment& env)
                              -> Result<std::unique_ptr<StageAgent>> {
    if (!env.launcher) return fail(Errc::invalid_argument, "command stages need a launcher (none was given)");
    return std::make_unique<CommandAgent>(spec.command, spec.env, env.base_dir, env.launcher);
  });
  add_builtin_stages(registry);
  return registry;
}

}  // namespace warden::executor
