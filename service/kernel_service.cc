#include "service/kernel_service.h"

#include <stdlib.h>

#include <algorithm>
#include <cerrno>
#include <utility>

#include "common/canonical_json.h"
#include "common/file.h"
#include "common/identifier.h"
#include "common/sha256.h"
#include "kernel/record/committed_plan.h"
#include "kernel/judge/policy.h"
#include "kernel/record/records.h"
#include "kernel/record/run_lifecycle.h"
#include "kernel/record/run_listing.h"
#include "kernel/record/run_report.h"
#include "runner/model/sandbox_profile.h"
#include "service/grpc_status.h"
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
// The largest inline blueprint: the CLI's own limit on a content file.
constexpr size_t kMaxBlueprintBytes = size_t{16} << 20;

grpc::Status invalid(const std::string& field, const std::string& why) {
  return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, field + ": " + why);
}

// A name that is one path component of ours: no separators, no dot-dot, no hidden files.
bool safe_name(const std::string& name) { return is_identifier(name, 100); }
const std::string kNameRule = "must be a name of " + std::string(kIdentifierRule);

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

bool terminal_event(kernel::RunEventType type) {
  using kernel::RunEventType;
  return type == RunEventType::run_completed || type == RunEventType::run_failed || type == RunEventType::run_cancelled;
}

bool builtin_policy(const std::string& name) {
  auto names = kernel::builtin_policy_names();
  return std::find(names.begin(), names.end(), name) != names.end();
}

// A client's document may name a policy only by a built-in name: any other name is a path
// the CLI child would load on this host, and a policy decides what is accepted and in which
// sandbox (seen from an executor, the way to accept its own change).
grpc::Status check_policy_name(const Json& document, const std::string& field) {
  auto policy = document.find("policy");
  if (policy == document.end() || policy->is_null()) return grpc::Status::OK;
  if (!policy->is_string() || (!policy->get<std::string>().empty() && !builtin_policy(policy->get<std::string>()))) {
    std::string names;
    for (std::string_view n : kernel::builtin_policy_names()) names += (names.empty() ? "" : ", ") + std::string(n);
    return invalid(field, "must be a built-in policy name (" + names + ")");
  }
  return grpc::Status::OK;
}

// A client's blueprint or plan commits only on a branch of Warden's own (warden/...), never
// on a repository's base branch.
grpc::Status check_branch(const std::string& branch, const std::string& field) {
  if (branch.empty() || branch.starts_with("warden/")) return grpc::Status::OK;
  return invalid(field, "\"" + branch + "\": a client's build commits on a branch named warden/...");
}

// A self-contained blueprint sent by a client, checked: refused are a seed directory and a
// held-out directory (their files would be read on this host), a policy that is not built-in, a branch outside
// warden/, and a name that is not a plain name. Sets `name` to the blueprint's name.
grpc::Status check_inline_blueprint(const std::string& text, std::string& name) {
  if (text.size() > kMaxBlueprintBytes) {
    return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, "blueprint_json: larger than " + std::to_string(kMaxBlueprintBytes) + " bytes");
  }
  auto parsed = parse_json(text);
  if (!parsed || !parsed->is_object()) return invalid("blueprint_json", parsed ? "not a JSON object" : parsed.error().message);
  auto repo = parsed->find("repository");
  if (repo != parsed->end() && repo->is_object()) {
    if (repo->contains("seed") && !(*repo)["seed"].is_null()) {
      return invalid("blueprint_json.repository.seed",
                     "an inline blueprint cannot name a seed directory on the server; serve the blueprint with "
                     "`warden serve --blueprints DIR` and start it by name");
    }
    if (auto branch = repo->find("branch"); branch != repo->end() && !branch->is_null()) {
      if (!branch->is_string()) return invalid("blueprint_json.repository.branch", "not a string");
      if (grpc::Status st = check_branch(branch->get<std::string>(), "blueprint_json.repository.branch"); !st.ok()) return st;
    }
  }
  if (parsed->contains("held_out")) {
    return invalid("blueprint_json.held_out",
                   "an inline blueprint cannot name held-out tests on the server (a client that sends them has shown them); "
                   "serve the blueprint and its held-out directory with `warden serve --blueprints DIR` and start it by name");
  }
  if (grpc::Status st = check_policy_name(*parsed, "blueprint_json.policy"); !st.ok()) return st;
  name = parsed->value("name", std::string());
  if (!safe_name(name)) return invalid("blueprint_json.name", kNameRule);
  return grpc::Status::OK;
}

