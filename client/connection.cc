#include "client/connection.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <filesystem>

#include "common/file.h"

namespace warden::client {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kMaxTokenBytes = 4096;
constexpr uint64_t kMaxPemBytes = 1 << 20;
// A summary with every refusal report can be large; the server's own limit governs.
constexpr int kMaxReceiveBytes = 64 << 20;

// The token is read from a file only, never from the command line (which /proc/PID/cmdline
// shows to every user), and only from a file nobody else can read: a token others could
// have copied is refused, as `warden note sign` refuses such a key.
Result<std::string> read_token(const std::string& file) {
  // O_NONBLOCK: a FIFO put where the token should be must not hang the open.
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) {
    if (errno == ELOOP) return fail(Errc::invalid_argument, "--token " + file + " is a symlink: refused (give the token file itself, mode 0600)");
    return std::unexpected(errno_error("--token " + file, errno));
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) return std::unexpected(errno_error("--token " + file, errno));
  if (!S_ISREG(st.st_mode)) return fail(Errc::invalid_argument, "--token " + file + " is not a regular file");
  if ((st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return fail(Errc::invalid_argument, "--token " + file + " has mode " + mode +
                                            ": refused, group or others may read it (if nobody else could have read "
                                            "it: chmod 600 " + file + ")");
  }
  auto text = read_fd(fd, kMaxTokenBytes, "--token " + file);
  if (!text) return std::unexpected(text.error());
  std::string token = *text;
  while (!token.empty() && (token.back() == '\n' || token.back() == '\r' || token.back() == ' ')) token.pop_back();
  // Metadata values are visible ASCII; anything else would be refused by gRPC mid-call.
  const bool visible = std::all_of(token.begin(), token.end(), [](char c) { return c > 0x20 && c < 0x7f; });
  if (token.empty() || !visible) return fail(Errc::invalid_argument, "--token " + file + ": not a token (one line of visible ASCII)");
  return token;
}

Result<std::string> read_pem(const std::string& flag, const std::string& file) {
  auto text = read_file(file, kMaxPemBytes);
  if (!text) return std::unexpected(text.error().with_context(flag));
  return *text;
}

bool loopback_host(const std::string& target) {
  std::string host = target.substr(0, target.rfind(':'));
  if (host.starts_with("dns:///")) host = host.substr(7);
  if (host.starts_with("ipv4:")) host = host.substr(5);
  if (host.starts_with("ipv6:")) host = host.substr(5);
  return host == "localhost" || host.starts_with("127.") || host == "[::1]";
}

// The gRPC target for what the user typed, and whether it is a unix socket.
Result<std::pair<std::string, bool>> target_of(const std::string& server) {
  if (server.empty()) return fail(Errc::invalid_argument, "--server: empty");
  if (server.starts_with("unix:")) return std::pair{server, true};
  std::error_code ec;
  if (server.find('/') != std::string::npos || fs::exists(server, ec)) {
    if (!fs::exists(server, ec)) return fail(Errc::not_found, "--server " + server + ": no such socket (is `warden serve` running?)");
    return std::pair{"unix:" + server, true};
  }
  if (server.rfind(':') == std::string::npos) {
    return fail(Errc::invalid_argument, "--server " + server + ": give a socket path, unix:PATH or HOST:PORT");
  }
  return std::pair{server, false};
}

}  // namespace

Result<Connection> Connection::open(const ConnectOptions& o, std::chrono::seconds timeout) {
  auto target = target_of(o.server);
  if (!target) return std::unexpected(target.error());
  Connection c;
  c.address_ = o.server;
  if (!o.token_file.empty()) {
    auto token = read_token(o.token_file);
    if (!token) return std::unexpected(token.error());
    c.token_ = std::move(*token);
  }
  if ((!o.tls_cert.empty()) != (!o.tls_key.empty())) return fail(Errc::invalid_argument, "--tls-cert and --tls-key go together");
  const bool tls = !o.tls_ca.empty() || !o.tls_cert.empty();
  if (tls && target->second) return fail(Errc::invalid_argument, "--tls-*: a unix socket takes no TLS");
  if (!tls && !target->second && !c.token_.empty() && !loopback_host(target->first)) {
    return fail(Errc::invalid_argument, "--token over plaintext TCP to " + o.server +
                                            ": refused (the token would cross the network in the clear); give --tls-ca");
  }
  std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::InsecureChannelCredentials();
  if (tls) {
    grpc::SslCredentialsOptions ssl;
    if (!o.tls_ca.empty()) {
      auto ca = read_pem("--tls-ca", o.tls_ca);
      if (!ca) return std::unexpected(ca.error());
      ssl.pem_root_certs = std::move(*ca);
    }
    if (!o.tls_cert.empty()) {
      auto cert = read_pem("--tls-cert", o.tls_cert);
      if (!cert) return std::unexpected(cert.error());
      auto key = read_pem("--tls-key", o.tls_key);
      if (!key) return std::unexpected(key.error());
      ssl.pem_cert_chain = std::move(*cert);
      ssl.pem_private_key = std::move(*key);
    }
    credentials = grpc::SslCredentials(ssl);
  }
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(kMaxReceiveBytes);
  if (o.keepalive) {
    args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 20'000);
    args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 10'000);
  }
  c.channel_ = grpc::CreateCustomChannel(target->first, credentials, args);
  // Connect first, so that a server that is not there is said once, plainly, instead of as
  // the first call's transport error. A failed attempt (nothing listening, a refused TLS
  // handshake) ends the wait at once.
  const auto deadline = std::chrono::system_clock::now() + timeout;
  for (;;) {
    const grpc_connectivity_state state = c.channel_->GetState(true);
    if (state == GRPC_CHANNEL_READY) break;
    if (state == GRPC_CHANNEL_TRANSIENT_FAILURE || state == GRPC_CHANNEL_SHUTDOWN ||
        !c.channel_->WaitForStateChange(state, deadline)) {
      return fail(Errc::io_error, "no Warden server answers at " + o.server +
                                      (tls ? " (or the TLS handshake failed: check --tls-ca, --tls-cert, --tls-key)" : ""));
    }
  }
  return c;
}

void Connection::prepare(grpc::ClientContext& context, std::optional<std::chrono::seconds> deadline) const {
  if (!token_.empty()) context.AddMetadata("authorization", "Bearer " + token_);
  if (deadline) context.set_deadline(std::chrono::system_clock::now() + *deadline);
}

}  // namespace warden::client
