#include "service/kernel_service.h"

#include <stdlib.h>

#include <algorithm>
#include <cerrno>
#include <utility>

#include "common/canonical_json.h"
#include "common/file.h"
#include "common/sha256.h"
#include "kernel/record/records.h"
#include "kernel/record/run_lifecycle.h"
#include "kernel/record/run_listing.h"
#include "kernel/record/run_report.h"
#include "service/grpc_status.h"
#include "service/run_watch.h"
#include "service/warden_cli.h"

namespace warden::service {
namespace {

namespace fs = std::filesystem;

// How long CancelRun waits for the run to record its end before answering, unless asked for less.
constexpr auto kCancelWait = std::chrono::milliseconds(30'000);
// How long StartRun waits for a started run's first records to be durable.
constexpr auto kRecordedWait = std::chrono::seconds(30);
// How often a watcher re-reads the ledger of a run another process drives (ours ring a bell).
constexpr auto kWatchPoll = std::chrono::milliseconds(200);
grpc::Status invalid(const std::string& field, const std::string& why) {
  return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, field + ": " + why);
}

v1::RunKind kind_of(const std::string& kind) {
  if (kind == "build") return v1::RUN_KIND_BUILD;
  if (kind == "propose") return v1::RUN_KIND_PROPOSE;
  if (kind == "pipeline") return v1::RUN_KIND_PIPELINE;
  return v1::RUN_KIND_UNSPECIFIED;
}

// The listing's one word (kernel/record/run_listing.h) as the proto's status. A run whose process
// died before it recorded an end (interrupted) has failed.
v1::RunStatus status_of(const std::string& status) {
  if (status == "completed") return v1::RUN_STATUS_COMPLETED;
  if (status == "failed" || status == "interrupted") return v1::RUN_STATUS_FAILED;
  if (status == "cancelled") return v1::RUN_STATUS_CANCELLED;
  if (status == "timeout") return v1::RUN_STATUS_TIMEOUT;
  if (status == "refused") return v1::RUN_STATUS_REFUSED;
  return v1::RUN_STATUS_LIVE;  // live, waiting, unfinished
}

void fill_summary(const kernel::RunEntry& e, v1::RunSummary* out) {
  out->set_run_id(e.run_id);
  out->set_kind(kind_of(e.kind));
  out->set_status(status_of(e.status));
  out->set_started_ms(e.started_ms);
  out->set_steps_done(static_cast<uint32_t>(std::max<int64_t>(0, e.steps_done)));
  out->set_steps_total(static_cast<uint32_t>(std::max<int64_t>(0, e.steps_total.value_or(0))));
  const bool says_so = e.detail.starts_with("interrupted");
  out->set_reason(e.status == "interrupted" && !says_so ? "interrupted: " + e.detail : e.detail);
}

// A blueprint a client sent, admitted, kept under STATE/blueprints-inline/<sha256>/ for the
// run's CLI child to load: the very bytes that were admitted.
Result<fs::path> keep_client_blueprint(const fs::path& state_dir, const ClientBlueprint& blueprint) {
  const fs::path dir = state_dir / "blueprints-inline" / sha256(blueprint.text).hex();
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return fail(Errc::io_error, "creating " + dir.string() + ": " + ec.message());
  if (Status st = write_file_atomic(dir / "blueprint.json", blueprint.text); !st) return std::unexpected(st.error());
  return dir / "blueprint.json";
}

// A client's document in a directory of its own under STATE/tmp/ for one CLI child to read,
// removed with this object: what a call sends does not outlive the call, and no document
// sees another's files beside it.
class CallDocument {
 public:
  static Result<CallDocument> write(const fs::path& state_dir, const std::string& file_name, const std::string& text) {
    const fs::path tmp = state_dir / "tmp";
    std::error_code ec;
    fs::create_directories(tmp, ec);
    if (ec) return fail(Errc::io_error, "creating " + tmp.string() + ": " + ec.message());
    std::string templ = (tmp / "call-XXXXXX").string();
    if (!::mkdtemp(templ.data())) return std::unexpected(errno_error("mkdtemp " + templ, errno));
    CallDocument doc;
    doc.dir_ = templ;
    if (Status st = write_file_atomic(doc.dir_ / file_name, text, 0600); !st) return std::unexpected(st.error());
    doc.path_ = doc.dir_ / file_name;
    return doc;
  }
  CallDocument(CallDocument&& other) noexcept : dir_(std::exchange(other.dir_, {})), path_(std::move(other.path_)) {}
  CallDocument& operator=(CallDocument&&) = delete;
  ~CallDocument() {
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  CallDocument() = default;
  fs::path dir_, path_;
};

// `--policy P` for a policy a client named (none when it named none), admitted: a built-in
// name as is, a policy's JSON as a document of the call.
Result<std::optional<CallDocument>> add_policy(const fs::path& state_dir, const std::string& policy, std::vector<std::string>& args) {
  if (policy.empty()) return std::nullopt;
  auto admitted = admit_client_policy(policy, "policy");
  if (!admitted) return std::unexpected(admitted.error());
  if (!admitted->builtin.empty()) {
    args.insert(args.end(), {"--policy", admitted->builtin});
    return std::nullopt;
  }
  auto file = CallDocument::write(state_dir, "policy.json", admitted->json);
  if (!file) return std::unexpected(file.error());
  args.insert(args.end(), {"--policy", file->path().string()});
  return std::optional<CallDocument>(std::move(*file));
}

// What the run's process writes to the ledger as a Kernel.WatchRun shows it: its run_event
// records, as recorded (kernel/record/run_lifecycle.h), up to its end (run_completed,
// run_failed, run_cancelled). A run this server drives rings RunManager's bell as it
// records; one another process drives is polled.
class KernelRunWatch final : public WatchedRun {
 public:
  KernelRunWatch(RunManager& runs, const fs::path& ledger_dir, std::string run_id)
      : runs_(runs), ledger_dir_(ledger_dir), run_id_(std::move(run_id)) {}

