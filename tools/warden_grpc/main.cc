// `warden-grpc`: the kernel service and its clients, apart from the `warden` binary so the
// command line does not load gRPC and protobuf (their static initializers and relocations)
// in every process. `warden serve ...` runs `warden-grpc serve ...`, and `warden build|run
// status|run cancel|run watch --server ...` run `warden-grpc client ...`
// (tools/warden_grpc/client_commands.h).
#include <CLI/CLI.hpp>

#include <iostream>
#include <string_view>

#include "common/exit_codes.h"
#include "service/server.h"
#include "tools/warden_grpc/client_commands.h"

int main(int argc, char** argv) {
  // Named "warden": users meet it as `warden serve`.
  CLI::App app{"warden serve: Warden's gRPC service", "warden"};
  app.require_subcommand(1);
  warden::service::ServeOptions options;
  std::string state, ledger, socket;
  auto* serve = app.add_subcommand(
      "serve", "Serve the kernel over gRPC (package warden.v1, proto/warden.proto) on a unix socket, and on TCP with "
               "--listen or --insecure-listen (both need --tokens), until SIGTERM");
  serve->add_option("--state", state, "State directory: socket, ledger, caches (created 0700 when missing)")->required();
  serve->add_option("--ledger", ledger, "Ledger directory (default STATE/ledger)");
  serve->add_option("--socket", socket, "Unix socket path (default STATE/warden.sock; created mode 0600)");
  std::string tokens, blueprints;
  serve->add_option("--max-message-bytes", options.max_message_bytes,
                    "Largest message a client may send (a proposal, a blueprint); larger: RESOURCE_EXHAUSTED")
      ->capture_default_str()
      ->check(CLI::Range(size_t{1024}, size_t{1} << 30));
  serve->add_option("--max-runs", options.max_runs, "Runs live at once (each a process with its sandboxes); past it StartRun: RESOURCE_EXHAUSTED")
      ->capture_default_str()
      ->check(CLI::Range(size_t{1}, size_t{4096}));
  serve->add_option("--max-calls", options.max_calls,
                    "Calls served at once (each watch and attached executor holds one; one caller holds at most a quarter "
                    "of them in watches and attached executors); past it: RESOURCE_EXHAUSTED")
      ->capture_default_str()
      ->check(CLI::Range(8, 10000));
  serve->add_option("--blueprints", blueprints,
                    "Blueprints StartRun may name: DIR/<name>/blueprint.json with its seed and files (default STATE/blueprints)");
  serve->add_option("--tokens", tokens,
                    "Tokens file: {\"tokens\": [{\"name\", \"sha256\": \"sha256:<hex of the token>\", \"roles\": "
                    "[observer|executor|runner|admin]}]}; every call but health (server reflection included) then needs `authorization: Bearer <token>`");
  serve->add_option("--store", options.fleet.store,
                    "The fleet's state store: lmdb (STATE/fleet, this server alone), redis://HOST:PORT[/DB] or "
                    "unix:PATH (a Redis several servers share as one fleet)")
      ->capture_default_str();
  int64_t task_expiry_s = 3600;
  serve->add_option("--task-expiry-s", task_expiry_s,
                    "A runner check task still queued this many seconds after it was queued is expired, with a fleet "
                    "event, by any server on the store: its server is gone for good (a restarted server expires its own "
                    "at once), or no runner took it")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{30} * 24 * 3600));
  serve->add_option("--heartbeat-interval-ms", options.fleet.supervisor.heartbeat_interval_ms,
                    "How often runners heartbeat; one silent for --missed-heartbeats intervals (plus 100 ms) is failed "
                    "and its task runs elsewhere")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{50}, int64_t{600'000}));
  std::string agents;
  serve->add_option("--agents", agents,
                    "Agents to start and keep running, restarted with backoff, intensity and circuit breaker: "
                    "{\"agents\": [{\"id\", \"command\": [...], \"role\", \"labels\", \"env\"}], \"restart\": {...}}");
  serve->add_option("--missed-heartbeats", options.fleet.supervisor.missed_heartbeats,
                    "Intervals without a heartbeat before a runner is failed")
      ->capture_default_str()
      ->check(CLI::Range(1u, 100u));
  std::string tls_cert, tls_key, client_ca;
  auto* listen = serve->add_option("--listen", options.tcp.tls_address,
                                   "Also serve TCP with TLS on HOST:PORT ([IPV6]:PORT; port 0: any free one, logged)");
  serve->add_option("--tls-cert", tls_cert, "PEM certificate chain of --listen, the server's certificate first")->needs(listen);
  serve->add_option("--tls-key", tls_key, "PEM private key of --tls-cert: a regular file readable by you alone (0600)")
      ->needs(listen);
  serve->add_option("--client-ca", client_ca, "PEM CA certificates: with it --listen is mutual TLS, and clients must show "
                                              "a certificate issued by one of them")
      ->needs(listen);
  listen->needs("--tls-cert")->needs("--tls-key");
  serve->add_option("--insecure-listen", options.tcp.insecure_address,
                    "Also serve plaintext TCP on HOST:PORT; loopback addresses only (127.0.0.0/8, ::1, localhost)");
  serve->add_option("--sandbox-profile", options.sandbox_profile, "Sandbox profile whose preflight gates serving runs")
      ->capture_default_str();
  warden::grpc_client::Action client;
  warden::grpc_client::add_client_commands(app, client);
  warden::grpc_client::add_runner_command(app, client);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const bool client_words = argc > 1 && (std::string_view(argv[1]) == "client" || std::string_view(argv[1]) == "runner");
    if (client_words && e.get_exit_code() != 0) return warden::grpc_client::report_usage_error(e, argc, argv);
    int code = app.exit(e);
    return code == 0 ? 0 : warden::kUsage;
  }
  if (client) return client();
  options.state_dir = state;
  options.ledger = ledger;
  options.socket = socket;
  options.tokens = tokens;
  options.fleet.task_expiry = std::chrono::seconds(task_expiry_s);
  options.blueprints = blueprints;
  options.agents = agents;
  options.tcp.tls = {tls_cert, tls_key, client_ca};
  try {
    auto served = warden::service::serve(options, std::cerr);
    if (!served) {
      std::cerr << "warden: error: " << served.error().message << "\n";
      return warden::exit_code_for(served.error().code);
    }
    return warden::kOk;
  } catch (const std::exception& e) {
    std::cerr << "warden: internal error: " << e.what() << "\n";
    return warden::kInternal;
  }
}
