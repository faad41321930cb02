// The TLS identity of `warden serve --listen`: the server's certificate chain and key, and the
// CA that client certificates must chain to (mutual TLS), read and checked before the server
// listens.
//
// What is checked, so that a mistake is a clear error at start-up rather than a handshake
// that fails for every client (or a gRPC abort): the key file is a regular file, not a link,
// owned by the server's user and readable by no one else (it is the server's identity); every
// file is a regular file of PEM text, at most 1 MiB; the chain's first certificate is the
// server's, valid now, and matches the key; the key is not encrypted (there is nobody to ask
// for its passphrase); the client CA file holds certificates and nothing else.
//
// Plain values and free functions: nothing is shared, any thread may call them.
#pragma once

#include <grpcpp/security/server_credentials.h>

#include <filesystem>
#include <memory>
#include <string>

#include "common/error.h"

namespace warden::service {

struct TlsFiles {
  std::filesystem::path cert;       // PEM: the server's certificate first, then its intermediates
  std::filesystem::path key;        // PEM private key of the first certificate, mode 0600 or 0400
  std::filesystem::path client_ca;  // empty: no client certificate asked for
};

// The files' PEM text, as checked.
struct TlsCredentials {
  std::string cert_chain;
  std::string private_key;
  std::string client_ca;  // empty: plain TLS
};

// invalid_argument naming the file and what is wrong with it (with the chmod to run for a key
// others can read); not_found for a file that does not exist.
Result<TlsCredentials> load_tls_credentials(const TlsFiles& files);

// gRPC's server credentials: TLS, and with a client CA, a client certificate that chains to
// it is required on every connection.
std::shared_ptr<grpc::ServerCredentials> server_credentials(const TlsCredentials& credentials);

}  // namespace warden::service
