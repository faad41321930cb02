// `warden-grpc`: the kernel service and its clients, apart from the `warden` binary so the
// command line does not load gRPC and protobuf (their static initializers and relocations)
// in every process. `warden serve ...` runs `warden-grpc serve ...`.
#include <CLI/CLI.hpp>

#include <iostream>

#include "common/exit_codes.h"
#include "service/server.h"

int main(int argc, char** argv) {
  // Named "warden": users meet it as `warden serve`.
  CLI::App app{"warden serve: Warden's gRPC service", "warden"};
  app.require_subcommand(1);
  warden::service::ServeOptions options;
  std::string state, ledger, socket;
  auto* serve = app.add_subcommand(
      "serve", "Serve the kernel over gRPC (package warden.v1, proto/warden.proto) on a unix socket, until SIGTERM");
  serve->add_option("--state", state, "State directory: socket, ledger, caches (created 0700 when missing)")->required();
  serve->add_option("--ledger", ledger, "Ledger directory (default STATE/ledger)");
  serve->add_option("--socket", socket, "Unix socket path (default STATE/warden.sock; created mode 0600)");
  std::string tokens;
  serve->add_option("--tokens", tokens,
                    "Tokens file: {\"tokens\": [{\"name\", \"sha256\": \"sha256:<hex of the token>\", \"roles\": "
                    "[observer|executor|admin]}]}; every call but health then needs `authorization: Bearer <token>`");
  serve->add_option("--sandbox-profile", options.sandbox_profile, "Sandbox profile whose preflight gates serving runs")
      ->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : warden::kUsage;
  }
  options.state_dir = state;
  options.ledger = ledger;
  options.socket = socket;
  options.tokens = tokens;
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
