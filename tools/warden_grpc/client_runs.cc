// `warden-grpc client run-status|run-cancel|run-watch RUN --server ADDR` (what `warden run
// status|cancel|watch --server` run): a run's state, its cancellation and its events from a
// server, printed as the local commands print them from a ledger. The server's answers are
// the local commands' JSON (RunSummary.report_json is `warden run status --json`'s state; its
// events are the recorded ones), so the rendering is the local one (tools/warden/run_view.h).
#include <warden.grpc.pb.h>

#include <iostream>
#include <sstream>

#include "common/exit_codes.h"
#include "tools/warden/json_lines.h"
#include "tools/warden/run_view.h"
#include "tools/warden_grpc/client_commands.h"
#include "tools/warden_grpc/client_events.h"

namespace warden::grpc_client {
namespace {

struct RunArgs {
  ConnectOptions connect;
  std::string run_id;
  uint64_t from_seq = 0;
  double wait_s = 30;
  bool json = false, follow = false;
};

// What the server's ledger needs to record an interrupted run's end, said from this side.
std::string recover_command(const RunArgs& a) {
  return "warden run recover " + a.run_id + " --ledger LEDGER, on the server,";
}

// The run's state as `warden run status --json` prints it; not_found for a pipeline run (whose
// state the server's Pipeline service shows).
Result<Json> report_of(const v1::RunSummary& summary) {
  if (summary.report_json().empty()) {
    return fail(Errc::not_found, "run " + summary.run_id() + " is a pipeline run: the server's Pipeline.Watch shows it");
  }
  auto report = parse_json(summary.report_json(), "the server's report_json");
  if (!report) return std::unexpected(report.error());
  if (!report->is_object()) return fail(Errc::invalid_argument, "the server's report_json is not an object");
  return report;
}

// Prints the run's events from `from_seq` as they are recorded, until the terminal one (OK),
// or the server's reason the watch ended (ABORTED: the run has no process and no recorded end).
grpc::Status watch(v1::Kernel::Stub& kernel, const Connection& connection, const RunArgs& a, std::optional<Error>& bad) {
  grpc::ClientContext context;
  connection.prepare(context, std::nullopt);
  v1::WatchRunRequest request;
  request.set_run_id(a.run_id);
  request.set_from_seq(a.from_seq);
  auto reader = kernel.WatchRun(&context, request);
  v1::RunEvent message;
  while (reader->Read(&message)) {
    auto event = event_from_proto(message);
    if (!event) {
      bad = event.error();
      context.TryCancel();
      break;
    }
    print_whole([&] { cli::print_followed_event(*event, a.json); });
  }
  return reader->Finish();
}

// The run as the server has it now.
grpc::Status get_run(v1::Kernel::Stub& kernel, const Connection& connection, const std::string& run_id, v1::RunSummary& out) {
  grpc::ClientContext context;
  connection.prepare(context, std::chrono::seconds(60));
  v1::GetRunRequest request;
  request.set_run_id(run_id);
  return kernel.GetRun(&context, request, &out);
}

int run_status(const RunArgs& a) {
  auto connection = Connection::open(a.connect);
  if (!connection) return cli::report_error(connection.error(), a.json);
  auto kernel = v1::Kernel::NewStub(connection->channel());
  v1::RunSummary summary;
  if (grpc::Status st = get_run(*kernel, *connection, a.run_id, summary); !st.ok()) return report_status(st, a.json);
  // A pipeline run: its line, as the local command prints it, and where its details are.
  if (summary.kind() == v1::RUN_KIND_PIPELINE && !summary.entry_json().empty()) {
    auto entry = parse_json(summary.entry_json(), "the server's entry_json");
    if (!entry || !entry->is_object()) {
      return cli::report_error(entry ? Error{Errc::invalid_argument, "the server's entry_json is not an object"} : entry.error(), a.json);
    }
    print_whole([&] { cli::print_pipeline_run(*entry, "Pipeline.Watch of run " + a.run_id + " on " + connection->address(), a.json); });
    return kOk;
  }
  if (a.follow) {
    std::optional<Error> bad;
    grpc::Status st = watch(*kernel, *connection, a, bad);
    if (bad) return cli::report_error(*bad, a.json);
    // ABORTED: the run's process is gone without an end; its state below says so.
    if (!st.ok() && st.error_code() != grpc::StatusCode::ABORTED) return report_status(st, a.json);
    if (!a.json) std::cout << "\n";
    summary.Clear();
    if (grpc::Status st = get_run(*kernel, *connection, a.run_id, summary); !st.ok()) return report_status(st, a.json);
  }
  auto report = report_of(summary);
  if (!report) return cli::report_error(report.error(), a.json);
  print_whole([&] { cli::print_run_state(*report, a.json, a.follow, recover_command(a)); });
  return kOk;
}

int run_cancel(const RunArgs& a) {
  auto connection = Connection::open(a.connect);
  if (!connection) return cli::report_error(connection.error(), a.json);
  auto kernel = v1::Kernel::NewStub(connection->channel());
  // The server does the waiting (wait_ms) and says when the run has not ended by then. The
  // call's own deadline is longer by the time an answer takes: a deadline of --wait alone may
  // pass before the request reaches the server, and then no cancel was asked at all.
  const auto wait = std::chrono::milliseconds(static_cast<int64_t>(a.wait_s * 1000));
  constexpr auto kAnswerMargin = std::chrono::seconds(30);
  grpc::ClientContext context;
  connection->prepare(context, std::nullopt);
  context.set_deadline(std::chrono::system_clock::now() + std::min<std::chrono::milliseconds>(wait, std::chrono::seconds(30)) +
                       kAnswerMargin);
  v1::CancelRunRequest request;
  request.set_run_id(a.run_id);
  request.set_wait_ms(static_cast<uint32_t>(std::min<int64_t>(wait.count(), UINT32_MAX)));
  v1::RunSummary summary;
  if (grpc::Status st = kernel->CancelRun(&context, request, &summary); !st.ok()) {
    if (st.error_code() != grpc::StatusCode::DEADLINE_EXCEEDED) return report_status(st, a.json);
    std::ostringstream message;
    if (st.error_message().find("the cancel request stands") != std::string::npos) {
      message << "run " << a.run_id << " had not ended after " << a.wait_s << " s; the cancel request stands";
    } else {
      message << "the server did not answer the cancel of run " << a.run_id << " in time; whether it was asked is unknown "
              << "(`warden run status " << a.run_id << " --server ...` tells)";
    }
    return report_status(grpc::Status(st.error_code(), message.str()), a.json);
  }
  auto report = report_of(summary);
  if (!report) return cli::report_error(report.error(), a.json);
  // As `warden run cancel` prints it: the ended run's report, which says nothing of a process.
  report->erase("live");
  report->erase("recorded_status");
  print_whole([&] {
    if (a.json) {
      cli::print_json(*report);
    } else {
      cli::print_run_report(*report);
    }
  });
  return report->value("status", std::string()) == "cancelled" ? kOk : kVerificationFailed;
}

int run_watch(const RunArgs& a) {
  auto connection = Connection::open(a.connect);
  if (!connection) return cli::report_error(connection.error(), a.json);
  auto kernel = v1::Kernel::NewStub(connection->channel());
  std::optional<Error> bad;
  grpc::Status st = watch(*kernel, *connection, a, bad);
  if (bad) return cli::report_error(*bad, a.json);
  return st.ok() ? kOk : report_status(st, a.json);
}

CLI::App* run_command(CLI::App& client, const std::string& name, const std::string& help, RunArgs& a) {
  auto* cmd = client.add_subcommand(name, help);
  cmd->add_option("RUN_ID", a.run_id, "The run's id")->required();
  add_connect_options(*cmd, a.connect);
  return cmd;
}

}  // namespace

void add_client_run_commands(CLI::App& client, Action& action) {
  auto a = std::make_shared<RunArgs>();
  auto* status = run_command(client, "run-status", "warden run status on a server: the run's state as its ledger records it", *a);
  status->add_flag("--follow,-f", a->follow, "Print every event recorded so far and then each new one, until the run ends; then the state");
  status->add_flag("--json", a->json, "Print JSON (with --follow: one event per line first, the state last)");
  status->footer("Exit: 0 the run exists (whatever its state), 4 no such run, 2 the token does not do, 5 no server answers.");
  status->callback([a, &action] { action = [a] { return guarded(a->json, [a] { return run_status(*a); }); }; });

  auto* cancel = run_command(client, "run-cancel", "warden run cancel on a server: stop a live run and print its final state", *a);
  cancel->add_option("--wait", a->wait_s, "Seconds to wait for the run to end (0: ask, and do not wait; the server waits 30 at most)")
      ->check(CLI::Range(0.0, 86400.0))
      ->capture_default_str();
  cancel->add_flag("--json", a->json, "Print the run's final state as JSON");
  cancel->footer("Exit: 0 cancelled, 1 the run had ended (or ended otherwise first), 4 no such run, 124 the run had not "
                 "ended within --wait (or the server's 30 s), 2 the token does not do, 5 no server answers.");
  cancel->callback([a, &action] { action = [a] { return guarded(a->json, [a] { return run_cancel(*a); }); }; });

  auto* watch = run_command(client, "run-watch", "warden run watch on a server: the run's events as they are recorded, until its terminal one", *a);
  watch->add_option("--from-seq", a->from_seq, "Start at this ledger seq (the last one seen + 1 resumes a watch)");
  watch->add_flag("--json", a->json, "Print each event as its recorded JSON, one per line");
  watch->footer("Exit: 0 the run ended, 1 it has no live process and no recorded end, 4 no such run, 2 the token does "
                "not do, 5 no server answers.");
  watch->callback([a, &action] { action = [a] { return guarded(a->json, [a] { return run_watch(*a); }); }; });
}

}  // namespace warden::grpc_client
