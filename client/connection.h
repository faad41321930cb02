// A client's connection to a `warden serve`: where the server is, how to reach it (unix
// socket, TCP with or without TLS), and the bearer token every call carries. The CLI's
// `warden-grpc client` commands and the remote runner (runner/agent/) connect through it.
//
// A Connection is one channel to one server, used from one thread; contexts it prepares carry
// the token. Errors are for the caller to report: a token file others can read, an address
// that names nothing, a server that does not answer.
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "common/error.h"

namespace warden::client {

struct ConnectOptions {
  // A unix socket path, unix:PATH, or HOST:PORT (TCP: TLS with --tls-ca, else plaintext,
  // which a token is never sent over unless HOST is a loopback address).
  std::string server;
  std::string token_file;                    // the bearer token's file, mode 0600 or stricter
  std::string tls_ca, tls_cert, tls_key;     // PEM files: the server's CA; the client's own
  // Ping the server every 20 s while a call is open, and drop a connection that does not
  // answer within 10 s: a long-lived stream (a runner's) notices a server that vanished
  // without closing its connection, instead of after TCP gives up (~15 minutes).
  bool keepalive = false;
};

class Connection {
 public:
  // Reads the token and TLS files and waits up to `timeout` for the channel to be ready.
  // not_found: a socket path that does not exist; io_error: nothing answers (or the TLS
  // handshake fails); invalid_argument: a token file others can read, or a bad address.
  static Result<Connection> open(const ConnectOptions& options, std::chrono::seconds timeout = std::chrono::seconds(10));

  std::shared_ptr<grpc::Channel> channel() const { return channel_; }
  // Sets the token's metadata and, when given, a deadline from now.
  void prepare(grpc::ClientContext& context, std::optional<std::chrono::seconds> deadline) const;
  const std::string& address() const { return address_; }

 private:
  std::shared_ptr<grpc::Channel> channel_;
  std::string address_;  // as the user gave it
  std::string token_;
};

}  // namespace warden::client
