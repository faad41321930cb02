// The command executor: any external program (an AI agent, a script) as a proposer. It gets
// {"step": ..., "context": ...} (proposer.h) as one JSON object on stdin and answers with a
// Diff JSON or a git patch on stdout; exit status 0 means it answered. CMD runs through
// /bin/sh -c under the step's deadline, with a capped output, through a CommandLauncher
// (common/command_launcher.h) — in production a sandbox of the executor's profile: an empty
// private working directory, the profile's fixed environment, and of the host only the
// files CMD names (its plain words that are existing files, absolute or relative to `dir`,
// the blueprint's folder), read-only. It proposes; it never sees the repository, the ledger
// or Warden's environment, and what it says is checked like any other proposal.
//
// Ownership: shares the launcher. Threads: as Proposer; propose() may run on several threads
// at once (each call launches a program of its own through the thread-safe launcher).
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/command_launcher.h"
#include "executor/proposer.h"

namespace warden::executor {

class CommandProposer final : public Proposer {
 public:
  static constexpr size_t kMaxAnswerBytes = size_t{16} << 20;

  CommandProposer(std::string command, std::filesystem::path dir, std::shared_ptr<CommandLauncher> launcher);

  std::string name() const override { return "command:" + command_; }
  std::optional<LaunchConfinement> confinement() const override { return launcher_->confinement(); }
  Checked<std::string> propose(const ProposalRequest& request) override;
  bool concurrent() const override { return true; }
  void learn(const Json& refusal) override { (void)refusal; }  // the refusals travel in the context
  // Sends {"replan": request} on stdin; expects a BuildPlan JSON on stdout.
  Result<std::string> replan(const Json& request, std::chrono::milliseconds timeout) override;

 private:
  // The program's answer; executor_timeout when it ran past `timeout`, else executor_failed
  // when it gave none.
  Checked<std::string> ask(std::string input, std::chrono::milliseconds timeout, std::stop_token stop);

  std::string command_;
  std::filesystem::path dir_;
  std::shared_ptr<CommandLauncher> launcher_;
};

// The words of a /bin/sh command that are plain: split at blanks, keeping only words made of
// characters the shell takes literally (letters, digits and . _ - + / @ % , : =), so a word
// is a path exactly when the shell would pass it as one.
std::vector<std::string> plain_shell_words(std::string_view command);

}  // namespace warden::executor
