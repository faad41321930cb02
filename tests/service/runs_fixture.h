// The fixture of the tests that run a real `warden serve` (runs_test, cli_client_test): a
// state directory in a temporary one, the calculator served as a blueprint (a symlink to
// examples/calculator under --blueprints), the server started and waited for, gRPC channels
// of their own, and the checks on what a run left (its recorded events, the ledger, the
// branch). A test stops the servers it starts; Child's destructor SIGKILLs one left running.
#pragma once

#include <grpcpp/grpcpp.h>
#include <nlohmann/json.hpp>
#include <gtest/gtest.h>
#include <warden.grpc.pb.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/support/process.h"
#include "tests/support/temp_dir.h"
#include "tests/support/warden_cli.h"

namespace warden::test {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

// The records of one kind and run, as `warden ledger show --json` prints them (each line with
// its seq and payload), oldest first.
inline std::vector<nlohmann::json> recorded(const fs::path& ledger, const std::string& kind, const std::string& run_id) {
  ProcessResult r = warden({"ledger", "show", ledger.string(), "--kind", kind, "--run", run_id, "--json"});
  EXPECT_TRUE(r.exited_with(0)) << describe(r);
  std::vector<nlohmann::json> out;
  for (auto& line : stdout_json_lines(r)) {
    if (line.value("type", "") == "record") out.push_back(std::move(line));
  }
  return out;
}

inline std::string read_file_or_empty(const fs::path& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

class ServeRuns : public ::testing::Test {
 protected:
  TempDir tmp;
  fs::path state = tmp / "state";
  fs::path blueprints = tmp / "blueprints";
  fs::path socket = state / "warden.sock";
  fs::path ledger = state / "ledger";

  void SetUp() override {
    fs::create_directories(blueprints);
    fs::create_directory_symlink(fs::path(WARDEN_SOURCE_DIR) / "examples" / "calculator", blueprints / "calculator");
  }

  Child start(const std::vector<std::string>& extra = {}) {
    std::vector<std::string> argv{warden_binary(), "serve", "--state", state.string(), "--blueprints", blueprints.string()};
    argv.insert(argv.end(), extra.begin(), extra.end());
    Child server = Child::spawn(argv);
    wait_serving(server);
    return server;
  }

  // A channel of its own: gRPC shares connections between a process's channels to one
  // address, and one to a server that has since been stopped would fail the first calls to
  // its successor.
  std::shared_ptr<grpc::Channel> channel() {
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    return grpc::CreateCustomChannel("unix:" + socket.string(), grpc::InsecureChannelCredentials(), args);
  }

  void wait_serving(Child& server) {
    auto deadline = std::chrono::steady_clock::now() + 60s;
    while (std::chrono::steady_clock::now() < deadline) {
      if (fs::exists(socket)) {
        auto ch = channel();
        if (ch->WaitForConnected(std::chrono::system_clock::now() + 100ms)) return;
      }
      server.pump(std::chrono::steady_clock::now() + 50ms);
      ASSERT_TRUE(server.output_open()) << "the server exited: " << server.err();
    }
    FAIL() << "not listening after 60 s: " << server.err();
  }

  grpc::Status start_run(v1::Kernel::Stub& kernel, const v1::StartRunRequest& request, std::string& run_id) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + 120s);
    v1::StartRunResponse response;
    grpc::Status st = kernel.StartRun(&context, request, &response);
    run_id = response.run_id();
    return st;
  }

  std::string start_calculator(v1::Kernel::Stub& kernel, const std::string& repository, const std::string& clock = "system") {
    v1::StartRunRequest request;
    request.set_blueprint("calculator");
    request.set_repository(repository);
    request.set_clock(clock);
    std::string run_id;
    grpc::Status st = start_run(kernel, request, run_id);
    EXPECT_TRUE(st.ok()) << st.error_code() << " " << st.error_message() << "\n" << read_file_or_empty(state / "runs" / "children.log");
    return run_id;
  }

  // Every event of a watch from `from_seq` to the end of the stream, and how it ended.
  std::vector<v1::RunEvent> watch(v1::Kernel::Stub& kernel, const std::string& run_id, uint64_t from_seq,
                                  grpc::Status* ended = nullptr) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + 240s);
    v1::WatchRunRequest request;
    request.set_run_id(run_id);
    request.set_from_seq(from_seq);
    auto reader = kernel.WatchRun(&context, request);
    std::vector<v1::RunEvent> events;
    v1::RunEvent e;
    while (reader->Read(&e)) events.push_back(e);
    grpc::Status st = reader->Finish();
    if (ended) *ended = st;
    EXPECT_TRUE(ended || st.ok()) << st.error_message();
    return events;
  }

  // CancelRun of `run_id` (answered once its end is recorded).
  grpc::Status cancel_run(v1::Kernel::Stub& kernel, const std::string& run_id, v1::RunSummary& out) {
    grpc::ClientContext context;
    v1::CancelRunRequest request;
    request.set_run_id(run_id);
    return kernel.CancelRun(&context, request, &out);
  }

  // Pipeline.Run of examples/pipelines/<example>.json with `input`.
  grpc::Status run_pipeline(const std::string& example, const std::string& input, v1::PipelineRunResponse& out) {
    auto pipeline = v1::Pipeline::NewStub(channel());
    v1::PipelineRunRequest request;
    request.set_config_json(read_file_or_empty(fs::path(WARDEN_SOURCE_DIR) / "examples" / "pipelines" / (example + ".json")));
    request.set_input_json(input);
    grpc::ClientContext context;
    return pipeline->Run(&context, request, &out);
  }

  v1::RunSummary get_run(v1::Kernel::Stub& kernel, const std::string& run_id) {
    grpc::ClientContext context;
    v1::GetRunRequest request;
    request.set_run_id(run_id);
    v1::RunSummary summary;
    grpc::Status st = kernel.GetRun(&context, request, &summary);
    EXPECT_TRUE(st.ok()) << st.error_message();
    return summary;
  }

  // The run's events as the ledger records them (kind run_event), read by the CLI.
  std::vector<uint64_t> recorded_event_seqs(const std::string& run_id) {
    std::vector<uint64_t> seqs;
    for (const auto& line : recorded(ledger, "run_event", run_id)) seqs.push_back(line.value("seq", uint64_t{0}));
    return seqs;
  }

  void expect_ledger_verifies() {
    ProcessResult r = warden({"ledger", "verify", ledger.string()});
    EXPECT_TRUE(r.exited_with(0)) << describe(r);
  }

  // The branch of `repository` is at the newest commit the ledger records for `run_id`, or
  // at its base when the run committed nothing: it holds only accepted commits.
  void expect_branch_holds_only_accepted(const std::string& repository, const std::string& run_id) {
    std::string last;
    for (const auto& line : recorded(ledger, "commit", run_id)) last = line["payload"].value("commit", "");
    fs::path repo = state / "repos" / repository;
    ProcessResult tip = run({"/usr/bin/git", "-C", repo.string(), "rev-parse", "--verify", "-q", "refs/heads/warden/calculator"});
    if (last.empty()) {
      // No accepted commit: the branch was never made, or holds the seed alone.
      if (!tip.exited_with(0)) return;
      ProcessResult count = run({"/usr/bin/git", "-C", repo.string(), "rev-list", "--count", "refs/heads/warden/calculator"});
      EXPECT_EQ(count.out, "1\n") << "a run that committed nothing left commits on its branch";
    } else {
      ASSERT_TRUE(tip.exited_with(0)) << describe(tip);
      EXPECT_EQ(tip.out, last + "\n");
    }
  }
};

}  // namespace warden::test
