// warden.v1.Pipeline: state-machine runs (executor/) over gRPC. Run and Resume are the CLI's
// `warden pipeline run|resume` in a child process over the server's ledger, answered when
// the run ends or pauses on an interrupt; Watch streams a run's events from its records.
//
// Roles: Run and Resume need executor, and admin when the config has a command stage (a
// program of the caller's choosing run on this host, in the executor sandbox); Watch needs
// observer. Thread-safe: every call works on its own request and the shared ledger.
#pragma once

#include <warden.grpc.pb.h>  // generated from proto/warden.proto

#include <filesystem>

#include "service/in_flight.h"
#include "service/shared_ledger.h"
#include "service/stream_quota.h"
#include "service/tokens.h"

namespace warden::service {

class PipelineService final : public v1::Pipeline::Service {
 public:
  // Borrows everything; all must outlive it. Configs are kept under state_dir/pipelines.
  PipelineService(std::filesystem::path state_dir, SharedLedger& ledger, InFlight& in_flight, const TokenTable& tokens,
                  StreamQuota& streams);

  grpc::Status Run(grpc::ServerContext* context, const v1::PipelineRunRequest*, v1::PipelineRunResponse*) override;
  grpc::Status Resume(grpc::ServerContext* context, const v1::PipelineResumeRequest*, v1::PipelineRunResponse*) override;
  // The run's events, in the one vocabulary of every stream (kernel/record/event_stream.h):
  // stage_started, stage_completed, stage_failed, interrupt_raised, transition,
  // checkpoint_created, pipeline_completed, exactly as `warden pipeline run --json` printed
  // them (event ids included), read back from the run's records with ledger_seq >= from_seq
  // (service/pipeline_events.h). A step's record shows several events, which share its
  // ledger_seq: to miss none after a disconnect, watch again from the last event's
  // ledger_seq (not + 1) and drop the event ids already seen (they are stable). Ends once the
  // run has ended or waits on an interrupt; INVALID_ARGUMENT for a run that is not a
  // pipeline's.
  grpc::Status Watch(grpc::ServerContext* context, const v1::WatchRunRequest*, grpc::ServerWriter<v1::RunEvent>*) override;

 private:
  std::filesystem::path state_dir_;
  SharedLedger& ledger_;
  InFlight& in_flight_;
  const TokenTable& tokens_;
  StreamQuota& streams_;  // Watch's share per caller
};

}  // namespace warden::service
