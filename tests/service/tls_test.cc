// `warden serve` on TCP: TLS, mutual TLS and plaintext on loopback, with a CA and certificates
// made here by the openssl CLI, a real server process and real sockets. What must hold: a
// client that does not trust the server's CA, or (mutual TLS) that shows no certificate of the
// client CA, gets nothing; tokens are still required over TLS; plaintext TCP is loopback only;
// nothing listens on TCP without tokens; unusable credentials and a port in use are clear
// errors before the server listens; a second server cannot share a port.
#include <arpa/inet.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <warden.grpc.pb.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <regex>

#include "common/file.h"
#include "common/sha256.h"
#include "tests/service/serve_fixture.h"

namespace warden::test {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

struct ClientCert {
  fs::path cert, key;
};

class TlsServe : public ServeFixture {
 protected:
  fs::path pki = tmp / "pki";
  fs::path tokens = tmp / "tokens.json";
  fs::path ca = pki / "ca.pem", other_ca = pki / "other-ca.pem";
  fs::path server_cert = pki / "server.pem", server_key = pki / "server.key";
  ClientCert client{pki / "client.pem", pki / "client.key"};
  ClientCert stranger{pki / "stranger.pem", pki / "stranger.key"};  // issued by the other CA

  void SetUp() override {
    ServeFixture::SetUp();
    if (HasFatalFailure()) return;
    fs::create_directory(pki);
    make_ca("ca");
    make_ca("other-ca");
    issue("server", "ca", "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n");
    issue("client", "ca", "extendedKeyUsage=clientAuth\n");
    issue("stranger", "other-ca", "extendedKeyUsage=clientAuth\n");
    write_file(tokens, "{\"tokens\": [{\"name\": \"auditor\", \"sha256\": \"" + sha256("observer-secret").str() +
                           "\", \"roles\": [\"observer\"]}, {\"name\": \"agent\", \"sha256\": \"" +
                           sha256("executor-secret").str() + "\", \"roles\": [\"executor\"]}]}");
    fs::permissions(tokens, fs::perms::owner_read | fs::perms::owner_write, fs::perm_options::replace);
  }

  void openssl(std::vector<std::string> args) {
    args.insert(args.begin(), "/usr/bin/openssl");
    ProcessResult r = run(args);
    ASSERT_TRUE(r.exited_with(0)) << describe(r);
  }

  void make_ca(const std::string& name) {
    openssl({"req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout",
             (pki / (name + ".key")).string(), "-out", (pki / (name + ".pem")).string(), "-days", "2", "-subj",
             "/CN=warden test " + name});
  }

  void issue(const std::string& name, const std::string& ca_name, const std::string& extensions,
             const std::string& days = "2") {
    fs::path key = pki / (name + ".key"), csr = pki / (name + ".csr"), ext = pki / (name + ".ext");
    write_file(ext, extensions);
    openssl({"req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", key.string(), "-out",
             csr.string(), "-subj", "/CN=" + name});
    openssl({"x509", "-req", "-in", csr.string(), "-CA", (pki / (ca_name + ".pem")).string(), "-CAkey",
             (pki / (ca_name + ".key")).string(), "-set_serial", "7", "-days", days, "-extfile", ext.string(), "-out",
             (pki / (name + ".pem")).string()});
    fs::permissions(key, fs::perms::owner_read | fs::perms::owner_write, fs::perm_options::replace);
  }

  std::vector<std::string> tls_args(const std::string& address = "127.0.0.1:0") {
    return {"--tokens", tokens.string(), "--listen", address, "--tls-cert", server_cert.string(), "--tls-key",
            server_key.string()};
  }

  std::shared_ptr<grpc::Channel> tls_channel(int port, const fs::path& trusted, const ClientCert* as = nullptr) {
    grpc::SslCredentialsOptions options;
    options.pem_root_certs = read_file(trusted);
    if (as) {
      options.pem_cert_chain = read_file(as->cert);
      options.pem_private_key = read_file(as->key);
    }
    return grpc::CreateChannel("127.0.0.1:" + std::to_string(port), grpc::SslCredentials(options));
  }

