// warden.v1.Runners (proto/fleet.proto): the stream a runner keeps open to the kernel. The
// runner enrols with proof of its Ed25519 key over a fresh nonce, bound to the caller's token
// identity; the agent id is then the supervisor's, pinned to that identity and key; the
// runner's heartbeats reach the supervisor; and when the stream ends the agent is failed, so
// whatever it held goes back to the queue at once rather than when its heartbeats go stale.
// Between heartbeats it takes check tasks and answers them (RemoteRunners): the stream's
// messages are written by one writer thread per stream, from its Mailbox, and what the runner
// asks and answers is handled in order on one more (RunnerRequests), so its heartbeats are
// read while a batch is served or a result checked.
//
// Needs the runner role. Each stream holds one of the caller's StreamQuota shares.
// Thread-safe: each stream works on its own state and the Fleet, which is.
#pragma once

#include <fleet.grpc.pb.h>  // generated from proto/fleet.proto

#include "common/random_source.h"
#include "service/fleet.h"
#include "service/remote_runners.h"
#include "service/in_flight.h"
#include "service/stream_quota.h"
#include "service/tokens.h"

namespace warden::service {

class RunnersService final : public v1::Runners::Service {
 public:
  // Borrows everything; all must outlive it. `random` makes the enrolment nonces.
  RunnersService(Fleet& fleet, RemoteRunners& work, InFlight& in_flight, const TokenTable& tokens, StreamQuota& streams,
                 RandomSource& random)
      : fleet_(fleet), work_(work), in_flight_(in_flight), tokens_(tokens), streams_(streams), random_(random) {}

  grpc::Status Work(grpc::ServerContext* context,
                    grpc::ServerReaderWriter<v1::ServerMessage, v1::RunnerMessage>* stream) override;

 private:
  Fleet& fleet_;
  RemoteRunners& work_;
  InFlight& in_flight_;
  const TokenTable& tokens_;
  StreamQuota& streams_;
  std::mutex random_mu_;
  RandomSource& random_;  // guarded by random_mu_
};

}  // namespace warden::service
