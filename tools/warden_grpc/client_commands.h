// `warden-grpc client ...`: the `warden` commands that run against a server (`warden build|run
// status|run cancel|run watch --server ADDR` exec these, with every argument), printing what
// the local commands print. One file per group: client_build.cc, client_runs.cc.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>

#include "tools/warden_grpc/client_channel.h"

namespace warden::grpc_client {

// The action a parsed subcommand runs; returns the exit code.
using Action = std::function<int()>;

// `client` and its subcommands, added to `app`.
void add_client_commands(CLI::App& app, Action& action);

// --server, --token and the TLS flags, on `cmd`.
void add_connect_options(CLI::App& cmd, ConnectOptions& options);
void add_client_build(CLI::App& client, Action& action);
void add_client_run_commands(CLI::App& client, Action& action);
void add_client_agent_commands(CLI::App& client, Action& action);  // agents-list|show|drain|forget
// `runner`: a runner process for a server (tools/warden_grpc/runner_command.cc).
void add_runner_command(CLI::App& app, Action& action);

// A command line the client cannot parse, reported as `warden` reports one: one line on stderr
// and, when it asks for --json, the stream's error line. Returns 2.
int report_usage_error(const CLI::ParseError& error, int argc, char** argv);

// Runs `command`, turning an answer of the server that does not read as Warden's (a field of
// the wrong JSON type) into an error report (3) instead of a crash, and any other exception
// into the internal error `warden` reports (70).
int guarded(bool json, const Action& command);

// Runs `render` (which prints on std::cout) into a buffer and prints the buffer once it
// returns: what the renderer cannot read (it throws) prints nothing rather than half a line.
void print_whole(const std::function<void()>& render);

}  // namespace warden::grpc_client
