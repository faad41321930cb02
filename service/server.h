// The kernel service process: `warden serve`. One server over one state directory, on a unix
// socket (mode 0600, in the state directory) by default.
//
// Health (grpc.health.v1, service/health_service.h): "warden.v1.Ledger" is SERVING once the ledger is open,
// "warden.v1.Kernel" once the sandbox preflight has passed too, and "" (the server as a
// whole) when both are; all go NOT_SERVING when a shutdown begins. Server reflection is on, so
// generic tools (grpcurl, grpc_cli) can list and call the services.
#pragma once

#include <filesystem>
#include <ostream>
#include <string>

#include "common/error.h"

namespace warden::service {

struct ServeOptions {
  std::filesystem::path state_dir;  // created 0700 when missing; refused when others can write it
  std::filesystem::path ledger;     // default <state_dir>/ledger
  std::filesystem::path socket;     // default <state_dir>/warden.sock
  std::string sandbox_profile = "default";
  std::filesystem::path tokens;     // service/tokens.h; none: the socket's own user only
};

// Serves until SIGTERM or SIGINT, then stops accepting, lets calls in flight finish (at most
// 5 s), removes the socket and returns. Blocks both signals in the calling thread before any
// server thread starts, so it must be called before other threads exist. Errors: the state
// directory or socket unusable, another server on the socket (already_exists), no ledger.
// Progress lines go to `log`.
Status serve(const ServeOptions& options, std::ostream& log);

}  // namespace warden::service
