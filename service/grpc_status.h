// Warden's errors as gRPC statuses: the code callers branch on, the CLI's message as the
// status message, so a remote caller reads what a local one would.
#pragma once

#include <grpcpp/support/status.h>

#include <cstddef>
#include <string>

#include "common/error.h"

namespace warden::service {

// invalid_argument -> INVALID_ARGUMENT, not_found -> NOT_FOUND, already_exists ->
// ALREADY_EXISTS, limit_exceeded -> RESOURCE_EXHAUSTED, failed_precondition (a branch that
// moved) and verification_failed -> FAILED_PRECONDITION, corrupt -> DATA_LOSS, io_error ->
// UNAVAILABLE, internal -> INTERNAL.
grpc::Status to_status(const Error& error);

// RESOURCE_EXHAUSTED for a caller past its share of waiting streams (service/stream_quota.h).
grpc::Status too_many_streams(const std::string& caller, size_t per_caller);

}  // namespace warden::service
