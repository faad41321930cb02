// Pipeline.Watch against a real `warden serve`: a pipeline run by the CLI on the server's
// ledger is watched as the CLI printed it (`warden pipeline run|resume --json`): the same
// events, in the same order, with the same ids, in the one vocabulary of every stream
// (kernel/record/event_stream.h); a watch resumed from an event's seq misses nothing.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <warden.grpc.pb.h>

#include <set>
#include <string>
#include <vector>

#include "tests/service/runs_fixture.h"
#include "tests/support/warden_cli.h"

namespace warden::test {
namespace {

using nlohmann::json;

// The fields an event line and a wire event share, as the line spells them.
json shown(const v1::RunEvent& e) {
  return {{"type", e.type()},
          {"event_id", e.event_id()},
          {"run_id", e.run_id()},
          {"step_index", e.step_index()},
          {"tool_name", e.tool_name().empty() ? json(nullptr) : json(e.tool_name())},
          {"data", json::parse(e.data_json())}};
}

json shown(const json& line) {
  json out = line;
  out.erase("timestamp");
  return out;
}

// The event lines of a `--json` command's output (its result line has no event_id).
std::vector<json> event_lines(const ProcessResult& r) {
  std::vector<json> out;
  for (const json& line : stdout_json_lines(r)) {
    if (line.contains("event_id")) out.push_back(shown(line));
  }
  return out;
}

class PipelineWatch : public ServeRuns {
 protected:
  std::vector<v1::RunEvent> watch_pipeline(const std::string& run_id, uint64_t from_seq, grpc::Status* ended = nullptr) {
    auto pipeline = v1::Pipeline::NewStub(channel());
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + 60s);
    v1::WatchRunRequest request;
    request.set_run_id(run_id);
    request.set_from_seq(from_seq);
    auto reader = pipeline->Watch(&context, request);
    std::vector<v1::RunEvent> events;
    v1::RunEvent e;
    while (reader->Read(&e)) events.push_back(e);
    grpc::Status st = reader->Finish();
    if (ended) *ended = st;
    EXPECT_TRUE(ended || st.ok()) << st.error_message();
    return events;
  }

  std::vector<json> shown_all(const std::vector<v1::RunEvent>& events) {
    std::vector<json> out;
    for (const v1::RunEvent& e : events) out.push_back(shown(e));
    return out;
  }

  std::string example(const std::string& name) {
    return (fs::path(WARDEN_SOURCE_DIR) / "examples" / "pipelines" / name).string();
  }
};

TEST_F(PipelineWatch, APipelineIsWatchedAsTheCliPrintedItAndResumedWithoutALoss) {
  Child server = start();
  ProcessResult paused = warden({"pipeline", "run", example("approval.json"), "--input", "notes", "--ledger", ledger.string(), "--json"});
  const std::string run_id = stdout_json(paused).value("run_id", "");
  ASSERT_FALSE(run_id.empty()) << describe(paused);
  const std::vector<json> printed_before = event_lines(paused);
  ASSERT_FALSE(printed_before.empty()) << describe(paused);
  EXPECT_EQ(printed_before.back()["type"], "interrupt_raised");

  // Paused on its interrupt: the watch ends with what the run has recorded.
  EXPECT_EQ(shown_all(watch_pipeline(run_id, 0)), printed_before);

  ProcessResult resumed = warden({"pipeline", "resume", run_id, "--ledger", ledger.string(), "--response", "yes", "--json"});
  ASSERT_TRUE(resumed.exited_with(0)) << describe(resumed);
  std::vector<json> printed = printed_before;
  for (json& line : event_lines(resumed)) printed.push_back(std::move(line));
  const std::vector<v1::RunEvent> whole = watch_pipeline(run_id, 0);
  EXPECT_EQ(shown_all(whole), printed);
  ASSERT_FALSE(whole.empty());
  EXPECT_EQ(whole.back().type(), "pipeline_completed");

  // From any event's seq (not + 1: a step's events share it), dropping the ids already seen.
  for (size_t i = 0; i < whole.size(); ++i) {
    std::vector<json> joined = shown_all({whole.begin(), whole.begin() + static_cast<std::ptrdiff_t>(i) + 1});
    std::set<std::string> seen;
    for (size_t k = 0; k <= i; ++k) seen.insert(whole[k].event_id());
    for (const v1::RunEvent& e : watch_pipeline(run_id, whole[i].ledger_seq())) {
      if (!seen.contains(e.event_id())) joined.push_back(shown(e));
    }
    EXPECT_EQ(joined, printed) << "resumed after event " << i;
  }

  grpc::Status unknown;
  EXPECT_TRUE(watch_pipeline("run-nothing", 0, &unknown).empty());
  EXPECT_EQ(unknown.error_code(), grpc::StatusCode::NOT_FOUND) << unknown.error_message();
  server.kill(SIGTERM);
  EXPECT_TRUE(server.wait().exited_with(0));
}

}  // namespace
}  // namespace warden::test
