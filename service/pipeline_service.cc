#include "service/pipeline_service.h"

#include <algorithm>
#include <thread>

#include "common/canonical_json.h"
#include "common/file.h"
#include "common/identifier.h"
#include "common/sha256.h"
#include "executor/pipeline_config.h"
#include "executor/run_records.h"
#include "kernel/record/run_listing.h"
#include "service/grpc_status.h"
#include "service/pipeline_events.h"
#include "service/run_watch.h"
#include "service/warden_cli.h"

namespace warden::service {
namespace {

namespace fs = std::filesystem;

// A pipeline call runs the pipeline to its end or its next interrupt.
constexpr auto kPipelineTimeout = std::chrono::minutes(30);
constexpr size_t kMaxConfigBytes = size_t{1} << 20;
// How often a watcher re-reads the ledger: a pipeline's process is a CLI child that rings no bell.
constexpr auto kWatchPoll = std::chrono::milliseconds(200);

grpc::Status invalid(const std::string& field, const std::string& why) {
  return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, field + ": " + why);
}

// A command stage is a program of the caller's choosing run on this host: asked of the config
// as the executor parses it (the CLI child parses the same bytes the same way).
bool has_command_stage(const executor::PipelineConfig& config) {
  return std::any_of(config.stages.begin(), config.stages.end(), [](const executor::StageSpec& s) { return s.kind == "command"; });
}

// The result line of `warden pipeline run|resume --json` as the proto's answer; a command
// that ended without one failed as its exit code says.
grpc::Status answer(const CliRun& run, const std::string& command, v1::PipelineRunResponse* out) {
  auto result = result_line(run, command);
  if (!result) return to_status(result.error());
  out->set_run_id(result->value("run_id", std::string()));
  const std::string status = result->value("status", std::string());
  const std::string reason = result->value("terminal_reason", std::string());
  if (status == "waiting") {
    out->set_status(v1::RUN_STATUS_LIVE);
    if (result->contains("interrupt")) {
      auto interrupt = canonicalize((*result)["interrupt"]);
      if (interrupt) out->set_interrupt_json(*interrupt);
    }
  } else if (reason == "completed") {
    out->set_status(v1::RUN_STATUS_COMPLETED);
  } else if (reason == "cancelled") {
    out->set_status(v1::RUN_STATUS_CANCELLED);
  } else {
    out->set_status(v1::RUN_STATUS_FAILED);
  }
  return grpc::Status::OK;
}

// A pipeline run as Pipeline.Watch shows it: its records as the executor's events
// (service/pipeline_events.h); the stream ends once the run has ended or waits on an
// interrupt, as the run's listing says before each read. Polled: the process driving it is a
// CLI child of a Run or Resume call, whose records nothing announces.
class PipelineRunWatch final : public WatchedRun {
 public:
  PipelineRunWatch(SharedLedger& ledger, std::string run_id) : ledger_(ledger), run_id_(std::move(run_id)) {}

  Result<bool> growing() override {
    auto entry = ledger_.with([&](const Ledger& ledger) { return kernel::find_run(ledger, run_id_); });
    if (!entry) return std::unexpected(entry.error());
    if (entry->kind != "pipeline") {
      return fail(Errc::invalid_argument, "run_id: " + run_id_ + " is a " + entry->kind + " run: watch it with Kernel.WatchRun");
    }
    return entry->status == "unfinished";
  }

  Result<std::vector<v1::RunEvent>> events(uint64_t seq, const RecordView& record, LedgerSnapshot& snapshot) override {
    std::vector<v1::RunEvent> out;
    // The run's index also holds kernel records that name the id: only pipeline records whose
    // "run" is the id are the pipeline run's (as kernel/record/run_reader.h reads them).
    if (!executor::record_kind::is_pipeline(record.kind)) return out;
    auto payload = parse_json(record.payload, "record " + std::to_string(seq));
    if (!payload) return std::unexpected(Error{Errc::corrupt, payload.error().message});
    auto run = payload->is_object() ? payload->find("run") : payload->end();
    if (run == payload->end() || !run->is_string() || run->get_ref<const std::string&>() != run_id_) return out;
    const executor::StoredRecord stored{seq, std::string(record.kind), record.ts, std::move(*payload)};
    auto shown = pipeline_record_events(stored, [&snapshot](std::string_view text) -> Result<std::string> {
      auto digest = Digest::parse(text);
      if (!digest) return fail(Errc::corrupt, "blob reference \"" + std::string(text) + "\": " + digest.error().message);
      return snapshot.blob(*digest);
    });
    if (!shown) return std::unexpected(shown.error());
    for (const executor::ExecutionEvent& event : *shown) {
      auto e = wire_event(event, seq);
      if (!e) return std::unexpected(e.error());
      out.push_back(std::move(*e));
    }
    return out;
  }

