#include "executor/command_agent.h"

#include <signal.h>

#include <cstring>
#include <utility>

#include "common/canonical_json.h"

namespace warden::executor {
namespace {

constexpr size_t kStderrInMessage = 500;
constexpr size_t kMaxMessage = 4096;

// An agent's bytes (stderr, a parse error quoting its stdout, its own error text) as UTF-8 a
// record can hold: invalid sequences become U+FFFD, and at most `max` bytes are kept.
std::string printable(std::string_view bytes, size_t max) {
  std::string out;
  for (size_t i = 0; i < bytes.size();) {
    auto c = static_cast<unsigned char>(bytes[i]);
    size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
    bool valid = len > 0 && i + len <= bytes.size() && is_valid_utf8(bytes.substr(i, len));
    std::string_view piece = valid ? bytes.substr(i, len) : "\xEF\xBF\xBD";
    if (out.size() + piece.size() > max) {
      out += "...";
      break;
    }
    out += piece;
    i += valid ? len : 1;
  }
  return out;
}

// The end of what the program said on stderr, for failure messages.
std::string stderr_tail(const SubprocessResult& r) {
  std::string_view err = r.err;
  while (!err.empty() && (err.back() == '\n' || err.back() == ' ')) err.remove_suffix(1);
  if (err.empty()) return "";
  bool cut = err.size() > kStderrInMessage || r.err_truncated;
  if (err.size() > kStderrInMessage) err = err.substr(err.size() - kStderrInMessage);
  return std::string("; stderr: ") + (cut ? "..." : "") + printable(err, kStderrInMessage + 3 * 4);
}

std::string signal_name(int sig) {
  const char* abbrev = ::sigabbrev_np(sig);
  return std::to_string(sig) + (abbrev ? std::string(" (SIG") + abbrev + ")" : "");
}

}  // namespace

CommandAgent::CommandAgent(std::vector<std::string> argv, std::map<std::string, std::string> env,
                           std::filesystem::path base_dir, std::shared_ptr<CommandLauncher> launcher)
    : argv_(std::move(argv)), env_(std::move(env)), base_dir_(std::move(base_dir)), launcher_(std::move(launcher)) {}

StageResult CommandAgent::run(const StageContext& ctx) {
  StageResult result = run_command(ctx);
  if (result.error) *result.error = printable(*result.error, kMaxMessage);
  return result;
}

StageResult CommandAgent::run_command(const StageContext& ctx) {
  const std::string who = "command " + argv_.front();
  Json request{{"stage", ctx.spec.name},
               {"run", ctx.run_id},
               {"params", ctx.spec.params},
               {"envelope", envelope_to_json(ctx.envelope)}};
  LaunchRequest spec;
  spec.argv = argv_;
  spec.dir = base_dir_;
  spec.files = argv_;
  auto input = canonicalize(request);
  if (!input) return StageResult::failure(who + ": cannot encode the envelope: " + input.error().message);
  spec.stdin_data = std::move(*input);
  spec.env = {{"WARDEN_RUN_ID", std::string(ctx.run_id)}, {"WARDEN_STAGE", ctx.spec.name}};
  for (const auto& [k, v] : env_) spec.env[k] = v;
  spec.timeout = ctx.timeout;
  spec.max_output = kMaxAnswerBytes;

  auto ran = launcher_->launch(spec);
  if (!ran) return StageResult::failure(who + ": " + ran.error().message);
  const SubprocessResult& r = *ran;
  using Ending = SubprocessResult::Ending;
  switch (r.ending) {
    case Ending::timed_out:
      return StageResult::failure(who + ": timed out after " + std::to_string(ctx.timeout.count()) +
                                  " ms; it was killed with every process it started" + stderr_tail(r));
    case Ending::stdout_overflow:
      return StageResult::failure(who + ": wrote more than " + std::to_string(kMaxAnswerBytes) +
                                  " bytes of output; it was killed with every process it started");
    case Ending::signaled:
      return StageResult::failure(who + ": killed by signal " + signal_name(r.signal) + stderr_tail(r));
    case Ending::exited: break;
  }
  auto answer = parse_json(r.out, "the answer on stdout");
  if (r.exit_code != 0) {
    // A failing agent's LLM calls still count against the budget when it says how many.
    int64_t calls = 0;
    if (answer && answer->is_object()) {
      if (auto parsed = stage_result_from_json(*answer, "answer")) calls = parsed->llm_calls;
    }
    return StageResult::failure(who + ": exited with status " + std::to_string(r.exit_code) + stderr_tail(r), calls);
  }
  if (r.out.find_first_not_of(" \t\r\n") == std::string::npos) {
    return StageResult::failure(who + ": exited 0 without an answer (expected a JSON object on stdout)" + stderr_tail(r));
  }
  if (!answer) return StageResult::failure(who + ": answered something that is not JSON: " + answer.error().message);
  auto result = stage_result_from_json(*answer, "answer");
  if (!result) return StageResult::failure(who + ": invalid answer: " + result.error().message);
  return std::move(*result);
}

}  // namespace warden::executor
