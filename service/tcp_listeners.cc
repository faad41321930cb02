#include "service/tcp_listeners.h"

#include <arpa/inet.h>
#include <grpcpp/security/server_credentials.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/file.h"

namespace warden::service {
namespace {

struct HostPort {
  std::string host;  // without brackets
  int port = 0;
};

Result<HostPort> parse_host_port(const std::string& text, std::string_view flag) {
  std::string what = std::string(flag) + " " + text;
  HostPort out;
  std::string port;
  if (text.starts_with("[")) {
    size_t close = text.find("]:");
    if (close == std::string::npos) return fail(Errc::invalid_argument, what + ": expected [IPV6]:PORT");
    out.host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else {
    size_t colon = text.rfind(':');
    if (colon == std::string::npos) return fail(Errc::invalid_argument, what + ": expected HOST:PORT");
    out.host = text.substr(0, colon);
    port = text.substr(colon + 1);
    if (out.host.find(':') != std::string::npos) {
      return fail(Errc::invalid_argument, what + ": an IPv6 address goes in brackets, as in [::1]:PORT");
    }
  }
  if (out.host.empty()) {
    return fail(Errc::invalid_argument, what + ": name the host (0.0.0.0 or [::] for every address of this machine)");
  }
  bool digits = !port.empty() && port.size() <= 5 && std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (!digits || std::stoi(port) > 65535) return fail(Errc::invalid_argument, what + ": the port is not a number from 0 to 65535");
  out.port = std::stoi(port);
  return out;
}

struct AddrInfoFree {
  void operator()(addrinfo* a) const { freeaddrinfo(a); }
};

// Every address `host` resolves to (a numeric host is itself).
Result<std::vector<sockaddr_storage>> resolve(const std::string& host, std::string_view what) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &found);
  std::unique_ptr<addrinfo, AddrInfoFree> owned(found);
  if (rc != 0) {
    Errc code = rc == EAI_NONAME || rc == EAI_NODATA ? Errc::not_found : Errc::io_error;
    return fail(code, std::string(what) + ": host " + host + " does not resolve (" + ::gai_strerror(rc) + ")");
  }
  std::vector<sockaddr_storage> out;
  for (addrinfo* a = found; a; a = a->ai_next) {
    if (a->ai_family != AF_INET && a->ai_family != AF_INET6) continue;
    sockaddr_storage s{};
    std::memcpy(&s, a->ai_addr, a->ai_addrlen);
    out.push_back(s);
  }
  if (out.empty()) return fail(Errc::not_found, std::string(what) + ": host " + host + " has no IP address");
  return out;
}

bool is_loopback(const sockaddr_storage& s) {
  if (s.ss_family == AF_INET) {
    uint32_t ip = ntohl(reinterpret_cast<const sockaddr_in&>(s).sin_addr.s_addr);
    return (ip >> 24) == 127;
  }
  const in6_addr& ip6 = reinterpret_cast<const sockaddr_in6&>(s).sin6_addr;
  if (IN6_IS_ADDR_LOOPBACK(&ip6)) return true;
  return IN6_IS_ADDR_V4MAPPED(&ip6) && ip6.s6_addr[12] == 127;
}

// The numeric form gRPC is given: 127.0.0.1, [::1].
std::string numeric_host(const sockaddr_storage& s) {
  char text[INET6_ADDRSTRLEN] = {};
  if (s.ss_family == AF_INET) {
    ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in&>(s).sin_addr, text, sizeof text);
    return text;
  }
  ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6&>(s).sin6_addr, text, sizeof text);
  return "[" + std::string(text) + "]";
}

Result<std::vector<TcpListener>> plaintext_listeners(const std::string& address) {
  auto hp = parse_host_port(address, "--insecure-listen");
  if (!hp) return std::unexpected(hp.error());
  auto addresses = resolve(hp->host, "--insecure-listen " + address);
  if (!addresses) return std::unexpected(addresses.error());
  std::vector<TcpListener> out;
  for (const sockaddr_storage& s : *addresses) {
    if (!is_loopback(s)) {
      return fail(Errc::invalid_argument, "--insecure-listen " + address + ": " + numeric_host(s) +
                                              " is not a loopback address, and plaintext TCP is served on loopback "
                                              "only (tokens would cross the network readable): use --listen with "
                                              "--tls-cert and --tls-key");
    }
    std::string host = numeric_host(s);
    bool seen = std::any_of(out.begin(), out.end(), [&](const TcpListener& l) { return l.host == host; });
    if (!seen) out.push_back({host, hp->port, grpc::InsecureServerCredentials(), "plaintext, loopback only"});
  }
  return out;
}