  Result<bool> growing() override {
    seen_ = runs_.generation();
    return runs_.live(run_id_);
  }

  Result<std::vector<v1::RunEvent>> events(uint64_t seq, const RecordView& record, LedgerSnapshot&) override {
    if (record.kind != kernel::record_kind::run_event) return std::vector<v1::RunEvent>{};
    auto payload = parse_json(record.payload);
    if (!payload) return std::unexpected(payload.error());
    auto event = kernel::RunEvent::from_json(*payload);
    if (!event || event->run_id != run_id_) return std::vector<v1::RunEvent>{};  // a "run" field of another meaning
    auto data = canonicalize(event->data);
    if (!data) return std::unexpected(data.error());
    v1::RunEvent e;
    e.set_event_id(event->event_id);
    e.set_run_id(event->run_id);
    e.set_type(std::string(kernel::run_event_type_name(event->type)));
    e.set_timestamp_ms(event->timestamp_ms);
    e.set_step_index(event->step_index.value_or(-1));
    if (event->tool) e.set_tool_name(*event->tool);
    e.set_data_json(std::move(*data));
    e.set_ledger_seq(seq);
    return std::vector<v1::RunEvent>{std::move(e)};
  }

  bool terminal(const v1::RunEvent& event) const override {
    using kernel::RunEventType;
    for (RunEventType end : {RunEventType::run_completed, RunEventType::run_failed, RunEventType::run_cancelled}) {
      if (event.type() == kernel::run_event_type_name(end)) return true;
    }
    return false;
  }

  // The terminal event is recorded before the run's process prints its summary and exits:
  // the stream ends once the process is gone too, so a GetRun after it has the summary.
  void ended() override { (void)runs_.wait_ended(run_id_, kCancelWait); }

  grpc::Status stopped(bool known) override {
    if (!known) return grpc::Status(grpc::StatusCode::NOT_FOUND, "no run " + run_id_ + " in the ledger");
    return grpc::Status(grpc::StatusCode::ABORTED, "run " + run_id_ + " has no live process and no recorded end: `warden run recover " +
                                                       run_id_ + " --ledger " + ledger_dir_.string() + "` records it");
  }

  void wait() override { runs_.wait_change(seen_, kWatchPoll); }

