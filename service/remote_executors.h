// The server's side of remote executors: for every run started with executor `remote`, the
// channel to its `warden build` child (executor/channel_proposer.h speaks the other end)
// and the remote executor attached to it, if any.
//
// The child asks for a proposal (or a replan) and waits, within its own deadline; this
// relays the request to the executor attached over Executor.Attach, or holds it until one
// attaches, and relays the executor's answer back with the executor's authenticated identity
// (recorded with the proposal). The kernel in the child re-checks everything the answer
// holds; nothing here decides anything.
//
// A run is served by one executor identity, named when it starts (its starter's, by default):
// only that identity (or an admin) may attach to it or answer its requests, so one executor's
// token cannot take over another's run, and a waiting label-only Attach never takes a run
// another identity serves. A request an attached executor holds is answered only over its
// stream.
//
// A disconnect while the executor holds a request is a failed attempt: the child is answered
// executor_failed at once and records it; the next attempt waits for an executor to attach
// again (the step's own deadline bounds that). Answers that do not name the request being
// waited for are dropped, so a late answer can never stand for a later attempt.
//
// Thread-safe: gRPC handler threads (Attach, Propose) and one reader thread per channel call
// in; mu_ guards every RemoteRun's state and the table. An Attachment is owned by its Attach
// handler, which detaches it before it returns.
#pragma once

#include <warden.grpc.pb.h>  // generated from proto/warden.proto

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/error.h"
#include "common/file.h"

namespace warden::service {

// One attached executor, as its Attach handler sees it: the messages to send it.
struct Attachment {
  std::string identity;                    // the authenticated caller
  bool admin = false;                      // it may serve any run
  std::deque<v1::KernelMessage> outbox;    // guarded by RemoteExecutors::mu_
  bool ended = false;                      // the run ended (RunEnded is queued last) or the server stops
};

class RemoteExecutors {
 public:
  RemoteExecutors() = default;
  ~RemoteExecutors();  // closes every channel and joins the readers
  RemoteExecutors(const RemoteExecutors&) = delete;
  RemoteExecutors& operator=(const RemoteExecutors&) = delete;

  // A new channel for a run started with executor remote:<label>, served by `served_by` (a
  // token name): returns the child's end and a ticket to name the run by once its id is known
  // (bind()).
  struct Opened {
    UniqueFd child_end;
    uint64_t ticket = 0;
  };
  Result<Opened> open(const std::string& label, const std::string& served_by);
  void bind(uint64_t ticket, const std::string& run_id);
  // A channel whose run never started: forgotten.
  void discard(uint64_t ticket);

  // Attaches `attachment` to the run `run_id`, or (run_id empty) to the next run with
  // `label` that has no executor and no other identity serving it, waiting for one until
  // `stop` or the server stops. not_found for an unknown run or one that is not remote,
  // already_exists when an executor is attached to it, failed_precondition when another
  // identity serves it. Returns the run id.
  Result<std::string> attach(Attachment& attachment, const std::string& run_id, const std::string& label,
                             const std::function<bool()>& cancelled);
  // The attached executor went away: a request it held is answered executor_failed.
  void detach(Attachment& attachment, const std::string& why);
  // Waits until `attachment` has messages or has ended (or `timeout`); moves them out and
  // says whether it has ended.
  std::vector<v1::KernelMessage> take(Attachment& attachment, std::chrono::milliseconds timeout, bool& ended);

  // An answer from `attachment`'s executor. Errors for the executor: failed_precondition-like
  // invalid_argument when it answers a request it was not given.
  Status answer(Attachment& attachment, const v1::ProposalAnswer& answer);

  // Propose's way in: answers the request the run `run_id` waits on when it is the proposal
  // for `step_id` attempt `attempt`. not_found: no such remote run; invalid_argument: the run
  // waits for another step or attempt, or for none; failed_precondition: another identity
  // serves the run, or the attached executor holds the request.
  Status answer_unary(const std::string& run_id, const std::string& step_id, uint32_t attempt,
                      const v1::Proposal& proposal, const std::string& identity, bool admin);

  // Ends every attachment (their streams close) and refuses new ones.
  void shutdown();

 private:
  struct Pending {
    std::string request_id;
    bool replan = false;
    std::string step_id;
    uint32_t attempt = 0;
    v1::KernelMessage message;    // what the executor is sent
    Attachment* sent_to = nullptr;
  };
  struct RemoteRun {
    uint64_t ticket = 0;
    std::string label;
    std::string run_id;           // once bound
    UniqueFd fd;                  // the server's end of the channel
    bool closed = false;          // the child closed its end: the run is over
    std::string served_by;        // the identity that serves it (see the class comment)
    Attachment* executor = nullptr;
    std::optional<Pending> pending;
    std::jthread reader;
  };

  void read_channel(RemoteRun& run);
  void on_line(RemoteRun& run, const std::string& line);     // mu_ held
  void send_to_child(RemoteRun& run, const std::string& line);  // mu_ held
  void offer_pending(RemoteRun& run);                           // mu_ held
  void answer_error(RemoteRun& run, const std::string& why, const std::string& identity);  // mu_ held
  RemoteRun* find(const std::string& run_id);                   // mu_ held
  // Whether `identity` may serve `run`.
  static bool may_serve(const RemoteRun& run, const std::string& identity, bool admin);  // mu_ held

  std::mutex mu_;
  std::condition_variable changed_;
  bool stopping_ = false;                                   // guarded by mu_
  uint64_t next_ticket_ = 1;                                // guarded by mu_
  std::map<uint64_t, std::unique_ptr<RemoteRun>> runs_;     // guarded by mu_
};

}  // namespace warden::service
