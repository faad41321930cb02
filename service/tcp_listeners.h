// The TCP ports of `warden serve`, besides its unix socket: `--listen HOST:PORT` with TLS
// (mutual TLS with --client-ca), and `--insecure-listen HOST:PORT`, plaintext, which only a
// loopback address may have: anyone on the network could otherwise read the tokens sent.
//
// A plaintext host is resolved here, every address it resolves to must be loopback
// (127.0.0.0/8, ::1, an IPv4 address mapped into IPv6 in 127/8), and gRPC is given those
// numeric addresses, so a name cannot resolve to one address when checked and to another when
// bound. A TLS host goes to gRPC as given.
//
// Plain values and free functions: nothing is shared, any thread may call them.
#pragma once

#include <grpcpp/security/server_credentials.h>

#include <memory>
#include <string>
#include <vector>

#include "common/error.h"
#include "service/tls_credentials.h"

namespace warden::service {

struct TcpListenOptions {
  std::string tls_address;       // --listen HOST:PORT ([V6]:PORT); empty: none. Needs tls.cert, tls.key
  TlsFiles tls;
  std::string insecure_address;  // --insecure-listen HOST:PORT; empty: none

  bool any() const { return !tls_address.empty() || !insecure_address.empty(); }
};

// One TCP address the server listens on.
struct TcpListener {
  std::string host;  // as gRPC is given it; an IPv6 address in brackets
  int port = 0;      // as asked; 0: any free port
  std::shared_ptr<grpc::ServerCredentials> credentials;
  std::string security;   // for the log: "TLS", "mutual TLS", "plaintext, loopback only"
  int selected_port = 0;  // set by gRPC when it listens: the real port; 0 when it could not

  std::string address() const { return host + ":" + std::to_string(port); }
};

// The listeners `options` asks for, their credentials loaded and checked. invalid_argument for
// an address that does not parse, a plaintext address that is not loopback, or TLS files that
// are unusable (service/tls_credentials.h); not_found for a host that does not resolve.
Result<std::vector<TcpListener>> tcp_listeners(const TcpListenOptions& options);

// Why gRPC could not listen on every one of `listeners` (the first whose selected_port is
// still 0): already_exists when its port is in use, invalid_argument when its host is not an
// address of this machine, io_error otherwise.
Error listen_failure(const std::vector<TcpListener>& listeners);

}  // namespace warden::service
