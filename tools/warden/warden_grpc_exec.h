// The commands of `warden` that talk gRPC run as `warden-grpc` (beside this binary), so that
// `warden` itself never loads gRPC and protobuf: `warden serve` is `warden-grpc serve`, and
// `warden build|run status|run cancel|run watch --server ADDR ...` is `warden-grpc client
// build|run-status|run-cancel|run-watch ...` with the same arguments.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace warden::cli {

// The warden-grpc arguments for a command line that asks for a server (--server before any
// `--`), or nothing: the command runs locally.
std::optional<std::vector<std::string>> server_client_arguments(int argc, char** argv);

// Replaces this process with warden-grpc `args`; returns only when that fails, with the exit
// code for it (4 when it is not built, 5 otherwise) after saying so (and, with `json`, the
// stream's error line).
int exec_warden_grpc(const std::vector<std::string>& args, bool json);

}  // namespace warden::cli
