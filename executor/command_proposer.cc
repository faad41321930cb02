#include "executor/command_proposer.h"

#include <cctype>

namespace warden::executor {

std::vector<std::string> plain_shell_words(std::string_view command) {
  auto literal = [](unsigned char c) { return std::isalnum(c) || std::string_view("._-+/@%,:=").find(static_cast<char>(c)) != std::string_view::npos; };
  std::vector<std::string> words;
  size_t i = 0;
  while (i < command.size()) {
    while (i < command.size() && (command[i] == ' ' || command[i] == '\t' || command[i] == '\n')) ++i;
    size_t start = i;
    bool plain = true;
    while (i < command.size() && command[i] != ' ' && command[i] != '\t' && command[i] != '\n') {
      plain = plain && literal(static_cast<unsigned char>(command[i]));
      ++i;
    }
    if (i > start && plain) words.emplace_back(command.substr(start, i - start));
  }
  return words;
}

CommandProposer::CommandProposer(std::string command, std::filesystem::path dir, std::shared_ptr<CommandLauncher> launcher)
    : command_(std::move(command)), dir_(std::move(dir)), launcher_(std::move(launcher)) {}

Checked<std::string> CommandProposer::propose(const ProposalRequest& request) {
  return ask(Json{{"step", request.step}, {"context", request.context}}.dump() + "\n", request.timeout, request.stop);
}

Result<std::string> CommandProposer::replan(const Json& request, std::chrono::milliseconds timeout) {
  auto answer = ask(Json{{"replan", request}}.dump() + "\n", timeout, {});
  if (!answer) {
    const Errc code = answer.error().code == RefusalCode::executor_timeout ? Errc::limit_exceeded : Errc::invalid_argument;
    return std::unexpected(Error{code, answer.error().detail});
  }
  return std::move(*answer);
}

Checked<std::string> CommandProposer::ask(std::string input, std::chrono::milliseconds timeout, std::stop_token stop) {
  LaunchRequest spec;
  spec.argv = {"/bin/sh", "-c", command_};
  spec.dir = dir_;
  spec.files = plain_shell_words(command_);
  spec.stdin_data = std::move(input);
  spec.timeout = timeout;
  spec.stop = std::move(stop);
  spec.max_output = kMaxAnswerBytes;
  auto ran = launcher_->launch(spec);
  if (!ran) return refuse(RefusalCode::executor_failed, "", ran.error().with_context("executor " + name()).message);
  // The executor's last words, as valid UTF-8 whatever bytes it wrote: they end up in the
  // ledger, whose records are canonical JSON.
  std::string tail;
  for (unsigned char c : ran->err.size() > 512 ? ran->err.substr(ran->err.size() - 512) : ran->err) {
    tail += c < 0x80 && (c >= 0x20 || c == '\n' || c == '\t') ? static_cast<char>(c) : '?';
  }
  switch (ran->ending) {
    case SubprocessResult::Ending::timed_out:
      return refuse(RefusalCode::executor_timeout, "", "executor timed out after " + std::to_string(timeout.count()) + " ms");
    case SubprocessResult::Ending::stdout_overflow:
      return refuse(RefusalCode::executor_failed, "", "executor wrote more than 16 MiB");
    case SubprocessResult::Ending::signaled:
      return refuse(RefusalCode::executor_failed, "", "executor killed by signal " + std::to_string(ran->signal) + ": " + tail);
    case SubprocessResult::Ending::exited:
      break;
  }
  if (ran->exit_code != 0) {
    return refuse(RefusalCode::executor_failed, "", "executor exited with status " + std::to_string(ran->exit_code) + ": " + tail);
  }
  if (ran->out.empty()) return refuse(RefusalCode::executor_failed, "", "executor proposed nothing");
  return std::move(ran->out);
}

}  // namespace warden::executor
