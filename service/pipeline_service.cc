#include "service/pipeline_service.h"

#include <algorithm>
#include <thread>

#include "common/canonical_json.h"
#include "common/file.h"
#include "common/identifier.h"
#include "common/sha256.h"
#include "kernel/record/run_listing.h"
#include "service/grpc_status.h"
#include "service/warden_cli.h"

namespace warden::service {
namespace {

namespace fs = std::filesystem;

// A pipeline call runs the pipeline to its end or its next interrupt.
constexpr auto kPipelineTimeout = std::chrono::minutes(30);
constexpr size_t kMaxConfigBytes = size_t{1} << 20;

grpc::Status invalid(const std::string& field, const std::string& why) {
  return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, field + ": " + why);
}

bool has_command_stage(const Json& config) {
  auto stages = config.find("stages");
  if (stages == config.end() || !stages->is_array()) return false;
  return std::any_of(stages->begin(), stages->end(),
                     [](const Json& s) { return s.is_object() && s.value("kind", std::string()) == "command"; });
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
  auto config = parse_json(request->config_json());
  if (!config || !config->is_object()) return invalid("config_json", config ? "not a JSON object" : config.error().message);
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
  const std::string& run_id = request->run_id();
  if (run_id.empty()) return invalid("run_id", "empty");
  uint64_t next = request->from_seq();
  for (;;) {
    auto entry = ledger_.with([&](const Ledger& ledger) { return kernel::find_run(ledger, run_id); });
    if (!entry) return to_status(entry.error());
    if (entry->kind != "pipeline") return invalid("run_id", run_id + " is a " + entry->kind + " run: watch it with Kernel.WatchRun");
    bool gone = false;
    auto read = ledger_.read_run(run_id, next, [&](uint64_t seq, const RecordView& record, LedgerSnapshot& snap) -> Result<bool> {
      auto hash = snap.record_hash(seq);
      if (!hash) return std::unexpected(hash.error());
      v1::RunEvent e;
      e.set_event_id(hash->hex().substr(0, 32));  // a record's hash names it uniquely
      e.set_run_id(run_id);
      e.set_type(std::string(record.kind));
      e.set_timestamp_ms(record.ts);
      e.set_step_index(-1);
      e.set_data_json(std::string(record.payload));
      e.set_ledger_seq(seq);
      gone = !writer->Write(e);
      return !gone;
    });
    if (!read) return to_status(read.error());
    if (gone) return grpc::Status(grpc::StatusCode::CANCELLED, "the watcher went away");
    next = read->next;
    // Read before the snapshot: a run that ended or paused then has all its records in it.
    if (entry->status != "unfinished") return grpc::Status::OK;
    if (context->IsCancelled()) return grpc::Status(grpc::StatusCode::CANCELLED, "the watcher went away");
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

}  // namespace warden::service