  // A pipeline's end is its status, not an event: a run paused on an interrupt ends the stream too.
  bool terminal(const v1::RunEvent&) const override { return false; }
  grpc::Status stopped(bool) override { return grpc::Status::OK; }
  void wait() override { std::this_thread::sleep_for(kWatchPoll); }

 private:
  SharedLedger& ledger_;
  const std::string run_id_;
};

}  // namespace

PipelineService::PipelineService(fs::path state_dir, SharedLedger& ledger, InFlight& in_flight, const TokenTable& tokens,
                                 StreamQuota& streams)
    : state_dir_(std::move(state_dir)), ledger_(ledger), in_flight_(in_flight), tokens_(tokens), streams_(streams) {}

grpc::Status PipelineService::Run(grpc::ServerContext* context, const v1::PipelineRunRequest* request,
                                  v1::PipelineRunResponse* out) {
  InFlight::Call call(in_flight_);
  if (request->config_json().size() > kMaxConfigBytes) {
    return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, "config_json: larger than " + std::to_string(kMaxConfigBytes) + " bytes");
  }
  auto config = executor::PipelineConfig::parse_text(request->config_json(), "config_json");
  if (!config) return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, config.error().message);
  if (grpc::Status denied; !tokens_.authorize(*context, has_command_stage(*config) ? Role::admin : Role::executor, denied)) {
    return denied;
  }
  const fs::path dir = state_dir_ / "pipelines";
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return to_status(Error{Errc::io_error, "creating " + dir.string() + ": " + ec.message()});
  const fs::path file = dir / (sha256(request->config_json()).hex() + ".json");
  if (Status st = write_file_atomic(file, request->config_json()); !st) return to_status(st.error());
  auto run = run_warden_to_end({"pipeline", "run", file.string(), "--input=" + request->input_json(), "--ledger",
                                ledger_.dir().string(), "--json"},
                               kPipelineTimeout);
  if (!run) return to_status(run.error());
  return answer(*run, "pipeline run", out);
}

grpc::Status PipelineService::Resume(grpc::ServerContext* context, const v1::PipelineResumeRequest* request,
                                     v1::PipelineRunResponse* out) {
  InFlight::Call call(in_flight_);
  grpc::Status denied;
  auto identity = tokens_.authorize(*context, Role::executor, denied);
  if (!identity) return denied;
  const std::string& run_id = request->run_id();
  // A run id is a word of the CLI's command line: never an option, never a path.
  if (!is_identifier(run_id)) return invalid("run_id", "not a run id (" + std::string(kIdentifierRule) + ")");
  // An approval is a person's answer, in any form (approve, or a response naming an approve
  // word): it takes an admin's token, or an agent could approve the pipeline its own work
  // waits on. What the run waits on is read from its records, not taken from the request.
  if (!identity->roles.contains(Role::admin)) {
    auto shown = run_warden_to_end({"pipeline", "show", run_id, "--ledger", ledger_.dir().string(), "--json"}, kPipelineTimeout);
    if (!shown) return to_status(shown.error());
    auto state = result_line(*shown, "pipeline show");
    if (!state) return to_status(state.error());
    const Json envelope = state->value("envelope", Json::object());
    const Json interrupt = envelope.is_object() ? envelope.value("interrupt", Json()) : Json();
    if (interrupt.is_object() && interrupt.value("kind", std::string()) == "approval") {
      return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                          "run " + run_id + " waits on an approval: only an admin's token answers it (" + identity->name +
                              " is not an admin)");
    }
  }
  std::vector<std::string> args{"pipeline", "resume", run_id, "--ledger", ledger_.dir().string(), "--json"};
  // An approval interrupt is answered yes or no; any other with the response given, glued to
  // its option so that no response reads as an option of its own.
  args.push_back("--response=" + (!request->response_json().empty() ? request->response_json()
                                                                     : std::string(request->approve() ? "yes" : "no")));
  auto run = run_warden_to_end(args, kPipelineTimeout);
  if (!run) return to_status(run.error());
  return answer(*run, "pipeline resume", out);
}

grpc::Status PipelineService::Watch(grpc::ServerContext* context, const v1::WatchRunRequest* request,
                                    grpc::ServerWriter<v1::RunEvent>* writer) {
  InFlight::Call call(in_flight_);
  grpc::Status denied;
  auto identity = tokens_.authorize(*context, Role::observer, denied);
  if (!identity) return denied;
  auto held = streams_.acquire(identity->name);
  if (!held) return too_many_streams(identity->name, streams_.per_caller());
  PipelineRunWatch run(ledger_, request->run_id());
  return watch_run(ledger_, request->run_id(), request->from_seq(), run, *context, *writer);
}

}  // namespace warden::service
