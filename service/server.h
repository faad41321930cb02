// The kernel service process: `warden serve`. One server over one state directory, on a unix
// socket (mode 0600, in the state directory), and on TCP ports when asked
// (service/tcp_listeners.h: TLS, mutual TLS, plaintext on loopback only).
//
// Health (grpc.health.v1, service/health_service.h): "warden.v1.Ledger" is SERVING once the ledger is open,
// "warden.v1.Kernel" once the sandbox preflight has passed too, "warden.v1.Agents" and
// "warden.v1.Runners" while the fleet's loop runs and reaches its store (service/fleet.h),
// and "" (the server as a whole) when all are; all go NOT_SERVING when a shutdown begins.
//
// Server reflection is on, so generic tools (grpcurl, grpc_cli) can list and call the
// services; with tokens it needs one, of any role (service/reflection_gate.h).
#pragma once

#include <filesystem>
#include <ostream>
#include <string>

#include "common/error.h"
#include "service/fleet.h"
#include "service/tcp_listeners.h"

namespace warden::service {

struct ServeOptions {
  std::filesystem::path state_dir;  // created 0700 when missing; refused when others can write it
  std::filesystem::path ledger;     // default <state_dir>/ledger
  std::filesystem::path socket;     // default <state_dir>/warden.sock
  std::string sandbox_profile = "default";
  std::filesystem::path tokens;     // service/tokens.h; none: the socket's own user only
  std::filesystem::path blueprints; // StartRun's named blueprints: DIR/<name>/blueprint.json (default STATE/blueprints)
  TcpListenOptions tcp;             // none by default; any needs `tokens`
  // The largest message a client may send (a proposal, a blueprint): larger ones are refused
  // with RESOURCE_EXHAUSTED before they are read whole.
  size_t max_message_bytes = size_t{4} << 20;
  // Calls served at once (each watch and attached executor holds one): past it, new calls
  // get RESOURCE_EXHAUSTED instead of a thread each.
  int max_calls = 256;
  size_t max_runs = 32;  // runs live at once; past it StartRun is RESOURCE_EXHAUSTED
  // The fleet's store and supervisor settings; its state_dir is filled in from state_dir.
  FleetOptions fleet;
  // Agents the server starts and restarts itself (service/agent_spawner.h); none when empty.
  std::filesystem::path agents;
};

// Serves until SIGTERM or SIGINT, then stops accepting, lets calls in flight finish (at most
// 5 s), removes the socket and returns. Blocks both signals in the calling thread before any
// server thread starts, so it must be called before other threads exist. Errors: the state
// directory or socket unusable, another server on the socket or a TCP port in use
// (already_exists), no ledger, TCP without tokens or with unusable TLS files (invalid_argument),
// the fleet's store unreachable (io_error) or misnamed (invalid_argument).
// Progress lines go to `log`.
Status serve(const ServeOptions& options, std::ostream& log);

}  // namespace warden::service
