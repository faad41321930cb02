// What the tests of `warden serve` share: a state directory with a ledger of five records and a
// signed checkpoint, a real server process started on it (stopped by SIGTERM in stop(), or
// killed by Child's destructor when a test fails first), and health over a channel.
#pragma once

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <health/v1/health.grpc.pb.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/files.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"
#include "tests/support/warden_cli.h"

namespace warden::test {

// grpc.health.v1.Health/Check: 1 SERVING, 2 NOT_SERVING; a negative gRPC status code when
// the call itself failed.
inline int health_status(const std::shared_ptr<grpc::Channel>& channel, const std::string& service) {
  auto health = grpc::health::v1::Health::NewStub(channel);
  grpc::health::v1::HealthCheckRequest request;
  request.set_service(service);
  grpc::health::v1::HealthCheckResponse response;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  grpc::Status status = health->Check(&context, request, &response);
  if (!status.ok()) return -static_cast<int>(status.error_code());
  return response.status();
}

using AgentListing = std::map<std::string, nlohmann::json>;

// The agents as `warden agents list --json` shows them, by id; `connect` is the client's
// --server (and --token) arguments.
inline AgentListing agents_listed(const std::vector<std::string>& connect) {
  std::vector<std::string> argv{"agents", "list", "--json"};
  argv.insert(argv.end(), connect.begin(), connect.end());
  ProcessResult r = warden(argv);
  EXPECT_TRUE(r.exited_with(0)) << describe(r);
  AgentListing out;
  for (auto& line : stdout_json_lines(r)) {
    if (line.value("type", "") == "agent") out[line.value("id", "")] = line;
  }
  return out;
}

// Polls the listing until `ok` holds of it (true) or `within` passes (false).
inline bool eventually_listed(const std::vector<std::string>& connect, const std::function<bool(const AgentListing&)>& ok,
                              std::chrono::milliseconds within) {
  auto deadline = std::chrono::steady_clock::now() + within;
  while (std::chrono::steady_clock::now() < deadline) {
    if (ok(agents_listed(connect))) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

// The port of the server's "listening on HOST:PORT (...)" line (HOST as logged: "127.0.0.1",
// "[::1]"), once it is logged; 0, with a test failure, if it is not within 30 s.
inline int logged_listening_port(Child& server, const std::string& host) {
  using namespace std::chrono_literals;
  std::regex line("warden serve: listening on " + std::regex_replace(host, std::regex(R"([.\[\]])"), R"(\$&)") +
                  R"(:(\d+) \()");
  auto deadline = std::chrono::steady_clock::now() + 30s;
  while (std::chrono::steady_clock::now() < deadline) {
    std::smatch m;
    std::string err = server.err();
    if (std::regex_search(err, m, line)) return std::stoi(m[1]);
    server.pump(std::chrono::steady_clock::now() + 50ms);
    if (!server.output_open()) break;
  }
  ADD_FAILURE() << "no listening line for " << host << ": " << server.err();
  return 0;
}

class ServeFixture : public ::testing::Test {
 protected:
  TempDir tmp;
  std::filesystem::path state = tmp / "state";
  std::filesystem::path ledger = state / "ledger";
  std::filesystem::path socket = state / "warden.sock";
  std::string verifier;

  void SetUp() override {
    namespace fs = std::filesystem;
    fs::create_directory(state);
    fs::permissions(state, fs::perms::owner_all, fs::perm_options::replace);
    auto init = warden({"ledger", "init", ledger.string(), "--json"});
    ASSERT_TRUE(init.exited_with(0)) << describe(init);
    verifier = stdout_json(init).value("verifier_key", "");
    ASSERT_FALSE(verifier.empty()) << init.out;
    for (int i = 0; i < 5; ++i) {
      fs::path payload = tmp / ("p" + std::to_string(i) + ".json");
      write_file(payload, "{\"n\":" + std::to_string(i) + "}");
      auto appended = warden({"ledger", "append", ledger.string(), "--kind", i % 2 ? "odd" : "even", "--payload",
                              payload.string()});
      ASSERT_TRUE(appended.exited_with(0)) << describe(appended);
    }
    auto cp = warden({"ledger", "checkpoint", ledger.string()});
    ASSERT_TRUE(cp.exited_with(0)) << describe(cp);
  }

  Child start(const std::vector<std::string>& extra = {}) {
    std::vector<std::string> argv{warden_binary(), "serve", "--state", state.string()};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return Child::spawn(argv);
  }

  std::shared_ptr<grpc::Channel> channel() {
    return grpc::CreateChannel("unix:" + socket.string(), grpc::InsecureChannelCredentials());
  }

  // Until health says SERVING on the unix socket (the server is up and ready), or 30 s.
  void wait_serving(Child& server) {
    using namespace std::chrono_literals;
    auto deadline = std::chrono::steady_clock::now() + 30s;
    while (std::chrono::steady_clock::now() < deadline) {
      if (std::filesystem::exists(socket) && health_status(channel(), "") == 1) return;
      server.pump(std::chrono::steady_clock::now() + 50ms);
      ASSERT_TRUE(server.output_open()) << "the server exited: " << server.err();
    }
    FAIL() << "not SERVING after 30 s: " << server.err();
  }

  ProcessResult stop(Child& server) {
    server.kill(SIGTERM);
    return server.wait();
  }
};

}  // namespace warden::test
