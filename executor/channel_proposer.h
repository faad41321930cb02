// The remote executor, kernel side: a proposer that asks the process at the other end of a
// connected unix stream socket (in production `warden-grpc serve`, which relays each request
// to an executor attached over gRPC and relays its answer back). It runs no program here.
//
// Protocol (JSON Lines: one JSON object per line, UTF-8, ending in "\n", both ways):
//
//   kernel -> server  {"type":"propose","request_id":"<id>","request":{"step":...,"context":...},
//                      "timeout_ms":N}
//       "request" is exactly the object a command executor reads on stdin (command_proposer.h,
//       proposer.h); N is how long the kernel waits for the answer, in milliseconds.
//   server -> kernel  {"type":"answer","request_id":"<id>","proposal":"<Diff JSON or patch text>",
//                      "executor_identity":"<name>"}
//                  or {"type":"answer","request_id":"<id>","error":"<why>",
//                      "code":"executor_failed"|"executor_timeout","executor_identity":"<name>"}
//       "executor_identity" is optional in both (absent: no one to name, e.g. none attached);
//       when present it is a non-empty string of at most kMaxIdentityBytes bytes; a proposal's
//       (or its failure's) is recorded in the ledger with the attempt (answered_by()), also
//       when the rest of that answer is malformed (it names who sent the bad answer). "code"
//       is optional with "error" (default executor_failed).
//   kernel -> server  {"type":"learn","refusal":<RefusalReport JSON>}           (no answer)
//   kernel -> server  {"type":"replan","request_id":"<id>","request":<replan request, proposer.h>,
//                      "timeout_ms":N}
//   server -> kernel  {"type":"answer","request_id":"<id>","plan":"<BuildPlan JSON text>",
//                      "executor_identity":"<name>"} or an error answer as above.
//   kernel -> server  {"type":"end"}  the build loop is done with the proposer (sent when the
//                      proposer is destroyed, if the socket takes it at once; the server must
//                      also treat EOF as the end).
//
// Request ids are unique for the proposer's life and unguessable ("<16 random hex digits>-<n>",
// n counting from 1; the server treats them as opaque): an answer written before its request
// was sent cannot carry its id. At most one request is outstanding: the kernel sends one,
// then reads lines until an answer carries its id. A line that is an answer to any other id
// (a late answer to a request that timed out) is read and ignored. Any other line fails the
// outstanding request with executor_failed saying why: not JSON, not an object, a "type"
// other than "answer", a missing or mistyped field, an unknown code, an answer with neither
// or both of proposal/plan and error, an empty proposal. The kernel may close the socket at
// any time (it was stopped, or it is done); the server then drops what is outstanding.
//
// The kernel's own lines are not bounded by max_line_bytes: a request carries the step's
// target files (context.files), so the server must take lines of any length from it.
//
// Failures: the wait honours request.timeout (executor_timeout; the channel stays usable and
// the late answer is ignored when it comes) and request.stop (returns at once with
// executor_timeout saying it was stopped; a request already stopped is not sent). EOF or a
// read or write error: executor_failed "the executor channel closed", and every later request
// fails so at once. A line longer than the bound (max_line_bytes, not counting the "\n"):
// executor_failed naming the bound; no more than the bound (plus one byte) is ever buffered,
// and since the rest of that line cannot be framed the channel is closed for every later
// request too.
//
// Ownership: owns the socket (closes it on destruction). Threads: as Proposer (one build, one
// thread); request.stop may be triggered from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <stop_token>
#include <string>

#include "common/file.h"
#include "common/line_socket.h"
#include "executor/proposer.h"

namespace warden::executor {

class ChannelProposer final : public Proposer {
 public:
  // The ledger's default bound on a record's payload: no answer larger could be recorded.
  static constexpr size_t kDefaultMaxLineBytes = size_t{1} << 20;
  static constexpr size_t kMaxIdentityBytes = 256;

  // `label` names the executor in the ledger ("remote:<label>"); `socket` is a connected
  // SOCK_STREAM unix socket, now owned by the proposer.
  ChannelProposer(std::string label, UniqueFd socket, size_t max_line_bytes = kDefaultMaxLineBytes);
  ~ChannelProposer() override;
  ChannelProposer(const ChannelProposer&) = delete;
  ChannelProposer& operator=(const ChannelProposer&) = delete;

  std::string name() const override { return "remote:" + label_; }
  Checked<std::string> propose(const ProposalRequest& request) override;
  std::optional<std::string> answered_by() const override { return answered_by_; }
  // Sends a learn line; a channel that fails here fails the next request.
  void learn(const Json& refusal) override;
  // An error answer, or the channel failing, is Errc::limit_exceeded for a timeout and
  // Errc::invalid_argument otherwise (as CommandProposer::replan).
  Result<std::string> replan(const Json& request, std::chrono::milliseconds timeout) override;

 private:
  // Sends `type` with `request` under a fresh id and waits for the answer's `field` string
  // ("proposal" or "plan"). Sets answered_by_ from the answer.
  Checked<std::string> ask(std::string_view type, std::string_view field, const Json& request,
                           std::chrono::milliseconds timeout, std::stop_token stop);

  std::string label_;
  LineSocket socket_;
  std::string nonce_;  // the random half of every request id
  uint64_t next_request_ = 1;
  std::optional<std::string> answered_by_;
};

}  // namespace warden::executor
