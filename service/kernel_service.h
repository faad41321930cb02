// warden.v1.Kernel: runs started, listed, cancelled and watched over gRPC.
//
// A run is a `warden build` child the RunManager drives (service/run_manager.h); what a run
// is, its status and its events are read from the ledger, never from the child: the ledger
// is the one source of truth, and a run started by a CLI build on the same ledger is listed,
// watched and cancelled the same way.
//
// Roles: observer reads (GetRun, ListRuns, WatchRun); executor starts and cancels runs with
// the plan or a remote executor; a command executor (a program run on the server) needs
// admin. Thread-safe: gRPC calls it from many threads; its parts are.
#pragma once

#include <mutex>

#include <warden.grpc.pb.h>  // generated from proto/warden.proto

#include <filesystem>

#include "service/in_flight.h"
#include "service/remote_executors.h"
#include "service/remote_runners.h"
#include "service/run_admission.h"
#include "service/run_manager.h"
#include "service/shared_ledger.h"
#include "service/stream_quota.h"
#include "service/tokens.h"

namespace warden::service {

struct KernelServiceOptions {
  std::filesystem::path state_dir;
  std::filesystem::path blueprints_dir;  // StartRun.blueprint names DIR/<name>/blueprint.json
};

class KernelService final : public v1::Kernel::Service {
 public:
  // Borrows everything; all must outlive it.
  KernelService(KernelServiceOptions options, SharedLedger& ledger, RunManager& runs, InFlight& in_flight,
                const TokenTable& tokens, RemoteExecutors& remote, RemoteRunners& runners, StreamQuota& streams);

  // Plans, by the CLI's own `warden plan generate|verify|commit` in a child process. A
  // blueprint must be self-contained (content inline); a policy is a built-in name or a
  // policy's JSON. CommitPlan needs executor (it writes the ledger); the others observer.
  grpc::Status GeneratePlan(grpc::ServerContext* context, const v1::GeneratePlanRequest*, v1::PlanResponse*) override;
  grpc::Status VerifyPlan(grpc::ServerContext* context, const v1::VerifyPlanRequest*, v1::VerifyPlanResponse*) override;
  grpc::Status CommitPlan(grpc::ServerContext* context, const v1::CommitPlanRequest*, v1::CommitPlanResponse*) override;
  // A run of a served blueprint, a client's blueprint or a committed plan, in three steps:
  // admitted (service/run_admission.h: every document through the kernel's typed parsers and
  // the server's rules; nothing opened or written before it), given an id, and spawned as a
  // `warden build` child; answered once the ledger holds its start.
  grpc::Status StartRun(grpc::ServerContext* context, const v1::StartRunRequest*, v1::StartRunResponse*) override;
  grpc::Status GetRun(grpc::ServerContext* context, const v1::GetRunRequest*, v1::RunSummary*) override;
  grpc::Status ListRuns(grpc::ServerContext* context, const v1::ListRunsRequest*, v1::ListRunsResponse*) override;
  grpc::Status CancelRun(grpc::ServerContext* context, const v1::CancelRunRequest*, v1::RunSummary*) override;
  // History from the ledger (events with ledger_seq >= from_seq), then live events as the
  // run records them (service/run_watch.h); ends after the terminal event (run_completed,
  // run_failed, run_cancelled). A run with no live process and no recorded end: ABORTED,
  // naming `warden run recover`.
  grpc::Status WatchRun(grpc::ServerContext* context, const v1::WatchRunRequest*,
                        grpc::ServerWriter<v1::RunEvent>*) override;

 private:
  // The id a run starts under: empty for the child's own id source to name it, or, for a
  // logical-clock run, the next one after the ledger's runs, held (`hold`) until the run is
  // recorded so the next logical run numbers after it.
  struct RunIdLease {
    std::string run_id;
    std::unique_lock<std::mutex> hold;
  };
  Result<RunIdLease> allocate_run_id(const AdmittedRun& run);
  // Starts `run`'s `warden build` child through the RunManager (its inline blueprint kept
  // for the child, its runners' and its remote executor's channels opened last); the run's id.
  Result<std::string> spawn(AdmittedRun run, const std::string& run_id);
  // Waits until the ledger holds the start of `run_id`; io_error when its process ended first
  // or it took longer than a started run may.
  Status await_recorded(const std::string& run_id);
  grpc::Status summary(const std::string& run_id, v1::RunSummary* out);

  KernelServiceOptions options_;
  SharedLedger& ledger_;
  RunManager& runs_;
  InFlight& in_flight_;
  const TokenTable& tokens_;
  RemoteExecutors& remote_;
  RemoteRunners& runners_;
  StreamQuota& streams_;  // WatchRun's share per caller
  // Held by a logical-clock StartRun from numbering its run until the run is recorded, so the
  // next one numbers after it.
  std::mutex logical_ids_mu_;
};

}  // namespace warden::service