  std::shared_ptr<grpc::Channel> plaintext_channel(int port) {
    return grpc::CreateChannel("127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials());
  }

  // ListRecords with `token` (none when empty): the status and how many records came.
  std::pair<grpc::StatusCode, int> list_with(const std::shared_ptr<grpc::Channel>& ch, const std::string& token) {
    auto ledger_client = v1::Ledger::NewStub(ch);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + 10s);
    if (!token.empty()) context.AddMetadata("authorization", "Bearer " + token);
    auto reader = ledger_client->ListRecords(&context, {});
    v1::LedgerRecord r;
    int n = 0;
    while (reader->Read(&r)) ++n;
    return {reader->Finish().error_code(), n};
  }

  // The Python client's TLS checks (python_tls_check.py) against the server on `port`.
  ProcessResult python_check(int port, bool mutual) {
    fs::path package = fs::path(WARDEN_BINARY).parent_path() / "clients" / "python";
    fs::path check = fs::path(WARDEN_SOURCE_DIR) / "tests" / "service" / "python_tls_check.py";
    std::vector<std::string> argv{"/usr/bin/env", "PYTHONPATH=" + package.string(), "/usr/bin/python3", check.string(),
                                  "127.0.0.1:" + std::to_string(port), "observer-secret", ca.string(), other_ca.string()};
    if (mutual) {
      for (const fs::path& p : {client.cert, client.key, stranger.cert, stranger.key}) argv.push_back(p.string());
    }
    return run(argv);
  }

  // `argv` run to its end, or SIGKILLed after 20 s: a server that serves where it should have
  // refused fails the test instead of hanging it.
  ProcessResult run_bounded(const std::vector<std::string>& argv) {
    Child child = Child::spawn(argv);
    auto deadline = std::chrono::steady_clock::now() + 20s;
    while (child.output_open() && std::chrono::steady_clock::now() < deadline) child.pump(deadline);
    if (child.output_open()) child.kill(SIGKILL);
    return child.wait();
  }

