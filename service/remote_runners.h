// The server's side of remote runners doing check work: for every run started with checks_on
// "runners", the channel to its `warden build` child (runner/check/channel_runner.h speaks the
// other end), the tasks it queued in the fleet's store, and each enrolled runner's stream while
// it holds one of them.
//
// A run request from the child becomes a task of this server's runner kind
// (Fleet::runner_task_kind: only runners connected here take it; its id the request's id, its
// payload the RemoteRunRequest); the supervisor assigns it to an idle runner (Fleet's loop
// calls dispatch()), and the CheckTask goes out on that runner's stream with a fresh nonce.
// While the runner holds the claim it may fetch the objects of the task's two trees, and only
// those (each tree served makes its entries fetchable). Its answer is checked here before the
// child sees it: the signature by the key the runner enrolled with, then everything
// check_remote_result re-derives from the run's repository. A result that fails is refused:
// the runner is failed with the reason (a fleet event, so the ledger names it), and the task
// goes back to the queue for another runner. Only after the store acked the claim is a result
// passed on, so one task yields one result. A runner's own failure report fails it too, and
// after kMaxAttempts claims of one task the child is told the runners could not run it.
//
// The kernel in the child checks the relayed result again (runner/check/channel_runner.h): this
// side keeps forged results from reaching it and from costing the run its step.
//
// Thread-safe: gRPC handlers (RunnersService::Work), one reader thread per channel and the
// fleet's loop call in; mu_ guards the channels, the tasks and every Mailbox's state.
#pragma once

#include <fleet.grpc.pb.h>  // generated from proto/fleet.proto

#include <chrono>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/error.h"
#include "common/file.h"
#include "common/random_source.h"
#include "runner/check/remote_run.h"
#include "runner/workspace/tree_hash.h"
#include "service/fleet.h"

namespace warden::service {

// One runner stream, as RemoteRunners sees it: the messages to send it, and the task it holds.
// Owned by the stream's handler, which attaches it once enrolled and detaches it before it
// returns. Every field is guarded by RemoteRunners::mu_.
struct Mailbox {
  std::string agent_id;
  grpc::ServerContext* context = nullptr;  // its call: cancelled when the runner will not read
  std::string owner;  // the token identity that enrolled it
  std::string key;    // its pinned Ed25519 public key, hex
  std::deque<v1::ServerMessage> outbox;
  bool closed = false;  // the stream is ending: nothing more is queued
  std::string cut;      // why RemoteRunners cancelled the stream, when it did

  struct Held {
    store::ClaimRef claim;
    uint32_t attempt = 0;
    std::string nonce;  // hex
    RemoteRunRequest request;
    std::filesystem::path repo;
    std::set<std::string> fetchable;  // object ids the runner may fetch
    // fetchable holds every object the task's trees reach: a runner whose store kept a tree
    // but lost what it holds (killed while fetching) may fetch those entries directly.
    bool reached_all = false;
    // The file names (sha256 hex, "x" when executable) of the environment the task runs in,
    // once the runner first fetched from it: read from the manifest once, not per batch.
    std::shared_ptr<const std::set<std::string>> environment_files;
    // Past this the claim is not renewed (it lapses and the task goes elsewhere): the checks'
    // own time limits and a budget for fetching, so a runner that heartbeats and never
    // answers cannot keep a task.
    std::chrono::steady_clock::time_point renew_until;
  };
  std::optional<Held> held;
};

class RemoteRunners {
 public:
  static constexpr uint32_t kMaxAttempts = 3;
  static constexpr size_t kMaxFetchIds = kMaxFetchObjects;  // runner/check/remote_run.h
  static constexpr size_t kBatchBytes = size_t{4} << 20;
  // Messages a runner's stream may have waiting: a runner that asks and does not read is cut off.
  static constexpr size_t kMaxOutbox = 8;

  // Borrows the fleet and the random source (the claims' nonces); both must outlive it.
  RemoteRunners(Fleet& fleet, RandomSource& random);
  ~RemoteRunners();  // closes every channel and joins the readers
  RemoteRunners(const RemoteRunners&) = delete;
  RemoteRunners& operator=(const RemoteRunners&) = delete;

  // A channel for a run that builds in `repo`: returns the child's end.
  Result<UniqueFd> open(std::filesystem::path repo);
  // Closes every channel (the server stops): the children's runs fail their checks.
  void shutdown();

