// Warden's errors as gRPC statuses: the code callers branch on, the CLI's message as the
// status message, so a remote caller reads what a local one would.
#pragma once

#include <grpcpp/support/status.h>

#include "common/error.h"

namespace warden::service {

// invalid_argument -> INVALID_ARGUMENT, not_found -> NOT_FOUND, already_exists ->
// ALREADY_EXISTS, limit_exceeded -> RESOURCE_EXHAUSTED, verification_failed and corrupt ->
// FAILED_PRECONDITION / DATA_LOSS, io_error -> UNAVAILABLE, internal -> INTERNAL.
grpc::Status to_status(const Error& error);

}  // namespace warden::service
