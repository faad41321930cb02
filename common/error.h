// The one error type Warden passes around. Functions that can fail for reasons a caller
// should handle return Result<T> (std::expected); exceptions are kept for true boundaries.
#pragma once

#include <expected>
#include <string>
#include <string_view>
#include <utility>

namespace warden {

enum class Errc {
  invalid_argument,     // the caller's input is malformed or out of range
  not_found,            // a named thing (file, record, key) does not exist
  already_exists,       // creating something that is already there
  failed_precondition,  // the state of a named thing rules the request out (a branch past its base)
  io_error,             // the OS or storage refused (permissions, disk, locks)
  corrupt,              // stored or imported data fails its own integrity checks
  verification_failed,  // a proof, signature or hash check did not hold
  limit_exceeded,       // a size or count bound was hit
  internal,             // a bug or an unexpected library failure
};

std::string_view errc_name(Errc code);

struct Error {
  Errc code;
  std::string message;

  // "what: message" keeps context as errors travel up.
  Error with_context(std::string_view what) const {
    return Error{code, std::string(what) + ": " + message};
  }
};

template <typename T>
using Result = std::expected<T, Error>;
using Status = std::expected<void, Error>;

inline std::unexpected<Error> fail(Errc code, std::string message) {
  return std::unexpected<Error>(Error{code, std::move(message)});
}

}  // namespace warden