  // `warden serve` run with `extra`, expected to refuse before listening.
  void expect_refused(const std::vector<std::string>& extra, int code, const std::string& says) {
    std::vector<std::string> argv{warden_binary(), "serve", "--state", state.string()};
    argv.insert(argv.end(), extra.begin(), extra.end());
    ProcessResult r = run_bounded(argv);
    EXPECT_TRUE(r.exited_with(code)) << describe(r);
    EXPECT_NE(r.err.find(says), std::string::npos) << "expected \"" << says << "\": " << describe(r);
    EXPECT_FALSE(fs::exists(socket)) << describe(r);
  }
};

const auto kOk5 = std::pair(grpc::StatusCode::OK, 5);
const auto kUnavailable = std::pair(grpc::StatusCode::UNAVAILABLE, 0);

TEST_F(TlsServe, TlsServesClientsThatTrustItsCaAndStillWantsTokens) {
  Child server = start(tls_args());
  wait_serving(server);
  int port = logged_listening_port(server, "127.0.0.1");
  ASSERT_GT(port, 0);
  EXPECT_NE(server.err().find("127.0.0.1:" + std::to_string(port) + " (TLS)"), std::string::npos) << server.err();

  auto tls = tls_channel(port, ca);
  EXPECT_EQ(list_with(tls, "observer-secret"), kOk5);
  EXPECT_EQ(list_with(tls, ""), std::pair(grpc::StatusCode::UNAUTHENTICATED, 0));
  EXPECT_EQ(list_with(tls, "guessed"), std::pair(grpc::StatusCode::UNAUTHENTICATED, 0));
  EXPECT_EQ(list_with(tls, "executor-secret"), std::pair(grpc::StatusCode::PERMISSION_DENIED, 0));
  EXPECT_EQ(health_status(tls, ""), 1) << "health needs no token";

  // A client that trusts another CA, and one that speaks plaintext, get nothing.
  EXPECT_EQ(list_with(tls_channel(port, other_ca), "observer-secret"), kUnavailable);
  EXPECT_EQ(list_with(plaintext_channel(port), "observer-secret"), kUnavailable);

  // A connection that never handshakes, and one that sends garbage, leave the server serving.
  UniqueFd idle(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)), garbage(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::connect(idle.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::connect(garbage.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  std::string junk = "\x16\x03\x01\xff\xffGET / HTTP/1.1\r\n\r\n" + std::string(4096, '\x80');
  EXPECT_GT(::write(garbage.get(), junk.data(), junk.size()), 0);
  EXPECT_EQ(list_with(tls_channel(port, ca), "observer-secret"), kOk5);

  // The unix socket serves too, and wants the token as well.
  EXPECT_EQ(list_with(channel(), ""), std::pair(grpc::StatusCode::UNAUTHENTICATED, 0));
  EXPECT_EQ(list_with(channel(), "observer-secret"), kOk5);

  ProcessResult py = python_check(port, false);
  EXPECT_TRUE(py.exited_with(0)) << describe(py);
  EXPECT_NE(py.out.find("arguments checked"), std::string::npos) << describe(py);

  ProcessResult stopped = stop(server);
  EXPECT_TRUE(stopped.exited_with(0)) << describe(stopped);
}

TEST_F(TlsServe, MutualTlsWantsACertificateOfTheClientCa) {
  auto args = tls_args();
  args.insert(args.end(), {"--client-ca", ca.string()});
  Child server = start(args);
  wait_serving(server);
  int port = logged_listening_port(server, "127.0.0.1");
  ASSERT_GT(port, 0);
  EXPECT_NE(server.err().find("(mutual TLS, client CA " + ca.string() + ")"), std::string::npos) << server.err();

  EXPECT_EQ(list_with(tls_channel(port, ca, &client), "observer-secret"), kOk5);
  EXPECT_EQ(list_with(tls_channel(port, ca), "observer-secret"), kUnavailable) << "no client certificate";
  EXPECT_EQ(list_with(tls_channel(port, ca, &stranger), "observer-secret"), kUnavailable) << "another CA's";
  // The server's own certificate is of the CA, but not for client authentication.
  ClientCert as_server{server_cert, server_key};
  EXPECT_EQ(list_with(tls_channel(port, ca, &as_server), "observer-secret"), kUnavailable);
  // A client certificate is no token.
  EXPECT_EQ(list_with(tls_channel(port, ca, &client), ""), std::pair(grpc::StatusCode::UNAUTHENTICATED, 0));

  ProcessResult py = python_check(port, true);
  EXPECT_TRUE(py.exited_with(0)) << describe(py);
  EXPECT_NE(py.out.find("client certificates checked"), std::string::npos) << describe(py);
  EXPECT_TRUE(stop(server).exited_with(0));
}

TEST_F(TlsServe, PlaintextTcpOnLoopbackOnlyAndNoTcpWithoutTokens) {
  Child server = start({"--tokens", tokens.string(), "--insecure-listen", "localhost:0"});
  wait_serving(server);
  int port = logged_listening_port(server, "127.0.0.1");
  ASSERT_GT(port, 0);
  EXPECT_NE(server.err().find("(plaintext, loopback only)"), std::string::npos) << server.err();
  EXPECT_EQ(list_with(plaintext_channel(port), "observer-secret"), kOk5);
  EXPECT_EQ(list_with(plaintext_channel(port), ""), std::pair(grpc::StatusCode::UNAUTHENTICATED, 0));
  EXPECT_TRUE(stop(server).exited_with(0));

  Child v6 = start({"--tokens", tokens.string(), "--insecure-listen", "[::1]:0"});
  wait_serving(v6);
  int v6_port = logged_listening_port(v6, "[::1]");
  ASSERT_GT(v6_port, 0);
  auto v6_channel = grpc::CreateChannel("[::1]:" + std::to_string(v6_port), grpc::InsecureChannelCredentials());
  EXPECT_EQ(list_with(v6_channel, "observer-secret"), kOk5);
  EXPECT_TRUE(stop(v6).exited_with(0));

  std::vector<std::string> with_tokens{"--tokens", tokens.string(), "--insecure-listen"};
  for (std::string address : {"0.0.0.0:0", "[::]:0", "[::ffff:10.0.0.1]:0"}) {
    auto args = with_tokens;
    args.push_back(address);
    expect_refused(args, 3, "not a loopback address");
  }
  for (std::string address : {"127.0.0.1", "127.0.0.1:65536", "::1:0", ":0", "127.0.0.1:-1", "127.0.0.1: 1"}) {
    auto args = with_tokens;
    args.push_back(address);
    expect_refused(args, 3, "--insecure-listen " + address + ": ");
  }
  expect_refused({"--insecure-listen", "127.0.0.1:0"}, 3, "need --tokens");
  auto tls = tls_args();
  tls.erase(tls.begin(), tls.begin() + 2);
  expect_refused(tls, 3, "need --tokens");
}

TEST_F(TlsServe, UnusableCertificatesAndKeysAreRefusedBeforeListening) {
  auto with = [&](const fs::path& cert, const fs::path& key) {
    return std::vector<std::string>{"--tokens", tokens.string(), "--listen", "127.0.0.1:0", "--tls-cert",
                                    cert.string(), "--tls-key", key.string()};
  };
  fs::permissions(server_key, fs::perms::group_read, fs::perm_options::add);
  expect_refused(with(server_cert, server_key), 3, "chmod 0600 " + server_key.string());
  fs::permissions(server_key, fs::perms::owner_read | fs::perms::others_read, fs::perm_options::replace);
  expect_refused(with(server_cert, server_key), 3, "chmod 0600 " + server_key.string());
  fs::permissions(server_key, fs::perms::owner_read, fs::perm_options::replace);
  ASSERT_EQ(::chown(server_key.c_str(), 65534, 65534), 0);  // another user's, though 0400
  expect_refused(with(server_cert, server_key), 3, "not by the server's user");
  ASSERT_EQ(::chown(server_key.c_str(), ::geteuid(), ::getegid()), 0);

  fs::path link = pki / "link.key";
  fs::create_symlink(server_key, link);
  expect_refused(with(server_cert, link), 3, "symbolic link");
  fs::path fifo = pki / "fifo.key";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  expect_refused(with(server_cert, fifo), 3, "not a regular file");  // and it does not wait for a writer
  expect_refused(with(fifo, server_key), 3, "not a regular file");
  expect_refused(with(server_cert, pki), 3, "not a regular file");
  expect_refused(with(server_cert, pki / "absent.key"), 4, "absent.key");

  expect_refused(with(server_cert, client.key), 3, "is not the key of the first certificate");
  expect_refused(with(server_key, server_cert), 3, "not a CERTIFICATE");
  fs::path junk = pki / "junk.pem";
  write_file(junk, "not pem at all\n");
  expect_refused(with(junk, server_key), 3, "holds no PEM certificate");
  std::string pem = read_file(server_cert);
  write_file(junk, pem.substr(0, pem.size() / 2) + "\n-----END CERTIFICATE-----\n");
  expect_refused(with(junk, server_key), 3, "does not parse");
  fs::resize_file(junk, 2 << 20);
  expect_refused(with(junk, server_key), 3, "larger than the limit");
  issue("expired", "ca", "subjectAltName=IP:127.0.0.1\n", "-1");
  expect_refused(with(pki / "expired.pem", pki / "expired.key"), 3, "the certificate expired on");
  fs::path encrypted = pki / "encrypted.key";
  openssl({"pkey", "-in", server_key.string(), "-aes256", "-passout", "pass:secret", "-out", encrypted.string()});
  fs::permissions(encrypted, fs::perms::owner_read, fs::perm_options::replace);
  expect_refused(with(server_cert, encrypted), 3, "encrypted");

  auto mutual = with(server_cert, server_key);
  mutual.insert(mutual.end(), {"--client-ca", server_key.string()});
  expect_refused(mutual, 3, "--client-ca " + server_key.string());

  // Options that belong together.
  expect_refused({"--tokens", tokens.string(), "--listen", "127.0.0.1:0", "--tls-cert", server_cert.string()}, 2,
                 "--tls-key");
  expect_refused({"--tokens", tokens.string(), "--tls-cert", server_cert.string(), "--tls-key", server_key.string()}, 2,
                 "--listen");
}

// A connection that never starts its TLS handshake holds a descriptor of the server's: it is
// closed after the handshake timeout (10 s), and serves nobody meanwhile.
TEST_F(TlsServe, ASilentConnectionIsClosedAfterTheHandshakeTimeout) {
  Child server = start(tls_args());
  wait_serving(server);
  int port = logged_listening_port(server, "127.0.0.1");
  ASSERT_GT(port, 0);
  UniqueFd silent(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::connect(silent.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  timeval limit{.tv_sec = 30, .tv_usec = 0};
  ASSERT_EQ(::setsockopt(silent.get(), SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit), 0);
  auto began = std::chrono::steady_clock::now();
  EXPECT_EQ(list_with(tls_channel(port, ca), "observer-secret"), kOk5) << "others are served meanwhile";
  char byte;
  EXPECT_EQ(::read(silent.get(), &byte, 1), 0) << "closed, not timed out: " << std::strerror(errno);
  auto waited = std::chrono::steady_clock::now() - began;
  EXPECT_GT(waited, 5s);
  EXPECT_LT(waited, 20s);
  ProcessResult stopped = stop(server);
  EXPECT_TRUE(stopped.exited_with(0)) << describe(stopped);
}

TEST_F(TlsServe, APortInUseIsAClearErrorAndNoSecondServerSharesIt) {
  UniqueFd taken(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(taken.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(taken.get(), 1), 0);
  socklen_t len = sizeof addr;
  ASSERT_EQ(::getsockname(taken.get(), reinterpret_cast<sockaddr*>(&addr), &len), 0);
  std::string busy = "127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
  expect_refused(tls_args(busy), 6, "cannot listen on " + busy + ": the port is in use");
  expect_refused({"--tokens", tokens.string(), "--insecure-listen", busy}, 6, "the port is in use");

  // A running server's port: gRPC would share it (SO_REUSEPORT) unless told not to.
  Child first = start({"--tokens", tokens.string(), "--insecure-listen", "127.0.0.1:0"});
  wait_serving(first);
  int port = logged_listening_port(first, "127.0.0.1");
  ASSERT_GT(port, 0);
  std::string its = "127.0.0.1:" + std::to_string(port);
  ProcessResult second = run_bounded({warden_binary(), "serve", "--state", state.string(), "--socket",
                                      (state / "second.sock").string(), "--tokens", tokens.string(),
                                      "--insecure-listen", its});
  EXPECT_TRUE(second.exited_with(6)) << describe(second);
  EXPECT_NE(second.err.find("the port is in use"), std::string::npos) << describe(second);
  EXPECT_FALSE(fs::exists(state / "second.sock"));
  EXPECT_EQ(list_with(plaintext_channel(port), "observer-secret"), kOk5);
  EXPECT_TRUE(stop(first).exited_with(0));
}

}  // namespace
}  // namespace warden::test