 private:
  RunManager& runs_;
  const fs::path& ledger_dir_;
  const std::string run_id_;
  uint64_t seen_ = 0;  // RunManager's generation when the round began
};

}  // namespace

KernelService::KernelService(KernelServiceOptions options, SharedLedger& ledger, RunManager& runs, InFlight& in_flight,
                             const TokenTable& tokens, RemoteExecutors& remote, RemoteRunners& runners, StreamQuota& streams)
    : options_(std::move(options)),
      ledger_(ledger),
      runs_(runs),
      in_flight_(in_flight),
      tokens_(tokens),
      remote_(remote),
      runners_(runners),
      streams_(streams) {}

// Admitted, numbered, spawned, and answered once the ledger holds the run.
grpc::Status KernelService::StartRun(grpc::ServerContext* context, const v1::StartRunRequest* request,
                                     v1::StartRunResponse* out) {
  InFlight::Call call(in_flight_);
  grpc::Status denied;
  auto identity = tokens_.authorize(*context, start_run_role(*request), denied);
  if (!identity) return denied;
  auto admitted = admit_start_run(*request, identity->name, AdmissionScope{options_.blueprints_dir, ledger_});
  if (!admitted) return to_status(admitted.error());
  const std::string name = admitted->name, repository = admitted->repository;
  auto id = allocate_run_id(*admitted);
  if (!id) return to_status(id.error());
  auto run_id = spawn(std::move(*admitted), id->run_id);
  if (!run_id) return to_status(run_id.error());
  if (Status st = await_recorded(*run_id); !st) return to_status(st.error());
  out->set_run_id(*run_id);
  out->set_name(name);
  out->set_repository(repository);
  return grpc::Status::OK;
}

Result<KernelService::RunIdLease> KernelService::allocate_run_id(const AdmittedRun& run) {
  RunIdLease lease;
  if (run.clock != RunClock::logical) return lease;
  // A logical clock numbers runs from 1 in every process: the server numbers them instead,
  // after the ledger's runs, so each logical run on its shared ledger gets an id of its own
  // (and the first on a fresh ledger the id a CLI build would give it).
  lease.hold = std::unique_lock(logical_ids_mu_);
  auto listed = ledger_.with([&](const Ledger& ledger) { return kernel::list_runs(ledger); });
  if (!listed) return std::unexpected(listed.error());
  for (uint64_t n = listed->size() + 1;; ++n) {
    const std::string id = SequentialIdSource::nth("run", n);
    if (std::none_of(listed->begin(), listed->end(), [&](const kernel::RunEntry& e) { return e.run_id == id; })) {
      // The first is the id the child's own logical id source gives first; naming it would
      // only move every later id of the run by one (a CLI build's bytes are the reference).
      if (n > 1) lease.run_id = id;
      return lease;
    }
  }
}

Result<std::string> KernelService::spawn(AdmittedRun admitted, const std::string& run_id) {
  RunRequest run;
  run.repo = options_.state_dir / "repos" / admitted.repository;
  if (const auto* served = std::get_if<ServedBlueprint>(&admitted.source)) {
    run.blueprint = served->file;
  } else if (const auto* client = std::get_if<ClientBlueprint>(&admitted.source)) {
    auto file = keep_client_blueprint(options_.state_dir, *client);
    if (!file) return std::unexpected(file.error());
    run.blueprint = std::move(*file);
  } else {
    run.plan_sha256 = std::get<CommittedPlan>(admitted.source).digest.str();
  }
  run.policy = admitted.policy;
  run.clock = admitted.clock == RunClock::logical ? "logical" : "system";
  run.step_timeout_ms = admitted.step_timeout_ms;
  run.run_id = run_id;
  run.owner = admitted.owner;
  // Channels last, once nothing else can refuse the run: each is a reader thread and two descriptors.
  if (admitted.checks_on_runners) {
    auto channel = runners_.open(run.repo);
    if (!channel) return std::unexpected(channel.error());
    run.runner_channel = std::move(*channel);
    if (admitted.runner_quorum) {
      run.runner_quorum = std::to_string(admitted.runner_quorum->k) + "/" + std::to_string(admitted.runner_quorum->n);
    }
  }
  std::optional<uint64_t> ticket;  // the remote executor channel's
  if (const auto* remote = std::get_if<RemoteExecutor>(&admitted.executor)) {
    auto channel = remote_.open(remote->label, remote->served_by);
    if (!channel) return std::unexpected(channel.error());
    run.channel = std::move(channel->child_end);
    ticket = channel->ticket;
    run.executor = "remote:" + remote->label;
  } else if (const auto* command = std::get_if<CommandExecutor>(&admitted.executor)) {
    run.executor = "command:" + command->command;
  } else {
    run.executor = "plan";
  }
  auto started = runs_.start(std::move(run));
  if (ticket) {
    if (started) {
      remote_.bind(*ticket, *started);
    } else {
      remote_.discard(*ticket);
    }
  }
  return started;
}

Status KernelService::await_recorded(const std::string& run_id) {
  // The child announces the run as it starts recording it: the id goes back once the ledger
  // holds the run, so every call naming it finds it.
  const auto deadline = std::chrono::steady_clock::now() + kRecordedWait;
  for (;;) {
    const uint64_t seen = runs_.generation();
    const bool live = runs_.live(run_id);
    auto recorded = ledger_.with([&](const Ledger& ledger) { return kernel::find_run(ledger, run_id); });
    if (recorded) return {};
    if (recorded.error().code != Errc::not_found) return std::unexpected(recorded.error());
    if (!live || std::chrono::steady_clock::now() >= deadline) {
      return fail(Errc::io_error, "run " + run_id + " started but its start was not recorded" +
                                      (live ? " in time" : ": its process ended") + " (" +
                                      (options_.state_dir / "runs" / "children.log").string() + ")");
    }
    runs_.wait_change(seen, std::chrono::milliseconds(20));
  }
}

grpc::Status KernelService::summary(const std::string& run_id, v1::RunSummary* out) {
  if (run_id.empty()) return invalid("run_id", "empty");
  const bool live = runs_.live(run_id);  // before the reads: see WatchRun
  auto entry = ledger_.with([&](const Ledger& ledger) { return kernel::find_run(ledger, run_id); });
  if (!entry) return to_status(entry.error());
  fill_summary(*entry, out);
  if (auto line = canonicalize(entry->to_json())) out->set_entry_json(std::move(*line));
  if (entry->kind != "pipeline") {
    auto report = ledger_.with([&](const Ledger& ledger) { return kernel::report_run(ledger, run_id); });
    if (!report) return to_status(report.error());
    // As `warden run status --json` shows it: a run no process drives and that recorded no
    // end was interrupted, whatever it last said.
    Json j = report->to_json();
    j["live"] = live;
    if (!live && !report->terminal()) {
      j["recorded_status"] = report->status;
      j["status"] = "interrupted";
    }
    auto text = canonicalize(j);
    if (text) out->set_report_json(*text);
  }
  if (auto result = runs_.result(run_id)) out->set_result_json(*result);
  return grpc::Status::OK;
}

grpc::Status KernelService::GetRun(grpc::ServerContext* context, const v1::GetRunRequest* request, v1::RunSummary* out) {
  InFlight::Call call(in_flight_);
  if (grpc::Status denied; !tokens_.authorize(*context, Role::observer, denied)) return denied;
  return summary(request->run_id(), out);
}

grpc::Status KernelService::ListRuns(grpc::ServerContext* context, const v1::ListRunsRequest* request,
                                     v1::ListRunsResponse* out) {
  InFlight::Call call(in_flight_);
  if (grpc::Status denied; !tokens_.authorize(*context, Role::observer, denied)) return denied;
  auto entries = ledger_.with([](const Ledger& ledger) { return kernel::list_runs(ledger); });
  if (!entries) return to_status(entries.error());
  for (const kernel::RunEntry& e : *entries) {
    if (request->kind() != v1::RUN_KIND_UNSPECIFIED && kind_of(e.kind) != request->kind()) continue;
    if (request->live_only() && status_of(e.status) != v1::RUN_STATUS_LIVE) continue;
    fill_summary(e, out->add_runs());
  }
  return grpc::Status::OK;
}

grpc::Status KernelService::CancelRun(grpc::ServerContext* context, const v1::CancelRunRequest* request,
                                      v1::RunSummary* out) {
  InFlight::Call call(in_flight_);
  grpc::Status denied;
  auto identity = tokens_.authorize(*context, Role::executor, denied);
  if (!identity) return denied;
  const std::string& run_id = request->run_id();
  if (grpc::Status known = summary(run_id, out); !known.ok()) return known;
  if (out->status() != v1::RUN_STATUS_LIVE) {
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                        "run " + run_id + " has already ended (" + v1::RunStatus_Name(out->status()) + ")");
  }
  // A run is its starter's to cancel (or an admin's); one this server did not start (a CLI
  // build on its ledger) only an admin's.
  if (!identity->roles.contains(Role::admin)) {
    auto owner = runs_.owner(run_id);
    if (!owner || *owner != identity->name) {
      return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                          "run " + run_id + (owner ? " was started by " + *owner : std::string(" was not started by this server")) +
                              ": only its starter or an admin may cancel it");
    }
  }
  if (Status st = runs_.cancel(run_id); !st) return to_status(st.error());
  const auto wait = request->has_wait_ms() ? std::min(kCancelWait, std::chrono::milliseconds(request->wait_ms())) : kCancelWait;
  if (!runs_.wait_ended(run_id, wait)) {
    return grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "run " + run_id + " was asked to cancel and has not ended within " +
                                                                 std::to_string(wait.count()) + " ms; the cancel request stands");
  }
  out->Clear();
  return summary(run_id, out);
}

