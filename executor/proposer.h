// The executor role of the build loop: something that reads a committed plan step and
// proposes a change for it, and learns from the kernel's refusals. Proposers live below the
// kernel, so they speak JSON: the step as the plan holds it, a context (the current content
// of the step's targets, the refusals so far, the attempt number), and an answer that is a
// canonical Diff JSON or a git patch. The kernel trusts none of it: it parses, re-hashes and
// checks every byte (kernel/judge/decide.h).
//
// Ownership and threads: the build loop borrows a Proposer for the whole build (the caller
// owns it and keeps it alive) and calls it from one thread, in order: propose, then learn
// for that proposal's refusal. Implementations need no locking for that use and should not
// be shared between concurrent builds. A merge-queue plan (kernel/build/merge_queue.h) asks for
// several steps at once from worker threads when concurrent() says propose() allows it;
// learn() and replan() still come from the build's thread. A Proposer writes nothing
// durable; whatever it answers is recorded by the kernel.
#pragma once

#include <chrono>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>

#include "common/canonical_json.h"
#include "common/command_launcher.h"
#include "common/error.h"
#include "common/refusal.h"

namespace warden::executor {

struct ProposalRequest {
  Json step;     // a BuildStep's JSON (kernel/plan/build_plan.h)
  // {"attempt": N, "plan_sha256": "...", "base_commit": "<hex>",
  //  "files": {path: {"sha256": "sha256:..", "content": "..."}}  (targets that exist now),
  //  "refusals": [RefusalReport JSON, oldest first]}
  Json context;
  std::chrono::milliseconds timeout{30'000};
  std::stop_token stop;  // the run was cancelled or the step's watchdog fired: give up now
};

class Proposer {
 public:
  virtual ~Proposer() = default;
  // "plan", "command:<cmd>": recorded with every proposal.
  virtual std::string name() const = 0;
  // How the executor's own program is confined (recorded with every proposal); none for an
  // executor that runs no program of its own (the plan executor).
  virtual std::optional<LaunchConfinement> confinement() const { return std::nullopt; }
  // The proposal's text: a Diff JSON or a patch. A Refusal means the executor produced
  // nothing to judge, and says why: executor_timeout (it ran out of the request's time) or
  // executor_failed (it did not start, crashed, exited non-zero or said nothing); the kernel
  // records it as the attempt's refusal, with that code.
  virtual Checked<std::string> propose(const ProposalRequest& request) = 0;
  // Who gave the answer (or the failure) the last propose() returned, as the transport
  // vouches for it: a remote executor's attached name. Valid right after propose() and until
  // the next call; nullopt when no one but this process's own program answered (every local
  // executor), or when no one answered at all. The kernel records it; it decides nothing.
  virtual std::optional<std::string> answered_by() const { return std::nullopt; }
  // Whether propose() may run on several threads at once (for different steps). When it
  // does, answered_by() must not depend on which call came last.
  virtual bool concurrent() const { return false; }
  // A refusal of this executor's last proposal for the refusal's step (RefusalReport JSON).
  virtual void learn(const Json& refusal) = 0;
  // A replacement plan (BuildPlan JSON text) after a step exhausted its retries. `request` is
  // {"plan": <the committed plan>, "failed_step": "<id>", "completed_steps": [...],
  //  "refusals": [...]}. An executor that cannot replan says so with an error.
  virtual Result<std::string> replan(const Json& request, std::chrono::milliseconds timeout) {
    (void)request;
    (void)timeout;
    return std::unexpected(Error{Errc::invalid_argument, "executor " + name() + " cannot replan"});
  }
};

}  // namespace warden::executor
