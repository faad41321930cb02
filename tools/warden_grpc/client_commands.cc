#include "tools/warden_grpc/client_commands.h"

#include <iostream>
#include <sstream>

#include <algorithm>
#include <string_view>

#include "common/canonical_json.h"
#include "common/exit_codes.h"
#include "tools/warden/json_lines.h"

namespace warden::grpc_client {

void add_connect_options(CLI::App& cmd, ConnectOptions& o) {
  cmd.add_option("--server", o.server, "The server: its unix socket's path, unix:PATH, or HOST:PORT")->required();
  cmd.add_option("--token", o.token_file,
                 "File holding the bearer token (mode 0600; a token is never given on the command line, where every "
                 "user can read it)");
  cmd.add_option("--tls-ca", o.tls_ca, "TCP with TLS: the PEM file of the CA that signed the server's certificate");
  cmd.add_option("--tls-cert", o.tls_cert, "Mutual TLS: the client's certificate (PEM)");
  cmd.add_option("--tls-key", o.tls_key, "Mutual TLS: the client's private key (PEM)");
}

int report_usage_error(const CLI::ParseError& error, int argc, char** argv) {
  std::cerr << "warden: error: " << error.what() << " (see --help)\n";
  char** words_end = std::find_if(argv + 1, argv + argc, [](const char* arg) { return std::string_view(arg) == "--"; });
  if (std::any_of(argv + 1, words_end, [](const char* arg) { return std::string_view(arg) == "--json"; })) {
    cli::print_error_line("usage", error.what(), kUsage);
  }
  return kUsage;
}

int guarded(bool json, const Action& command) {
  try {
    return command();
  } catch (const Json::exception& e) {
    return cli::report_error(Error{Errc::invalid_argument, std::string("the server's answer does not read as Warden's: ") + e.what()},
                             json);
  } catch (const std::exception& e) {
    // As `warden` reports what escapes a command: a bug, said as one.
    return cli::report_error(Error{Errc::internal, std::string("internal error: ") + e.what()}, json, kInternal);
  }
}

void print_whole(const std::function<void()>& render) {
  std::ostringstream buffer;
  std::streambuf* out = std::cout.rdbuf(buffer.rdbuf());
  try {
    render();
  } catch (...) {
    std::cout.rdbuf(out);
    throw;
  }
  std::cout.rdbuf(out);
  std::cout << buffer.str() << std::flush;
}

void add_client_commands(CLI::App& app, Action& action) {
  auto* client = app.add_subcommand(
      "client", "Run a `warden` command against a server (warden build|run status|run cancel|run watch --server ADDR "
                "run these): the same output and exit codes as the local command");
  client->require_subcommand(1);
  add_client_build(*client, action);
  add_client_run_commands(*client, action);
  add_client_agent_commands(*client, action);
}

}  // namespace warden::grpc_client