grpc::Status KernelService::WatchRun(grpc::ServerContext* context, const v1::WatchRunRequest* request,
                                     grpc::ServerWriter<v1::RunEvent>* writer) {
  InFlight::Call call(in_flight_);
  grpc::Status denied;
  auto identity = tokens_.authorize(*context, Role::observer, denied);
  if (!identity) return denied;
  auto held = streams_.acquire(identity->name);
  if (!held) return too_many_streams(identity->name, streams_.per_caller());
  KernelRunWatch run(runs_, ledger_.dir(), request->run_id());
  return watch_run(ledger_, request->run_id(), request->from_seq(), run, *context, *writer);
}

grpc::Status KernelService::GeneratePlan(grpc::ServerContext* context, const v1::GeneratePlanRequest* request,
                                         v1::PlanResponse* out) {
  InFlight::Call call(in_flight_);
  if (grpc::Status denied; !tokens_.authorize(*context, Role::observer, denied)) return denied;
  if (auto admitted = admit_client_blueprint(request->blueprint_json(), "blueprint_json"); !admitted) {
    return to_status(admitted.error());
  }
  auto file = CallDocument::write(options_.state_dir, "blueprint.json", request->blueprint_json());
  if (!file) return to_status(file.error());
  auto run = run_warden_to_end({"plan", "generate", file->path().string(), "--json"}, std::chrono::minutes(2));
  if (!run) return to_status(run.error());
  auto result = result_line(*run, "plan generate");
  if (!result) return to_status(result.error());
  auto plan = canonicalize(result->value("plan", Json::object()));
  if (!plan) return to_status(plan.error());
  out->set_plan_json(*plan);
  out->set_plan_sha256(result->value("plan_sha256", sha256(*plan).str()));
  return grpc::Status::OK;
}

