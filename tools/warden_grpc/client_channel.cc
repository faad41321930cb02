#include "tools/warden_grpc/client_channel.h"

#include <iostream>

#include "common/exit_codes.h"
#include "tools/warden/json_lines.h"
#include "tools/warden/run_view.h"

namespace warden::grpc_client {

int report_status(const grpc::Status& status, bool json) {
  std::string_view code = errc_name(Errc::io_error);
  int exit_code = kIoError;
  switch (status.error_code()) {
    case grpc::StatusCode::INVALID_ARGUMENT: code = errc_name(Errc::invalid_argument), exit_code = kInvalidInput; break;
    case grpc::StatusCode::NOT_FOUND: code = errc_name(Errc::not_found), exit_code = kNotFound; break;
    case grpc::StatusCode::ALREADY_EXISTS: code = errc_name(Errc::already_exists), exit_code = kAlreadyExists; break;
    case grpc::StatusCode::RESOURCE_EXHAUSTED: code = errc_name(Errc::limit_exceeded), exit_code = kInvalidInput; break;
    case grpc::StatusCode::FAILED_PRECONDITION: code = errc_name(Errc::failed_precondition), exit_code = kVerificationFailed; break;
    case grpc::StatusCode::ABORTED: code = errc_name(Errc::verification_failed), exit_code = kVerificationFailed; break;
    case grpc::StatusCode::DATA_LOSS: code = errc_name(Errc::corrupt), exit_code = kVerificationFailed; break;
    case grpc::StatusCode::UNAUTHENTICATED: code = "unauthenticated", exit_code = kUsage; break;
    case grpc::StatusCode::PERMISSION_DENIED: code = "permission_denied", exit_code = kUsage; break;
    case grpc::StatusCode::DEADLINE_EXCEEDED: code = "deadline_exceeded", exit_code = kTimedOut; break;
    case grpc::StatusCode::CANCELLED: code = "cancelled", exit_code = kCancelled; break;
    default: break;
  }
  const std::string message = status.error_message().empty() ? "the server answered " + std::to_string(status.error_code())
                                                             : status.error_message();
  std::cerr << "warden: error: " << message << "\n";
  if (json) cli::print_error_line(code, message, exit_code);
  return exit_code;
}

}  // namespace warden::grpc_client
