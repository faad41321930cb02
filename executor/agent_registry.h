// Which agent runs each stage: a registry maps a stage `kind` to a factory, and binding a
// config makes one agent per stage (checking each stage's params as it goes). The kernel
// registers its own kinds next to the standard ones.
//
// Ownership: the registry owns its factories (and whatever they capture); bind() returns an
// AgentSet the caller owns, one agent per stage, independent of the registry afterwards.
// Threads: add() mutates an unguarded map, so fill a registry first, then share it; bind()
// and the other const calls are then safe from several threads. Errors: bind() fails with
// invalid_argument (or a factory's error) naming the stage — the config is wrong, and no
// agent of a failed binding survives.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/command_launcher.h"
#include "common/error.h"
#include "executor/pipeline_config.h"
#include "executor/stage.h"

namespace warden::executor {

struct AgentEnvironment {
  std::filesystem::path base_dir;  // the config's directory: command agents' relative paths start there
  // What command agents run through (a sandbox, in production); binding a config with a
  // command stage and no launcher fails.
  std::shared_ptr<CommandLauncher> launcher;
};

using AgentFactory =
    std::function<Result<std::unique_ptr<StageAgent>>(const PipelineConfig&, const StageSpec&, const AgentEnvironment&)>;
using AgentSet = std::vector<std::unique_ptr<StageAgent>>;  // indexed by StageId

class AgentRegistry {
 public:
  void add(std::string kind, AgentFactory factory) { factories_[std::move(kind)] = std::move(factory); }
  bool contains(const std::string& kind) const { return factories_.contains(kind); }
  std::vector<std::string> kinds() const;
  // One agent per stage; the first stage whose kind is unknown or whose params its factory
  // refuses fails the whole binding, naming the stage.
  Result<AgentSet> bind(const PipelineConfig& config, const AgentEnvironment& env) const;

 private:
  std::map<std::string, AgentFactory> factories_;
};

// "command" and the built-in stages (builtin_stages.h).
AgentRegistry standard_agents();

}  // namespace warden::executor
