#include "common/error.h"

namespace warden {

std::string_view errc_name(Errc code) {
  switch (code) {
    case Errc::invalid_argument: return "invalid_argument";
    case Errc::not_found: return "not_found";
    case Errc::already_exists: return "already_exists";
    case Errc::failed_precondition: return "failed_precondition";
    case Errc::io_error: return "io_error";
    case Errc::corrupt: return "corrupt";
    case Errc::verification_failed: return "verification_failed";
    case Errc::limit_exceeded: return "limit_exceeded";
    case Errc::internal: return "internal";
  }
  return "unknown";
}

}  // namespace warden