Result<TcpListener> tls_listener(const TcpListenOptions& options) {
  auto hp = parse_host_port(options.tls_address, "--listen");
  if (!hp) return std::unexpected(hp.error());
  if (options.tls.cert.empty() || options.tls.key.empty()) {
    return fail(Errc::invalid_argument, "--listen " + options.tls_address + " needs --tls-cert and --tls-key");
  }
  auto credentials = load_tls_credentials(options.tls);
  if (!credentials) return std::unexpected(credentials.error());
  std::string host = hp->host.find(':') != std::string::npos ? "[" + hp->host + "]" : hp->host;
  return TcpListener{host, hp->port, server_credentials(*credentials),
                     credentials->client_ca.empty() ? "TLS" : "mutual TLS, client CA " + options.tls.client_ca.string()};
}

// bind()'s errno for `s` with `port`, as gRPC would bind it (SO_REUSEADDR); 0 when it binds.
int bind_errno(sockaddr_storage s, int port) {
  UniqueFd fd(::socket(s.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return errno;
  int one = 1;
  ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  socklen_t len = sizeof(sockaddr_in);
  if (s.ss_family == AF_INET) {
    reinterpret_cast<sockaddr_in&>(s).sin_port = htons(static_cast<uint16_t>(port));
  } else {
    reinterpret_cast<sockaddr_in6&>(s).sin6_port = htons(static_cast<uint16_t>(port));
    len = sizeof(sockaddr_in6);
  }
  return ::bind(fd.get(), reinterpret_cast<const sockaddr*>(&s), len) == 0 ? 0 : errno;
}

}  // namespace

Result<std::vector<TcpListener>> tcp_listeners(const TcpListenOptions& options) {
  std::vector<TcpListener> out;
  if (!options.tls_address.empty()) {
    auto tls = tls_listener(options);
    if (!tls) return std::unexpected(tls.error());
    out.push_back(std::move(*tls));
  } else if (!options.tls.cert.empty() || !options.tls.key.empty() || !options.tls.client_ca.empty()) {
    return fail(Errc::invalid_argument, "--tls-cert, --tls-key and --client-ca are for --listen HOST:PORT, which is not given");
  }
  if (!options.insecure_address.empty()) {
    auto plain = plaintext_listeners(options.insecure_address);
    if (!plain) return std::unexpected(plain.error());
    for (TcpListener& l : *plain) out.push_back(std::move(l));
  }
  return out;
}

Error listen_failure(const std::vector<TcpListener>& listeners) {
  auto failed = std::find_if(listeners.begin(), listeners.end(), [](const TcpListener& l) { return l.selected_port == 0; });
  if (failed == listeners.end()) return Error{Errc::io_error, "could not listen on the unix socket (gRPC's log above says why)"};
  std::string address = failed->address();
  std::string host = failed->host.starts_with("[") ? failed->host.substr(1, failed->host.size() - 2) : failed->host;
  auto addresses = resolve(host, address);
  if (!addresses) return addresses.error();
  for (const sockaddr_storage& s : *addresses) {
    int err = bind_errno(s, failed->port);
    if (err == EADDRINUSE) {
      return Error{Errc::already_exists, "cannot listen on " + address + ": the port is in use (another server is "
                                         "listening there; pick another port, or 0 for any free one)"};
    }
    if (err == EADDRNOTAVAIL) {
      return Error{Errc::invalid_argument, "cannot listen on " + address + ": " + numeric_host(s) + " is not an address of this machine"};
    }
    if (err != 0) return errno_error("cannot listen on " + address, err);
  }
  return Error{Errc::io_error, "could not listen on " + address + " (gRPC's log above says why)"};
}

}  // namespace warden::service