  // Fleet's loop: each runner task assigned to a runner whose stream is here goes out on it.
  void dispatch(const std::vector<supervisor::Assignment>& assignments);
  // Fleet's loop: these tasks were expired unrun (Fleet::sweep); a build still waiting for one
  // is told.
  void expired(const std::vector<store::Task>& tasks);

  // A runner stream, once enrolled, until it ends. detach() gives back nothing: the stream's
  // end fails the agent, which returns its task to the queue (RunnersService).
  void attach(Mailbox& mailbox);
  void detach(Mailbox& mailbox);
  // Waits until `mailbox` has a message to send (true) or is closed (false).
  bool next(Mailbox& mailbox, v1::ServerMessage& out);
  // Ends the mailbox's stream for `why` (cut_reason() says it): nothing more is sent on it.
  void cut_off(Mailbox& mailbox, const std::string& why);
  // Why this side cancelled the mailbox's stream, or empty.
  std::string cut_reason(Mailbox& mailbox);
  // The runner's messages. A result or report for a claim it no longer holds is dropped.
  void fetch(Mailbox& mailbox, const v1::FetchObjects& request);
  // The environment the runner's task names, from this host's store (EnvironmentStore's
  // default: where the builds this server runs keep theirs): its record and manifest, or the
  // files of it asked for. Nothing outside that environment is served.
  void fetch_environment(Mailbox& mailbox, const v1::FetchEnvironment& request);
  void complete(Mailbox& mailbox, const v1::TaskResult& result);
  void failed(Mailbox& mailbox, const v1::TaskFailed& report);
  // A heartbeat while it holds a task keeps the claim's lease.
  void renew(Mailbox& mailbox);
  // A build waits for a run of checks and no runner is connected here to take it: the
  // server is not ready for such builds (health).
  bool starved();

 private:
  struct Channel;
  // One request run on n runners of distinct identities (RunnerQuorum): its members' results
  // as they come, until k agree.
  struct Quorum {
    RunnerQuorum rule;
    std::string request_id;
    struct Vote {
      std::string agent_id;
      Digest digest;
      Json run_result, bodies, attestation;
    };
    std::vector<Vote> votes;
    std::optional<Digest> decided;  // the result k agreed on
  };
  struct Pending {
    std::shared_ptr<Channel> channel;  // null once nobody waits for it (the child, or its quorum is settled)
    RemoteRunRequest request;
    std::shared_ptr<Quorum> quorum;  // a quorum's member
  };
  // What a settled task leaves to do once mu_ is let go: a line for the child, runners to fail.
  struct Settled {
    std::shared_ptr<Channel> tell;
    Json line;
    std::vector<std::pair<std::string, std::string>> fail;  // agent id, reason
  };

  void read_channel(std::shared_ptr<Channel> channel);
  // Queues `request` (one task, or a quorum's n, each for another identity's runners).
  Status queue(const std::shared_ptr<Channel>& channel, const std::string& id, const RemoteRunRequest& request,
               const RunnerQuorum& rule);
  // Sends the child a line; one that cannot be sent whole shuts the channel down.
  static void send(Channel& channel, const Json& line);
  // A member's result, verified and delivered: the child's answer when it settles the request.
  Settled vote_locked(Pending pending, Quorum::Vote vote);
  // Nobody waits for `quorum`'s members any more.
  void close_quorum_locked(const std::shared_ptr<Quorum>& quorum);
  void finish(Settled settled);
  void post_locked(Mailbox& mailbox, v1::ServerMessage message);
  void cut_off_locked(Mailbox& mailbox, const std::string& why);
  // Acks a claim whose task nobody waits for any more, unrun: a withdrawn fleet event naming why.
  void drop_claim(const std::string& agent_id, const store::ClaimRef& claim, const std::string& why);
  std::string nonce_hex();

  Fleet& fleet_;
  std::mutex random_mu_;
  RandomSource& random_;  // guarded by random_mu_

  std::mutex mu_;
  std::condition_variable cv_;                      // a mailbox got a message or closed
  std::vector<std::shared_ptr<Channel>> channels_;  // guarded by mu_; reaped once their reader ends
  std::map<std::string, Pending> pending_;          // guarded by mu_: by task id
  std::map<std::string, Mailbox*> mailboxes_;       // guarded by mu_: by agent id
  bool stopping_ = false;                           // guarded by mu_
  MemoryHashMemo memo_;                             // guarded by memo_mu_
  std::mutex memo_mu_;
};

}  // namespace warden::service
