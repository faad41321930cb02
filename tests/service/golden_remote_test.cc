// The determinism golden over gRPC: the calculator built by the Python executor
// (examples/calculator/agent_grpc.py) attached to a real `warden serve`, with the logical clock
// and the test key, must give a ledger export byte-identical to tests/golden/remote/calculator
// (tools/refresh-goldens makes it on purpose), and it replays.
//
// Against the same build through the plan executor (tests/golden/calculator) the ledger holds
// the same records in the same order with the same decisions: the transport and the executor's
// process are no input to any decision. The bytes cannot be the same, and should not be: every
// proposal records who made it (the executor's name and authenticated identity), the
// proposal's evidence blob holds that record, and each git commit message names the record
// that accepted it, so the commit ids follow.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/support/files.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"
#include "tests/support/warden_cli.h"

namespace warden::test {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using nlohmann::json;

const fs::path kSource = WARDEN_SOURCE_DIR;
const fs::path kGolden = kSource / "tests" / "golden";

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::vector<std::string> relative_files(const fs::path& root) {
  std::vector<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    if (e.is_regular_file()) out.push_back(fs::relative(e.path(), root).generic_string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<json> records(const fs::path& export_dir) {
  std::vector<json> out;
  std::ifstream in(export_dir / "records.jsonl");
  for (std::string line; std::getline(in, line);) out.push_back(json::parse(line));
  return out;
}

// The calculator built over gRPC by agent_grpc.py into a fresh state directory whose ledger
// is signed with the golden test key; returns the export's directory.
fs::path build_over_grpc(const fs::path& tmp) {
  const fs::path state = tmp / "state", blueprints = tmp / "blueprints", out = tmp / "export";
  fs::create_directories(blueprints);
  fs::create_directory(state);
  fs::permissions(state, fs::perms::owner_all, fs::perm_options::replace);
  fs::create_directory_symlink(kSource / "examples" / "calculator", blueprints / "calculator");
  ProcessResult init = warden({"ledger", "init", (state / "ledger").string(), "--signer-key", (kGolden / "signer.key").string()});
  EXPECT_TRUE(init.exited_with(0)) << describe(init);
  Child server = Child::spawn({warden_binary(), "serve", "--state", state.string(), "--blueprints", blueprints.string()});
  auto channel = grpc::CreateChannel("unix:" + (state / "warden.sock").string(), grpc::InsecureChannelCredentials());
  auto deadline = std::chrono::steady_clock::now() + 60s;
  while (!(fs::exists(state / "warden.sock") && channel->WaitForConnected(std::chrono::system_clock::now() + 100ms))) {
    server.pump(std::chrono::steady_clock::now() + 50ms);
    if (std::chrono::steady_clock::now() > deadline || !server.output_open()) {
      ADD_FAILURE() << "the server did not start: " << server.err();
      return out;
    }
  }
  ProcessResult agent = run({"/usr/bin/env", "PYTHONPATH=" + (fs::path(WARDEN_BINARY).parent_path() / "clients" / "python").string(),
                             "WARDEN_CLOCK=logical", "WARDEN_REPOSITORY=calculator", "/usr/bin/python3",
                             (kSource / "examples" / "calculator" / "agent_grpc.py").string(), (state / "warden.sock").string()});
  EXPECT_TRUE(agent.exited_with(0)) << describe(agent);
  server.kill(SIGTERM);
  EXPECT_TRUE(server.wait().exited_with(0));
  ProcessResult exported = warden({"ledger", "export", (state / "ledger").string(), out.string()});
  EXPECT_TRUE(exported.exited_with(0)) << describe(exported);
  return out;
}

TEST(GoldenRemote, ThePythonExecutorOverGrpcGivesTheSameBytesEveryTime) {
  TempDir tmp;
  const fs::path built = build_over_grpc(tmp.path());
  const fs::path golden = kGolden / "remote" / "calculator";
  ASSERT_EQ(relative_files(built), relative_files(golden)) << "tools/refresh-goldens rebuilds it on purpose";
  for (const std::string& file : relative_files(golden)) {
    EXPECT_TRUE(slurp(built / file) == slurp(golden / file)) << file << " differs from the golden";
  }
  ProcessResult replay = warden({"replay", built.string(), "--key", (kGolden / "verifier.key").string()});
  EXPECT_TRUE(replay.exited_with(0)) << describe(replay);
}

TEST(GoldenRemote, DecidesAsThePlanExecutorDoes) {
  const std::vector<json> remote = records(kGolden / "remote" / "calculator");
  const std::vector<json> local = records(kGolden / "calculator");
  ASSERT_EQ(remote.size(), local.size());
  for (size_t i = 0; i < remote.size(); ++i) {
    const json& r = remote[i];
    const json& l = local[i];
    ASSERT_EQ(r["kind"], l["kind"]) << "record " << i;
    const std::string kind = r["kind"];
    if (kind == "decision") {
      EXPECT_EQ(r["payload"]["verdict"], l["payload"]["verdict"]) << "record " << i;
      EXPECT_EQ(r["payload"]["step_id"], l["payload"]["step_id"]);
      EXPECT_EQ(r["payload"]["attempt"], l["payload"]["attempt"]);
    } else if (kind == "proposal") {
      EXPECT_EQ(r["payload"]["diff_sha256"], l["payload"]["diff_sha256"]) << "record " << i << ": another change was proposed";
      EXPECT_EQ(r["payload"]["executor_identity"], "local");
    } else if (kind == "run_result" || kind == "run_event" || kind == "run_status") {
      EXPECT_EQ(r["payload"].value("run_id", ""), l["payload"].value("run_id", ""));
    }
  }
}

}  // namespace
}  // namespace warden::test
