// `warden-grpc client build BLUEPRINT --server ADDR` (what `warden build --server` runs): the
// server builds; this process starts the run, watches its events and prints them as the local
// build does (progress lines, or the --json event lines), then the run's summary as the
// server's `warden build --json` child printed it, and exits as the local build would. Ctrl-C
// or SIGTERM cancels the run on the server, as they cancel a local build (a second one leaves
// at once, the cancel request standing).
#include <warden.grpc.pb.h>

#include <filesystem>
#include <memory>
#include <iostream>

#include "common/interrupts.h"
#include "common/exit_codes.h"
#include "common/file.h"
#include "tools/warden/json_lines.h"
#include "tools/warden/run_view.h"
#include "tools/warden_grpc/client_commands.h"
#include "tools/warden_grpc/client_events.h"

namespace warden::grpc_client {
namespace {

namespace fs = std::filesystem;

// The largest blueprint sent inline: the server's own limit.
constexpr uint64_t kMaxBlueprintBytes = uint64_t{16} << 20;

struct BuildArgs {
  ConnectOptions connect;
  std::string blueprint, plan_sha256, repository, executor = "plan", label, serving_identity, policy, clock,
      checks_on, runner_quorum;
  double step_timeout_s = 0;
  bool json = false;
};

// The request: a blueprint file is sent whole (self-contained: the server refuses one that
// names a seed directory), any other blueprint names one the server serves; or a plan
// committed to the server's ledger, by its digest.
Result<v1::StartRunRequest> start_request(const BuildArgs& a) {
  v1::StartRunRequest r;
  std::error_code ec;
  if (a.blueprint.empty() == a.plan_sha256.empty()) {
    return fail(Errc::invalid_argument, "give a BLUEPRINT or --plan SHA256 (a plan committed to the server's ledger), not both");
  }
  if (!a.plan_sha256.empty()) {
    r.set_plan_sha256(a.plan_sha256);
  } else if (fs::is_regular_file(a.blueprint, ec)) {
    auto text = read_file(a.blueprint, kMaxBlueprintBytes);
    if (!text) return std::unexpected(text.error());
    if (auto parsed = parse_json(*text, "blueprint " + a.blueprint); !parsed) return std::unexpected(parsed.error());
    r.set_blueprint_json(*text);
  } else if (a.blueprint.find('/') != std::string::npos) {
    return fail(Errc::not_found, "blueprint " + a.blueprint + ": no such file (a blueprint the server serves is named, not a path)");
  } else {
    r.set_blueprint(a.blueprint);
  }
  r.set_repository(a.repository);
  r.set_executor(a.executor);
  r.set_executor_label(a.label);
  r.set_executor_identity(a.serving_identity);
  r.set_policy(a.policy);
  r.set_clock(a.clock);
  r.set_checks_on(a.checks_on);
  r.set_runner_quorum(a.runner_quorum);
  r.set_step_timeout_ms(static_cast<uint32_t>(a.step_timeout_s * 1000));
  return r;
}

int run(const BuildArgs& a) {
  auto request = start_request(a);
  if (!request) return cli::report_error(request.error(), a.json);
  InterruptToCancel interrupt;  // before the channel: gRPC's threads must not take the signals
  auto opened = Connection::open(a.connect);
  if (!opened) return cli::report_error(opened.error(), a.json);
  // Shared with the interrupt's action, which may run on its thread until `interrupt` is gone.
  auto connection = std::make_shared<const Connection>(std::move(*opened));
  std::shared_ptr<v1::Kernel::Stub> kernel = v1::Kernel::NewStub(connection->channel());

  v1::StartRunResponse started;
  {
    grpc::ClientContext context;
    connection->prepare(context, std::chrono::seconds(120));
    if (grpc::Status st = kernel->StartRun(&context, *request, &started); !st.ok()) return report_status(st, a.json);
  }
  const std::string run_id = started.run_id();
  // The watch below shows the cancellation as it is recorded; an error (the run ended first)
  // says nothing the watch will not.
  interrupt.on_interrupt([connection, kernel, run_id] {
    grpc::ClientContext context;
    connection->prepare(context, std::chrono::seconds(90));
    v1::CancelRunRequest cancel;
    cancel.set_run_id(run_id);
    v1::RunSummary ignored;
    (void)kernel->CancelRun(&context, cancel, &ignored);
  });
  // Where things are, as this side knows them: on the server, under its state directory.
  const std::string name = started.name();
  const std::string repository = "repos/" + started.repository() + " on " + connection->address();
  const std::string ledger = "the ledger of " + connection->address();

  {
    grpc::ClientContext context;
    connection->prepare(context, std::nullopt);  // as long as the build takes
    v1::WatchRunRequest watch;
    watch.set_run_id(run_id);
    auto reader = kernel->WatchRun(&context, watch);
    v1::RunEvent message;
    cli::BuildProgress progress;
    while (reader->Read(&message)) {
      auto event = event_from_proto(message);
      if (!event) {
        context.TryCancel();
        reader->Finish();
        return cli::report_error(event.error(), a.json);
      }
      print_whole([&] {
        if (event->type == kernel::RunEventType::run_started && !a.json) {
          const std::string executor = a.executor == "remote" ? "remote:" + a.label : a.executor;
          cli::print_build_header({name, run_id, executor, std::nullopt, repository, ledger});
        }
        cli::print_build_event(*event, a.json, progress);
      });
    }
    if (grpc::Status st = reader->Finish(); !st.ok()) return report_status(st, a.json);
  }

  v1::RunSummary summary;
  {
    grpc::ClientContext context;
    connection->prepare(context, std::chrono::seconds(60));
    v1::GetRunRequest get;
    get.set_run_id(run_id);
    if (grpc::Status st = kernel->GetRun(&context, get, &summary); !st.ok()) return report_status(st, a.json);
  }
  if (summary.result_json().empty()) {
    // The server's build child ended without its summary (it died, or failed before one).
    return cli::report_error(Error{Errc::io_error, "run " + run_id + " ended " + v1::RunStatus_Name(summary.status()) +
                                                       " without a summary from the server" +
                                                       (summary.reason().empty() ? "" : ": " + summary.reason())},
                             a.json, kVerificationFailed);
  }
  auto result = parse_json(summary.result_json(), "the server's result_json");
  if (!result || !result->is_object()) {
    return cli::report_error(result ? Error{Errc::invalid_argument, "the server's result_json is not an object"} : result.error(), a.json);
  }
  result->erase("type");
  print_whole([&] {
    if (a.json) {
      cli::print_json(*result);
    } else {
      cli::print_build_summary(*result, repository, ledger);
    }
  });
  auto status = kernel::parse_run_status(result->value("status", std::string()));
  return status ? cli::run_exit_code(*status) : kVerificationFailed;
}

}  // namespace

void add_client_build(CLI::App& client, Action& action) {
  auto a = std::make_shared<BuildArgs>();
  auto* cmd = client.add_subcommand("build", "warden build on a server: start the run, print its events as they happen, "
                                             "then its summary");
  cmd->add_option("blueprint", a->blueprint,
                  "A blueprint the server serves (its name: `warden serve --blueprints DIR` has DIR/NAME), or a "
                  "self-contained BlueprintSpec JSON file, sent whole");
  cmd->add_option("--plan", a->plan_sha256,
                  "Instead of a blueprint: the SHA-256 of a plan committed to the server's ledger (the repository starts "
                  "empty when new)");
  add_connect_options(*cmd, a->connect);
  cmd->add_option("--repository", a->repository, "The server's repository to build in (STATE/repos/NAME; default the blueprint's or plan's name)");
  cmd->add_option("--executor", a->executor, "plan, command:CMD (runs on the server; its token needs role admin) or remote")
      ->capture_default_str();
  cmd->add_option("--label", a->label, "With --executor remote: the label the remote executor attaches with");
  cmd->add_option("--executor-identity", a->serving_identity,
                  "With --executor remote: the token name whose executor serves the run (default: this token's)");
  cmd->add_option("--policy", a->policy, "A built-in policy name (default: the blueprint's or plan's)");
  cmd->add_option("--clock", a->clock, "system, or logical for golden runs")->check(CLI::IsMember({"system", "logical"}));
  cmd->add_option("--checks-on", a->checks_on,
                  "local (the server's own sandbox, the default) or runners (the `warden runner` processes enrolled "
                  "with the server, each in its own sandbox; the run waits for one)")
      ->check(CLI::IsMember({"local", "runners"}));
  cmd->add_option("--runner-quorum", a->runner_quorum,
                  "K/N with --checks-on runners: each run of checks goes to N runners of distinct identities and counts "
                  "once K return the same result (default 1/1)");
  cmd->add_option("--step-timeout", a->step_timeout_s, "Watchdog budget per step in seconds (default: the plan's)")
      ->check(CLI::Range(0.001, 86400.0));
  cmd->add_flag("--json", a->json, "Print the run's events as JSON Lines, then the summary as the result line");
  cmd->footer("Exit: as warden build (0 completed, 1 failed, 124 timeout, 130 cancelled), and for the server's errors: 2 "
              "the token is missing, wrong or lacks the role, 3 invalid request, 4 no such blueprint, 5 no server answers.");
  cmd->callback([a, &action] { action = [a] { return guarded(a->json, [a] { return run(*a); }); }; });
}

}  // namespace warden::grpc_client
