// warden serve: runs `warden-grpc serve` (the gRPC service lives in its own binary, beside
// this one, so that every other command starts without loading gRPC and protobuf;
// tools/warden/warden_grpc_exec.h).
#include "tools/warden/cli.h"
#include "tools/warden/warden_grpc_exec.h"

namespace warden::cli {

void add_serve_commands(CLI::App& app, Action& action) {
  auto* serve = app.add_subcommand(
      "serve", "Serve the kernel over gRPC (proto/warden.proto, package warden.v1) on a unix socket in the state "
               "directory (mode 0600) until SIGTERM; health (grpc.health.v1) and server reflection included. "
               "Options: --state DIR (required), --ledger DIR, --socket PATH, --tokens FILE, --listen HOST:PORT "
               "--tls-cert FILE --tls-key FILE [--client-ca FILE] (TCP with TLS or mutual TLS), --insecure-listen "
               "HOST:PORT (plaintext, loopback only), --sandbox-profile NAME.");
  serve->allow_extras();
  serve->prefix_command();
  serve->set_help_flag();  // --help goes to warden-grpc, which knows the options
  serve->callback([&action, serve] {
    action = [args = serve->remaining()] {
      std::vector<std::string> argv{"serve"};
      argv.insert(argv.end(), args.begin(), args.end());
      return exec_warden_grpc(argv, false);
    };
  });
}

}  // namespace warden::cli
