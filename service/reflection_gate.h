// Server reflection behind the tokens. gRPC's reflection service (grpc++_reflection) registers
// itself into every server of a process that links it, and it checks no token: with a tokens
// file it would tell anyone who reaches a listener every service and message the server
// has. The gate is a server interceptor: a reflection call whose caller shows no token the
// tokens file knows (any role will do) is cancelled as its metadata arrives, before the
// service reads its request. Other methods pass untouched (each service checks its own
// roles; health stays open). Without tokens every caller is the socket's owner and passes.
//
// Thread-safe: gRPC creates one interceptor per call, from any thread.
#pragma once

#include <grpcpp/support/server_interceptor.h>

#include <memory>

#include "service/tokens.h"

namespace warden::service {

// A factory for ServerBuilder::experimental().SetInterceptorCreators; it keeps a copy of
// `tokens` (copies share the file's state, so a changed file applies at once).
std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> reflection_gate(const TokenTable& tokens);

}  // namespace warden::service
