// The command executor: any external program (an AI agent, a script) as a proposer. It gets
// {"step": ..., "context": ...} (proposer.h) as one JSON object on stdin and answers with a
// Diff JSON or a git patch on stdout; exit status 0 means it answered. It runs under the
// step's deadline in its own process group, with a capped stdout, in `cwd`. It is not
// sandboxed: it proposes, it never writes the repository — what it says is checked like any
// other proposal.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "executor/proposer.h"

namespace warden::executor {

class CommandProposer final : public Proposer {
 public:
  // `command` runs through /bin/sh -c.
  CommandProposer(std::string command, std::filesystem::path cwd, std::vector<std::string> env);

  std::string name() const override { return "command:" + command_; }
  Result<std::string> propose(const ProposalRequest& request) override;
  void learn(const Json& refusal) override { (void)refusal; }  // the refusals travel in the context
  // Sends {"replan": request} on stdin; expects a BuildPlan JSON on stdout.
  Result<std::string> replan(const Json& request, std::chrono::milliseconds timeout) override;

 private:
  Result<std::string> ask(std::string input, std::chrono::milliseconds timeout, std::stop_token stop);

  std::string command_;
  std::filesystem::path cwd_;
  std::vector<std::string> env_;
};

}  // namespace warden::executor
