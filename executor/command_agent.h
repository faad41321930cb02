// A command agent: an external program as a stage. It receives
//   {"stage": NAME, "run": RUN_ID, "params": {...}, "envelope": <the envelope's JSON>}
// as canonical JSON on stdin and answers a StageResult as one JSON object on stdout (see
// stage_result.h), exiting 0. It runs through a CommandLauncher (common/command_launcher.h)
// — in production a sandbox of the executor's profile: an empty private working directory,
// of the host only the files its argv names (absolute, or relative to the config's
// directory, where they are bound so relative names still resolve), read-only — with a
// fixed environment (the launcher's, plus WARDEN_RUN_ID, WARDEN_STAGE and the stage's
// `env`), under the stage's timeout, with its output capped at 1 MiB.
//
// Whatever goes wrong (cannot start, crash, non-zero exit, timeout, flood, an answer that is
// not a JSON object, has unknown fields or floating-point numbers, a launcher that refuses to
// start anything) becomes a stage failure whose message says what happened; the executor
// routes it through error_next. LLM calls an answer reports are charged even when the answer
// reports an error. Ownership: shares the launcher; run() may be called from several threads.
#pragma once

#include <cstddef>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/command_launcher.h"
#include "executor/stage.h"

namespace warden::executor {

class CommandAgent final : public StageAgent {
 public:
  static constexpr size_t kMaxAnswerBytes = size_t{1} << 20;

  // Relative paths in argv are relative to `base_dir`; a bare program name is looked up in
  // the launcher's PATH.
  CommandAgent(std::vector<std::string> argv, std::map<std::string, std::string> env, std::filesystem::path base_dir,
               std::shared_ptr<CommandLauncher> launcher);
  StageResult run(const StageContext& context) override;

 private:
  StageResult run_command(const StageContext& context);

  std::vector<std::string> argv_;
  std::map<std::string, std::string> env_;
  std::filesystem::path base_dir_;
  std::shared_ptr<CommandLauncher> launcher_;
};

}  // namespace warden::executor
