// A command agent: an external program as a stage. It receives
//   {"stage": NAME, "run": RUN_ID, "params": {...}, "envelope": <the envelope's JSON>}
// as canonical JSON on stdin and answers a StageResult as one JSON object on stdout (see
// stage_result.h), exiting 0. It runs in the config's directory with a fixed environment
// (PATH, HOME, LC_ALL=C.UTF-8, TZ=UTC, WARDEN_RUN_ID, WARDEN_STAGE, plus the stage's `env`),
// under the stage's timeout, with stdout capped at 1 MiB.
//
// Whatever goes wrong (cannot start, crash, non-zero exit, timeout, flood, an answer that is
// not a JSON object, has unknown fields or floating-point numbers) becomes a stage failure
// whose message says what happened; the executor routes it through error_next. LLM calls an
// answer reports are charged even when the answer reports an error.
#pragma once

#include <cstddef>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "executor/stage.h"

namespace warden::executor {

class CommandAgent final : public StageAgent {
 public:
  static constexpr size_t kMaxAnswerBytes = size_t{1} << 20;

  // Relative program paths containing a '/' resolve against `base_dir`, which is also the
  // working directory; bare names are looked up in PATH.
  CommandAgent(std::vector<std::string> argv, std::map<std::string, std::string> env, std::filesystem::path base_dir);
  StageResult run(const StageContext& context) override;

 private:
  StageResult run_command(const StageContext& context);

  std::vector<std::string> argv_;
  std::map<std::string, std::string> env_;
  std::filesystem::path base_dir_;
};

}  // namespace warden::executor