grpc::Status KernelService::VerifyPlan(grpc::ServerContext* context, const v1::VerifyPlanRequest* request,
                                       v1::VerifyPlanResponse* out) {
  InFlight::Call call(in_flight_);
  if (grpc::Status denied; !tokens_.authorize(*context, Role::observer, denied)) return denied;
  if (auto admitted = admit_client_plan(request->plan_json(), "plan_json"); !admitted) return to_status(admitted.error());
  auto plan = CallDocument::write(options_.state_dir, "plan.json", request->plan_json());
  if (!plan) return to_status(plan.error());
  std::vector<std::string> args{"plan", "verify", plan->path().string(), "--json"};
  auto policy = add_policy(options_.state_dir, request->policy(), args);
  if (!policy) return to_status(policy.error());
  auto run = run_warden_to_end(args, std::chrono::minutes(2));
  if (!run) return to_status(run.error());
  auto result = result_line(*run, "plan verify");
  if (!result) return to_status(result.error());
  out->set_ok(result->value("ok", false));
  for (const Json& reason : result->value("reasons", Json::array())) {
    auto text = reason.is_string() ? Result<std::string>(reason.get<std::string>()) : canonicalize(reason);
    if (text) out->add_findings(*text);
  }
  return grpc::Status::OK;
}

grpc::Status KernelService::CommitPlan(grpc::ServerContext* context, const v1::CommitPlanRequest* request,
                                       v1::CommitPlanResponse* out) {
  InFlight::Call call(in_flight_);
  if (grpc::Status denied; !tokens_.authorize(*context, Role::executor, denied)) return denied;
  if (auto admitted = admit_client_plan(request->plan_json(), "plan_json"); !admitted) return to_status(admitted.error());
  auto plan = CallDocument::write(options_.state_dir, "plan.json", request->plan_json());
  if (!plan) return to_status(plan.error());
  std::vector<std::string> args{"plan", "commit", plan->path().string(), "--ledger", ledger_.dir().string(), "--json"};
  auto policy = add_policy(options_.state_dir, request->policy(), args);
  if (!policy) return to_status(policy.error());
  auto run = run_warden_to_end(args, std::chrono::minutes(2));
  if (!run) return to_status(run.error());
  auto result = result_line(*run, "plan commit");
  if (!result) return to_status(result.error());
  if (!result->value("ok", false)) {
    std::string why;
    for (const Json& reason : result->value("reasons", Json::array())) {
      why += (why.empty() ? "" : "; ") + (reason.is_string() ? reason.get<std::string>() : reason.dump());
    }
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "the plan was refused (recorded): " + why);
  }
  out->set_plan_sha256(result->value("plan_sha256", std::string()));
  out->set_seq(result->value("seq", uint64_t{0}));
  return grpc::Status::OK;
}

}  // namespace warden::service
