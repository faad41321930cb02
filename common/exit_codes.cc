#include "common/exit_codes.h"

namespace warden {

ExitCode exit_code_for(Errc code) {
  switch (code) {
    case Errc::verification_failed:
    case Errc::failed_precondition:
    case Errc::corrupt: return kVerificationFailed;
    case Errc::invalid_argument:
    case Errc::limit_exceeded: return kInvalidInput;
    case Errc::not_found: return kNotFound;
    case Errc::io_error: return kIoError;
    case Errc::already_exists: return kAlreadyExists;
    case Errc::internal: return kInternal;
  }
  return kInternal;
}

ExitCode exit_code_for(RefusalCode code) {
  switch (code) {
    case RefusalCode::malformed_patch:
    case RefusalCode::malformed_diff:
    case RefusalCode::patch_too_large:
    case RefusalCode::hunk_count_mismatch:
    case RefusalCode::invalid_branch:
    case RefusalCode::invalid_check: return kInvalidInput;
    case RefusalCode::repository_not_found:
    case RefusalCode::revision_not_found: return kNotFound;
    case RefusalCode::repository_error:
    case RefusalCode::runner_error:
    case RefusalCode::sandbox_unavailable:
    case RefusalCode::workspace_error: return kIoError;
    default: return kVerificationFailed;
  }
}

Errc errc_for_exit(int code) {
  switch (code) {
    case kVerificationFailed: return Errc::verification_failed;
    case kUsage:
    case kInvalidInput: return Errc::invalid_argument;
    case kNotFound: return Errc::not_found;
    case kIoError: return Errc::io_error;
    case kAlreadyExists: return Errc::already_exists;
    default: return Errc::internal;
  }
}

}  // namespace warden
