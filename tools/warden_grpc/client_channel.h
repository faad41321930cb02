// What every `warden-grpc client` command shares: the connection (client/connection.h) and
// the server's errors as the CLI's. `warden build|run status|run cancel|run
// watch --server ADDR` run these commands (tools/warden/server_client.h).
//
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "client/connection.h"
#include "common/error.h"

namespace warden::grpc_client {

using client::ConnectOptions;
using client::Connection;

// A failed call reported as the CLI reports errors: "warden: error: MESSAGE" on stderr and,
// with `json`, the stream's error line. Returns the exit code for it: INVALID_ARGUMENT 3,
// NOT_FOUND 4, UNAVAILABLE 5, ALREADY_EXISTS 6, RESOURCE_EXHAUSTED 3, FAILED_PRECONDITION and
// ABORTED 1 (the run is not in a state for it), DATA_LOSS 1, UNAUTHENTICATED and
// PERMISSION_DENIED 2 (the credentials given on the command line do not do), DEADLINE_EXCEEDED
// 124, CANCELLED 130, anything else 5 (the service failed).
int report_status(const grpc::Status& status, bool json);

}  // namespace warden::grpc_client
