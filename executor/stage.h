// The one interface every stage agent implements: built-in C++ stages (the kernel's own stages
// plug in here), command agents (external programs) and test doubles alike.
#pragma once

#include <chrono>
#include <functional>
#include <string_view>
#include <utility>

#include "executor/envelope.h"
#include "executor/pipeline_config.h"
#include "executor/stage_result.h"

namespace warden::executor {

// What a stage sees. The envelope is read-only and, when stages run in parallel, shared by
// all of them; a stage answers through its StageResult.
struct StageContext {
  std::string_view run_id;
  const StageSpec& spec;
  const Envelope& envelope;
  std::chrono::milliseconds timeout;  // the stage's time budget (enforced for command agents)
};

class StageAgent {
 public:
  virtual ~StageAgent() = default;
  // Runs the stage once. Called from worker threads when stages run in parallel, so an agent
  // must not share mutable state between calls without its own synchronization. A failure is
  // a StageResult with `error` set; exceptions are caught by the executor and treated alike.
  virtual StageResult run(const StageContext& context) = 0;
};

// A stage written as a function: built-in stages, the kernel's stages, tests.
class FunctionAgent final : public StageAgent {
 public:
  using Function = std::function<StageResult(const StageContext&)>;
  explicit FunctionAgent(Function fn) : fn_(std::move(fn)) {}
  StageResult run(const StageContext& context) override { return fn_(context); }

 private:
  Function fn_;
};

}  // namespace warden::executor
