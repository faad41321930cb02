#include "service/grpc_status.h"

namespace warden::service {

grpc::Status to_status(const Error& error) {
  grpc::StatusCode code = grpc::StatusCode::INTERNAL;
  switch (error.code) {
    case Errc::invalid_argument: code = grpc::StatusCode::INVALID_ARGUMENT; break;
    case Errc::not_found: code = grpc::StatusCode::NOT_FOUND; break;
    case Errc::already_exists: code = grpc::StatusCode::ALREADY_EXISTS; break;
    case Errc::limit_exceeded: code = grpc::StatusCode::RESOURCE_EXHAUSTED; break;
    case Errc::verification_failed:
    case Errc::failed_precondition: code = grpc::StatusCode::FAILED_PRECONDITION; break;
    case Errc::corrupt: code = grpc::StatusCode::DATA_LOSS; break;
    case Errc::io_error: code = grpc::StatusCode::UNAVAILABLE; break;
    case Errc::internal: code = grpc::StatusCode::INTERNAL; break;
  }
  return grpc::Status(code, error.message);
}

grpc::Status too_many_streams(const std::string& caller, size_t per_caller) {
  return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                      caller + " holds " + std::to_string(per_caller) +
                          " waiting streams (Attach, WatchRun, Pipeline.Watch) already, the most one caller may (a quarter of "
                          "--max-calls): end one first");
}

}  // namespace warden::service