// A checked inline blueprint kept under STATE/blueprints-inline/<sha256>/ for a run's CLI
// child to load.
grpc::Status keep_inline_blueprint(const std::filesystem::path& state_dir, const std::string& text, std::string& name) {
  if (grpc::Status st = check_inline_blueprint(text, name); !st.ok()) return st;
  const fs::path dir = state_dir / "blueprints-inline" / sha256(text).hex();
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return to_status(Error{Errc::io_error, "creating " + dir.string() + ": " + ec.message()});
  if (Status st = write_file_atomic(dir / "blueprint.json", text); !st) return to_status(st.error());
  return grpc::Status::OK;
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

// A client's plan: JSON whose policy, if it names one, is built-in, and whose branch is Warden's.
grpc::Status check_plan_json(const std::string& text) {
  auto parsed = parse_json(text);
  if (!parsed || !parsed->is_object()) return invalid("plan_json", parsed ? "not a JSON object" : parsed.error().message);
  if (grpc::Status st = check_policy_name(*parsed, "plan_json.policy"); !st.ok()) return st;
  if (auto branch = parsed->find("branch"); branch != parsed->end() && branch->is_string()) {
    return check_branch(branch->get<std::string>(), "plan_json.branch");
  }
  return grpc::Status::OK;
}

// `--policy P` for a policy a client named (none when it named none): a built-in name as
// is, a policy's JSON as a document of the call. The JSON may name only a built-in sandbox
// profile: a path there would be a profile file on this host.
Result<std::optional<CallDocument>> add_policy(const fs::path& state_dir, const std::string& policy, std::vector<std::string>& args) {
  if (policy.empty()) return std::nullopt;
  if (builtin_policy(policy)) {
    args.insert(args.end(), {"--policy", policy});
    return std::nullopt;
  }
  if (!policy.starts_with("{")) return fail(Errc::invalid_argument, "policy: \"" + policy + "\" is neither a built-in policy nor a policy's JSON");
  auto parsed = parse_json(policy);
  if (!parsed || !parsed->is_object()) return fail(Errc::invalid_argument, "policy: " + (parsed ? std::string("not a JSON object") : parsed.error().message));
  if (auto profile = parsed->find("sandbox_profile"); profile != parsed->end()) {
    auto names = builtin_profile_names();
    if (!profile->is_string() || std::find(names.begin(), names.end(), profile->get<std::string>()) == names.end()) {
      return fail(Errc::invalid_argument, "policy.sandbox_profile: a client's policy names a built-in sandbox profile");
    }
  }
  auto file = CallDocument::write(state_dir, "policy.json", policy);
  if (!file) return std::unexpected(file.error());
  args.insert(args.end(), {"--policy", file->path().string()});
  return std::optional<CallDocument>(std::move(*file));
}

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

grpc::Status KernelService::StartRun(grpc::ServerContext* context, const v1::StartRunRequest* request,
                                     v1::StartRunResponse* out) {
  InFlight::Call call(in_flight_);
  const std::string& executor = request->executor().empty() ? std::string("plan") : request->executor();
  const bool command = executor.starts_with("command:");
  // A command executor is a program of the caller's choosing run on this host.
  grpc::Status denied;
  auto identity = tokens_.authorize(*context, command ? Role::admin : Role::executor, denied);
  if (!identity) return denied;

  RunRequest run;
  std::string blueprint_name;
  std::optional<uint64_t> ticket;  // the remote executor channel's, for executor remote
  switch (request->plan_case()) {
    case v1::StartRunRequest::kBlueprint: {
      blueprint_name = request->blueprint();
      if (!safe_name(blueprint_name)) return invalid("blueprint", kNameRule);
      run.blueprint = options_.blueprints_dir / blueprint_name / "blueprint.json";
      std::error_code ec;
      if (!fs::is_regular_file(run.blueprint, ec)) {
        return grpc::Status(grpc::StatusCode::NOT_FOUND, "blueprint: the server serves no blueprint " + blueprint_name +
                                                             " (no " + run.blueprint.string() + ")");
      }
      break;
    }
    case v1::StartRunRequest::kBlueprintJson: {
      auto file = keep_inline_blueprint(options_.state_dir, request->blueprint_json(), blueprint_name);
      if (!file.ok()) return file;
      run.blueprint = options_.state_dir / "blueprints-inline" / sha256(request->blueprint_json()).hex() / "blueprint.json";
      break;
    }
    case v1::StartRunRequest::kPlanSha256: {
      auto digest = Digest::parse(request->plan_sha256());
      if (!digest) return invalid("plan_sha256", "not a SHA-256 digest (\"sha256:\" and 64 hex digits)");
      // Found here for its name and a clear NOT_FOUND; the run's process finds and checks it again.
      auto plan = ledger_.with([&](const Ledger& ledger) { return kernel::find_committed_plan(ledger, *digest); });
      if (!plan) return to_status(plan.error());
      if (request->policy().empty() && !plan->policy.empty() && !builtin_policy(plan->policy)) {
        return invalid("policy", "the committed plan names the policy \"" + plan->policy +
                                     "\", which is not built-in: name a built-in policy to build it under");
      }
      if (grpc::Status st = check_branch(plan->branch, "plan_sha256: the plan's branch"); !st.ok()) return st;
      blueprint_name = plan->name;
      run.plan_sha256 = digest->str();
      break;
    }
    default:
      return invalid("plan", "give blueprint (a name the server serves), blueprint_json or plan_sha256");
  }

  const std::string repository = request->repository().empty() ? blueprint_name : request->repository();
  if (!safe_name(repository)) {
    return invalid("repository", request->repository().empty() ? "the plan's name \"" + blueprint_name + "\" " + kNameRule + "; name one"
                                                               : std::string(kNameRule));
  }
  run.repo = options_.state_dir / "repos" / repository;

  if (executor == "plan" || command) {
    if (command && executor.size() == std::string_view("command:").size()) return invalid("executor", "command: names no command");
    if (!request->executor_label().empty()) return invalid("executor_label", "only a remote executor has a label");
    if (!request->executor_identity().empty()) return invalid("executor_identity", "only a remote executor is served by one");
    run.executor = executor;
  } else if (executor == "remote") {
    if (!safe_name(request->executor_label())) return invalid("executor_label", kNameRule);
    const std::string& served_by = request->executor_identity().empty() ? identity->name : request->executor_identity();
    auto channel = remote_.open(request->executor_label(), served_by);
    if (!channel) return to_status(channel.error());
    run.channel = std::move(channel->child_end);
    ticket = channel->ticket;
    run.executor = "remote:" + request->executor_label();
  } else {
    return invalid("executor", "\"" + executor + "\" is not plan, command:CMD or remote");
  }

  if (!request->runner_quorum().empty()) {
    if (request->checks_on() != "runners") return invalid("runner_quorum", "only checks on runners have a quorum");
    if (auto q = RunnerQuorum::parse(request->runner_quorum()); !q) return invalid("runner_quorum", q.error().message);
    run.runner_quorum = request->runner_quorum();
  }
  if (!request->checks_on().empty() && request->checks_on() != "local" && request->checks_on() != "runners") {
    return invalid("checks_on", "\"" + request->checks_on() + "\" is not local or runners");
  }

  if (!request->policy().empty()) {
    auto names = kernel::builtin_policy_names();
    if (std::find(names.begin(), names.end(), request->policy()) == names.end()) {
      return invalid("policy", "\"" + request->policy() + "\" is not a built-in policy");
    }
    run.policy = request->policy();
  }
  if (!request->clock().empty()) {
    if (request->clock() != "system" && request->clock() != "logical") return invalid("clock", "system or logical");
    run.clock = request->clock();
  }
  run.step_timeout_ms = request->step_timeout_ms();
  run.owner = identity->name;
  std::optional<std::unique_lock<std::mutex>> logical;
  if (run.clock == "logical") {
    // A logical clock numbers runs from 1 in every process: the server numbers them instead,
    // after the ledger's runs, so each logical run on its shared ledger gets an id of its own
    // (and the first on a fresh ledger the id a CLI build would give it).
    logical.emplace(logical_ids_mu_);
    auto listed = ledger_.with([&](const Ledger& ledger) { return kernel::list_runs(ledger); });
    if (!listed) return to_status(listed.error());
    for (uint64_t n = listed->size() + 1;; ++n) {
      const std::string id = SequentialIdSource::nth("run", n);
      if (std::none_of(listed->begin(), listed->end(), [&](const kernel::RunEntry& e) { return e.run_id == id; })) {
        // The first is the id the child's own logical id source gives first; naming it would
        // only move every later id of the run by one (a CLI build's bytes are the reference).
        if (n > 1) run.run_id = id;
        break;
      }
    }
  }

  // Last, once the request is known good: a channel is a reader thread and two descriptors.
  if (request->checks_on() == "runners") {
    auto channel = runners_.open(run.repo);
    if (!channel) {
      if (ticket) remote_.discard(*ticket);
      return to_status(channel.error());
    }
    run.runner_channel = std::move(*channel);
  }
  auto run_id = runs_.start(std::move(run));
  if (ticket) {
    if (run_id) {
      remote_.bind(*ticket, *run_id);
    } else {
      remote_.discard(*ticket);
    }
  }
  if (!run_id) return to_status(run_id.error());
  // The child announces the run as it starts recording it: the id goes back once the ledger
  // holds the run, so every call naming it finds it.
  const auto deadline = std::chrono::steady_clock::now() + kRecordedWait;
  for (;;) {
    const uint64_t seen = runs_.generation();
    const bool live = runs_.live(*run_id);
    auto recorded = ledger_.with([&](const Ledger& ledger) { return kernel::find_run(ledger, *run_id); });
    if (recorded) break;
    if (recorded.error().code != Errc::not_found) return to_status(recorded.error());
    if (!live || std::chrono::steady_clock::now() >= deadline) {
      return grpc::Status(grpc::StatusCode::UNAVAILABLE, "run " + *run_id + " started but its start was not recorded" +
                                                             (live ? " in time" : ": its process ended") + " (" +
                                                             (options_.state_dir / "runs" / "children.log").string() + ")");
    }
    runs_.wait_change(seen, std::chrono::milliseconds(20));
  }
  out->set_run_id(*run_id);
  out->set_name(blueprint_name);
  out->set_repository(repository);
  return grpc::Status::OK;
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
  const std::string& run_id = request->run_id();
  if (run_id.empty()) return invalid("run_id", "empty");
  uint64_t next = request->from_seq();
  bool known = false;
  for (;;) {
    const uint64_t seen = runs_.generation();
    // Asked before the snapshot: whatever a process wrote before it ended is in the snapshot
    // taken after it was found gone.
    const bool live = runs_.live(run_id);
    std::vector<v1::RunEvent> batch;
    bool ended = false;
    auto read = ledger_.read_run(run_id, next, [&](uint64_t seq, const RecordView& record, LedgerSnapshot&) -> Result<bool> {
      if (record.kind != kernel::record_kind::run_event) return true;
      auto payload = parse_json(record.payload);
      if (!payload) return std::unexpected(payload.error());
      auto event = kernel::RunEvent::from_json(*payload);
      if (!event || event->run_id != run_id) return true;  // a "run" field of another meaning
      auto data = canonicalize(event->data);
      if (!data) return std::unexpected(data.error());
      v1::RunEvent& e = batch.emplace_back();
      e.set_event_id(event->event_id);
      e.set_run_id(event->run_id);
      e.set_type(std::string(kernel::run_event_type_name(event->type)));
      e.set_timestamp_ms(event->timestamp_ms);
      e.set_step_index(event->step_index.value_or(-1));
      if (event->tool) e.set_tool_name(*event->tool);
      e.set_data_json(std::move(*data));
      e.set_ledger_seq(seq);
      ended = terminal_event(event->type);
      return !ended;
    });
    if (!read) return to_status(read.error());
    next = read->next;
    known = known || read->known;
    // Plain writes: a sync Write with a buffer hint waits for a later write to flush it,
    // which never comes when it was the last event there is.
    for (const v1::RunEvent& e : batch) {
      if (!writer->Write(e)) return grpc::Status(grpc::StatusCode::CANCELLED, "the watcher went away");
    }
    if (ended) {
      // The terminal event is recorded before the run's process prints its summary and exits:
      // the stream ends once the process is gone too, so a GetRun after it has the summary.
      (void)runs_.wait_ended(run_id, kCancelWait);
      return grpc::Status::OK;
    }
    if (!known && !live) return grpc::Status(grpc::StatusCode::NOT_FOUND, "no run " + run_id + " in the ledger");
    if (!live) {
      return grpc::Status(grpc::StatusCode::ABORTED, "run " + run_id +
                                                         " has no live process and no recorded end: `warden run recover " +
                                                         run_id + " --ledger " + ledger_.dir().string() + "` records it");
    }
    if (context->IsCancelled()) return grpc::Status(grpc::StatusCode::CANCELLED, "the watcher went away");
    runs_.wait_change(seen, kWatchPoll);
  }
}

grpc::Status KernelService::GeneratePlan(grpc::ServerContext* context, const v1::GeneratePlanRequest* request,
                                         v1::PlanResponse* out) {
  InFlight::Call call(in_flight_);
  if (grpc::Status denied; !tokens_.authorize(*context, Role::observer, denied)) return denied;
  std::string name;
  if (grpc::Status st = check_inline_blueprint(request->blueprint_json(), name); !st.ok()) return st;
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
  if (grpc::Status st = check_plan_json(request->plan_json()); !st.ok()) return st;
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
  if (grpc::Status st = check_plan_json(request->plan_json()); !st.ok()) return st;
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
