// ChannelRunner: the Runner (runner.h) whose checks run on the runners `warden serve` governs
// (remote machines enrolled in its fleet): a build child started with `--runner-channel FD`
// sends each run over a unix socket to the server, which queues it for an enrolled runner,
// checks what comes back, and relays it here. Nothing the server relays is taken on its word
// either: every result is held to its request and to this repository (check_remote_result) and
// its runner's signature is verified (verify_attestation) before the kernel sees it.
//
// Protocol (JSON Lines, both ways, as executor/channel_proposer.h):
//   kernel -> server  {"type":"run","request_id":"<id>","request":<RemoteRunRequest JSON>,
//                      "quorum":{"k":K,"n":N}}          ("quorum" only when N > 1)
//   server -> kernel  {"type":"result","request_id":"<id>","run_result":<RunResult JSON>,
//                      "bodies":{"sha256:<hex>":"<base64>",...},
//                      "attestations":[<ResultAttestation>,...]}
//                  or {"type":"error","request_id":"<id>","error":"<why>"}
// With a quorum, the server runs the request on N runners of distinct identities (tasks
// "<id>.q1" .. "<id>.qN") and answers once K returned the same deterministic result; the
// kernel takes it only with K valid signatures over it by distinct runners and identities.
//   kernel -> server  {"type":"cancel","request_id":"<id>"}   the kernel stopped waiting
//   kernel -> server  {"type":"end"}                            done (EOF says the same)
// Request ids are "<16 random hex digits>-<n>" and are the task ids the server queues (a
// quorum's: the id and ".q<i>"), so every attestation must name one of those. Lines for other ids (late answers) are skipped.
//
// There is no deadline beyond the request's stop: checks bound their own time, and a runner
// that disappears has its task run by another (the server's concern).
//
// Ownership: owns the socket, and a reader thread of its own that reads every line the
// server sends as it comes (so the server never blocks on a full socket, whoever waits) and
// hands each answer to the caller waiting for its request id; lines for no one waiting (late
// answers to requests given up, a second answer to one id) are dropped. Threads: run() may
// be called from several threads at once (a merge queue's jobs, kernel/build/merge_queue.h), each
// with a GitRepo of its own; sends are serialized. request.stop may be triggered from any
// thread. The destructor says goodbye and joins the reader.
#pragma once

#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include <cstdint>
#include <string>

#include "common/line_socket.h"
#include "runner/check/runner.h"
#include "runner/model/sandbox_profile.h"
#include "runner/workspace/tree_hash.h"

namespace warden {

class ChannelRunner final : public Runner {
 public:
  // Results hold captured outputs (base64 in the line): bounded well above the runner's caps.
  static constexpr size_t kMaxLineBytes = size_t{256} << 20;

  // `profile` is sent with every run; `host_independent` as RunnerOptions::kernel_release_in_toolchain off;
  // `environment`, when set, is where every run's checks run (runners fetch it by digest).
  ChannelRunner(UniqueFd socket, SandboxProfile profile, bool host_independent, RunnerQuorum quorum = {},
                std::optional<Digest> environment = std::nullopt);
  ~ChannelRunner() override;
  ChannelRunner(const ChannelRunner&) = delete;
  ChannelRunner& operator=(const ChannelRunner&) = delete;

  Checked<RunOutcome> run(GitRepo& repo, const RunRequest& request) override;
  bool concurrent() const override { return true; }

 private:
  Checked<RunOutcome> answer(GitRepo& repo, const RemoteRunRequest& sent, const std::string& id, const Json& line);
  // The reader thread: every line to its caller, until the socket closes or the stop.
  void read_lines(std::stop_token stop);
  // Sends a whole line under send_mu_, whoever stops meanwhile; false (with why) when the
  // socket is broken or the server took nothing for a minute.
  std::expected<void, LineFailure> send(const std::string& line);

  Json profile_;
  bool host_independent_;
  std::optional<Digest> environment_;
  RunnerQuorum quorum_;
  std::string nonce_;
  // Two ends of one socket (a dup): each LineSocket is a one-thread object, so the reader
  // thread has one and the senders, one at a time, the other.
  std::mutex send_mu_;
  LineSocket out_;  // guarded by send_mu_
  LineSocket in_;   // the reader thread's alone
  std::mutex mu_;   // guards the four below
  std::condition_variable_any cv_;
  uint64_t next_request_ = 1;
  std::set<std::string> waiting_;        // requests sent whose callers still wait
  std::map<std::string, Json> arrived_;  // their answers, read and not yet taken
  std::optional<std::string> closed_;    // why the reader stopped: every caller fails with it
  std::mutex memo_mu_;
  MemoryHashMemo memo_;  // guarded by memo_mu_: tree hashes re-derived, for the build's life
  std::jthread reader_;  // last: started once the state above exists, joined first
};

}  // namespace warden
