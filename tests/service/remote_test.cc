// Remote executors over gRPC, from outside: a real `warden serve`, real `warden build`
// children, executors attached over Executor.Attach or answering with Executor.Propose. What
// must hold, as an executor that wants its change accepted would try it: every proposal is
// recorded with the authenticated name of who made it; a disconnect mid-step is a failed
// attempt and a reattached executor goes on; wrong hashes, a patch escaping the repository,
// an oversized or non-UTF-8 message are refused and recorded, never accepted; an executor that
// never answers is ended by the watchdog; a retried Propose returns the first decision and
// records nothing twice.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <warden.grpc.pb.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "common/sha256.h"
#include "tests/support/files.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"
#include "tests/support/warden_cli.h"
#include "tests/service/runs_fixture.h"

namespace warden::test {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using nlohmann::json;

std::string bearer(const std::string& token) { return "Bearer " + token; }

// The Diff JSON that gives `step` its final content, as examples/calculator/agent.py builds
// it (without the drafts): every target with its full post-image.
std::string good_diff(const json& step, const json& context) {
  json files = json::array();
  const json existing = context.contains("files") ? context["files"] : json::object();
  const json targets = step.contains("content") ? step["content"] : json::object();
  for (auto it = targets.begin(); it != targets.end(); ++it) {
    const std::string& path = it.key();
    const std::string text = it.value().get<std::string>();
    if (existing.contains(path) && existing[path].value("content", "") == text) continue;
    json change = {{"path", path}, {"new_mode", "100644"}, {"after_sha256", sha256(text).str()}, {"after_content", text}};
    if (existing.contains(path)) {
      change["op"] = "modify";
      change["old_mode"] = "100644";
      change["before_sha256"] = existing[path].value("sha256", "");
    } else {
      change["op"] = "add";
    }
    files.push_back(change);
  }
  return json{{"step_id", step.value("id", "")}, {"files", files}}.dump();
}

// One executor attached over Executor.Attach.
class Attached {
 public:
  Attached(const std::shared_ptr<grpc::Channel>& channel, const std::string& token, const std::string& run_id,
           const std::string& label)
      : executor_(v1::Executor::NewStub(channel)) {
    context_.AddMetadata("authorization", bearer(token));
    context_.set_deadline(std::chrono::system_clock::now() + 240s);
    stream_ = executor_->Attach(&context_);
    v1::ExecutorMessage first;
    first.mutable_attach()->set_run_id(run_id);
    first.mutable_attach()->set_label(label);
    stream_->Write(first);
  }
  // The next message from the kernel; false when the stream ended.
  bool next(v1::KernelMessage& m) { return stream_->Read(&m); }
  // The next proposal request (skipping attached and refusal reports); false at the run's end.
  bool next_request(v1::ProposalRequest& r) {
    v1::KernelMessage m;
    while (next(m)) {
      if (m.has_proposal_request()) {
        r = m.proposal_request();
        return true;
      }
      if (m.has_run_ended()) return false;
    }
    return false;
  }
  bool answer(const std::string& request_id, const std::string& text, bool patch = false) {
    v1::ExecutorMessage m;
    m.mutable_answer()->set_request_id(request_id);
    if (patch) {
      m.mutable_answer()->mutable_proposal()->set_patch(text);
    } else {
      m.mutable_answer()->mutable_proposal()->set_diff_json(text);
    }
    return stream_->Write(m);
  }
  bool answer_plan(const v1::ExecutorMessage& m) { return stream_->Write(m); }
  bool answer_good(const v1::ProposalRequest& r) {
    return answer(r.request_id(), good_diff(json::parse(r.step_json()), json::parse(r.context_json())));
  }
  ~Attached() {
    if (!finished_) drop();
  }
  // Leaves mid-stream, as a crashed executor would.
  void drop() {
    context_.TryCancel();
    finish();
  }
  grpc::Status finish() {
    if (finished_) return status_;
    finished_ = true;
    stream_->WritesDone();
    status_ = stream_->Finish();
    return status_;
  }

 private:
  std::unique_ptr<v1::Executor::Stub> executor_;
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReaderWriter<v1::ExecutorMessage, v1::KernelMessage>> stream_;
  bool finished_ = false;
  grpc::Status status_;
};

class RemoteExecutors : public ServeRuns {
 protected:
  std::optional<Child> server;

  void SetUp() override {
    ServeRuns::SetUp();
    write_file(tmp / "tokens.json",
               R"({"tokens": [{"name": "alice", "sha256": ")" + sha256("alice-token").str() +
                   R"(", "roles": ["executor"]}, {"name": "bob", "sha256": ")" + sha256("bob-token").str() +
                   R"(", "roles": ["executor"]}, {"name": "auditor", "sha256": ")" + sha256("auditor-token").str() +
                   R"(", "roles": ["observer"]}]})");
    fs::permissions(tmp / "tokens.json", fs::perms::owner_read | fs::perms::owner_write, fs::perm_options::replace);
    server.emplace(start({"--tokens", (tmp / "tokens.json").string()}));
  }

  void TearDown() override {
    if (!server) return;
    server->kill(SIGTERM);
    EXPECT_TRUE(server->wait().exited_with(0));
  }

  std::string start_remote(const std::string& label, const std::string& repository, uint32_t step_timeout_ms = 0) {
    auto kernel = v1::Kernel::NewStub(channel());
    grpc::ClientContext context;
    context.AddMetadata("authorization", bearer("alice-token"));
    v1::StartRunRequest request;
    request.set_blueprint("calculator");
    request.set_repository(repository);
    request.set_executor("remote");
    request.set_executor_label(label);
    request.set_step_timeout_ms(step_timeout_ms);
    v1::StartRunResponse response;
    grpc::Status st = kernel->StartRun(&context, request, &response);
    EXPECT_TRUE(st.ok()) << st.error_message();
    return response.run_id();
  }

  // CancelRun as the holder of `token`.
  grpc::Status cancel_as(const std::string& token, const std::string& run_id, v1::RunSummary& out) {
    auto kernel = v1::Kernel::NewStub(channel());
    grpc::ClientContext context;
    context.AddMetadata("authorization", bearer(token));
    v1::CancelRunRequest request;
    request.set_run_id(run_id);
    return kernel->CancelRun(&context, request, &out);
  }

  v1::RunSummary wait_end(const std::string& run_id) {
    auto kernel = v1::Kernel::NewStub(channel());
    grpc::ClientContext watch_context;
    watch_context.AddMetadata("authorization", bearer("auditor-token"));
    v1::WatchRunRequest watch;
    watch.set_run_id(run_id);
    auto reader = kernel->WatchRun(&watch_context, watch);
    v1::RunEvent e;
    while (reader->Read(&e)) {
    }
    EXPECT_TRUE(reader->Finish().ok());
    grpc::ClientContext context;
    context.AddMetadata("authorization", bearer("auditor-token"));
    v1::GetRunRequest get;
    get.set_run_id(run_id);
    v1::RunSummary summary;
    EXPECT_TRUE(kernel->GetRun(&context, get, &summary).ok());
    return summary;
  }

  // The payloads of the run's records of one kind, oldest first.
  std::vector<json> payloads(const std::string& kind, const std::string& run_id) {
    std::vector<json> out;
    for (const auto& line : recorded(ledger, kind, run_id)) out.push_back(line["payload"]);
    return out;
  }
  std::vector<json> proposals(const std::string& run_id) { return payloads("proposal", run_id); }
  std::vector<json> refusals(const std::string& run_id) { return payloads("refusal", run_id); }

};

TEST_F(RemoteExecutors, ADisconnectIsAFailedAttemptAndAReattachedExecutorGoesOn) {
  const std::string run_id = start_remote("calc", "r1");
  ASSERT_FALSE(run_id.empty());
  {
    Attached alice(channel(), "alice-token", "", "calc");  // waits for the next run labelled calc
    v1::ProposalRequest r;
    ASSERT_TRUE(alice.next_request(r));
    EXPECT_EQ(r.run_id(), run_id);
    EXPECT_EQ(r.attempt(), 1u);
    ASSERT_TRUE(alice.answer_good(r));
    ASSERT_TRUE(alice.next_request(r));  // the next step: alice leaves holding it
    alice.drop();
  }
  // The run is alice's to serve: another executor's token may not take it over while she is
  // away (her stream may still be closing: then it is taken).
  v1::KernelMessage m;
  for (int i = 0; i < 50; ++i) {
    Attached bob(channel(), "bob-token", run_id, "");
    ASSERT_FALSE(bob.next(m)) << "bob attached to alice's run";
    grpc::Status refused = bob.finish();
    if (refused.error_code() != grpc::StatusCode::ALREADY_EXISTS) {
      EXPECT_EQ(refused.error_code(), grpc::StatusCode::FAILED_PRECONDITION) << refused.error_message();
      break;
    }
    std::this_thread::sleep_for(100ms);
  }
  Attached again(channel(), "alice-token", run_id, "");
  v1::ProposalRequest r;
  int answered = 0;
  while (again.next_request(r)) {
    ASSERT_TRUE(again.answer_good(r));
    ++answered;
  }
  EXPECT_TRUE(again.finish().ok());
  EXPECT_GE(answered, 4);
  EXPECT_EQ(wait_end(run_id).status(), v1::RUN_STATUS_COMPLETED);

  std::vector<json> recorded = proposals(run_id);
  ASSERT_GE(recorded.size(), 6u);
  EXPECT_EQ(recorded[0].value("executor", ""), "remote:calc");
  // The attempt alice held when she left: failed, recorded with her name; then hers again.
  EXPECT_NE(recorded[1]["error"].dump().find("disconnected"), std::string::npos) << recorded[1].dump();
  for (const json& p : recorded) EXPECT_EQ(p.value("executor_identity", ""), "alice");
  expect_ledger_verifies();
}

TEST_F(RemoteExecutors, WrongHashesEscapingPatchesOversizedAndNonUtf8AnswersAreRefused) {
  const std::string run_id = start_remote("calc", "r2");
  ASSERT_FALSE(run_id.empty());
  auto attach = [&] { return std::make_unique<Attached>(channel(), "alice-token", run_id, ""); };
  auto alice = attach();
  v1::ProposalRequest r;
  // Step 1: a Diff whose post-image hash lies, then a patch reaching outside the repository.
  ASSERT_TRUE(alice->next_request(r));
  json diff = json::parse(good_diff(json::parse(r.step_json()), json::parse(r.context_json())));
  diff["files"][0]["after_sha256"] = sha256("something else").str();
  ASSERT_TRUE(alice->answer(r.request_id(), diff.dump()));
  ASSERT_TRUE(alice->next_request(r));
  EXPECT_EQ(r.attempt(), 2u);
  ASSERT_TRUE(alice->answer(r.request_id(),
                            "--- /dev/null\n+++ b/../../escaped.txt\n@@ -0,0 +1 @@\n+owned\n", /*patch=*/true));
  ASSERT_TRUE(alice->next_request(r));
  EXPECT_EQ(r.attempt(), 3u);
  ASSERT_TRUE(alice->answer_good(r));
  // Step 2: a message over gRPC's limit, then one whose proposal is not UTF-8: each breaks the
  // stream, so each is a failed attempt, and the executor attaches again.
  ASSERT_TRUE(alice->next_request(r));
  alice->answer(r.request_id(), std::string(5u << 20, 'x'));
  v1::KernelMessage ignored;
  while (alice->next(ignored)) {
  }
  alice = attach();
  ASSERT_TRUE(alice->next_request(r));
  EXPECT_EQ(r.attempt(), 2u);
  alice->answer(r.request_id(), std::string("{\"step_id\": \"\xff\xfe\"}"));
  while (alice->next(ignored)) {
  }
  alice = attach();
  while (alice->next_request(r)) ASSERT_TRUE(alice->answer_good(r));
  EXPECT_EQ(wait_end(run_id).status(), v1::RUN_STATUS_COMPLETED);
  EXPECT_FALSE(fs::exists(state / "repos" / "escaped.txt"));
  EXPECT_FALSE(fs::exists(state / "escaped.txt"));

  std::vector<json> refused = refusals(run_id);
  std::string codes;
  for (const json& r : refused) codes += r.dump() + "\n";
  EXPECT_NE(codes.find("hash_mismatch"), std::string::npos) << codes;
  EXPECT_NE(codes.find("executor_failed"), std::string::npos) << codes;
  EXPECT_NE(codes.find("path_not_allowed"), std::string::npos) << codes;
  EXPECT_NE(codes.find("disconnected"), std::string::npos) << codes;
  EXPECT_EQ(refused.size(), 4u) << codes;
  // Nothing refused was accepted: every step's accepted proposal is the plan's own content.
  ProcessResult replay = warden({"replay", ledger.string()});
  EXPECT_TRUE(replay.exited_with(0)) << describe(replay);
  expect_ledger_verifies();
}

// A replacement plan from a remote executor names who sent it, as its proposals do.
TEST_F(RemoteExecutors, AReplanFromARemoteExecutorIsRecordedWithItsName) {
  const std::string run_id = start_remote("planner", "r5");
  ASSERT_FALSE(run_id.empty());
  Attached alice(channel(), "alice-token", run_id, "");
  v1::KernelMessage m;
  bool replanned = false;
  while (alice.next(m)) {
    if (m.has_run_ended()) break;
    if (m.has_replan()) {
      // The same plan again: a plan the kernel verifies and adopts.
      v1::ExecutorMessage answer;
      answer.mutable_answer()->set_request_id(m.replan().request_id());
      answer.mutable_answer()->set_plan_json(m.replan().plan_json());
      ASSERT_TRUE(alice.answer_plan(answer));
      replanned = true;
      continue;
    }
    if (!m.has_proposal_request()) continue;
    const v1::ProposalRequest& r = m.proposal_request();
    // The first step is refused until the retries run out; after the replan it is proposed well.
    if (!replanned) {
      ASSERT_TRUE(alice.answer(r.request_id(), "not a diff"));
    } else {
      ASSERT_TRUE(alice.answer_good(r));
    }
  }
  EXPECT_TRUE(replanned);
  EXPECT_EQ(wait_end(run_id).status(), v1::RUN_STATUS_COMPLETED);
  std::vector<json> plans = payloads("plan_proposal", run_id);
  ASSERT_EQ(plans.size(), 2u);
  EXPECT_FALSE(plans[0].contains("executor_identity")) << "the generated plan has no executor";
  EXPECT_EQ(plans[1].value("source", ""), "executor");
  EXPECT_EQ(plans[1].value("executor", ""), "remote:planner");
  EXPECT_EQ(plans[1].value("executor_identity", ""), "alice");
  ProcessResult replay = warden({"replay", ledger.string()});
  EXPECT_TRUE(replay.exited_with(0)) << describe(replay);
}

TEST_F(RemoteExecutors, AnExecutorThatNeverAnswersIsEndedByTheWatchdog) {
  const std::string run_id = start_remote("quiet", "r3", /*step_timeout_ms=*/2000);
  ASSERT_FALSE(run_id.empty());
  Attached silent(channel(), "alice-token", run_id, "");
  v1::ProposalRequest r;
  ASSERT_TRUE(silent.next_request(r));
  EXPECT_GT(r.timeout_ms(), 0);
  const auto start = std::chrono::steady_clock::now();
  v1::RunSummary summary = wait_end(run_id);
  EXPECT_EQ(summary.status(), v1::RUN_STATUS_TIMEOUT) << summary.reason();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 30s);
  silent.drop();
  expect_ledger_verifies();
}

TEST_F(RemoteExecutors, ProposeIsIdempotentAndOnlyForTheAwaitedAttempt) {
  const std::string run_id = start_remote("unary", "r4");
  ASSERT_FALSE(run_id.empty());
  // What the first step is, as the committed plan says.
  json step;
  for (int i = 0; i < 100 && !step.is_object(); ++i) {  // the run records its plan just after it starts
    for (const json& plan : payloads("plan_proposal", run_id)) step = plan["plan"]["steps"][0];
    if (!step.is_object()) std::this_thread::sleep_for(100ms);
  }
  ASSERT_TRUE(step.is_object());
  const std::string diff = good_diff(step, json::object());
  auto executor = v1::Executor::NewStub(channel());
  auto propose = [&](const std::string& token, const std::string& step_id, uint32_t attempt, const std::string& text,
                     const std::string& key, v1::Verdict& out) {
    grpc::ClientContext context;
    context.AddMetadata("authorization", bearer(token));
    v1::ProposeRequest request;
    request.set_run_id(run_id);
    request.set_step_id(step_id);
    request.set_attempt(attempt);
    request.mutable_proposal()->set_diff_json(text);
    request.set_idempotency_key(key);
    return executor->Propose(&context, request, &out);
  };
  v1::Verdict verdict;
  EXPECT_EQ(propose("auditor-token", step.value("id", ""), 1, diff, "k1", verdict).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(propose("alice-token", "s9", 1, diff, "k0", verdict).error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(propose("alice-token", step.value("id", ""), 2, diff, "k0b", verdict).error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
  // The step's request is awaited from the start; retry until the child has asked.
  grpc::Status st;
  for (int i = 0; i < 100; ++i) {
    st = propose("alice-token", step.value("id", ""), 1, diff, "k1", verdict);
    if (st.error_code() != grpc::StatusCode::FAILED_PRECONDITION) break;
    std::this_thread::sleep_for(100ms);
  }
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_TRUE(verdict.accepted());
  EXPECT_EQ(verdict.commit().size(), 40u);
  v1::Verdict again;
  ASSERT_TRUE(propose("alice-token", step.value("id", ""), 1, diff, "k1", again).ok());
  EXPECT_EQ(again.decision_seq(), verdict.decision_seq());
  EXPECT_EQ(again.commit(), verdict.commit());
  EXPECT_EQ(propose("alice-token", step.value("id", ""), 1, diff + " ", "k1", again).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT)
      << "a key reused for another proposal";
  EXPECT_EQ(proposals(run_id).size(), 1u) << "a retried Propose recorded a second proposal";
  EXPECT_EQ(proposals(run_id)[0].value("executor_identity", ""), "alice");

  // Alice serves the run now: another executor's token answers none of its requests, however
  // well it knows which one is awaited, and cancels nothing it did not start.
  json next_step;
  for (const json& plan : payloads("plan_proposal", run_id)) next_step = plan["plan"]["steps"][1];
  const std::string next_diff = good_diff(next_step, json::object());
  grpc::Status hijack;
  for (int i = 0; i < 100; ++i) {
    hijack = propose("bob-token", next_step.value("id", ""), 1, next_diff, "", verdict);
    if (hijack.error_message().find("served by") != std::string::npos) break;
    std::this_thread::sleep_for(100ms);  // until the run waits for that step
  }
  EXPECT_EQ(hijack.error_code(), grpc::StatusCode::FAILED_PRECONDITION) << hijack.error_message();
  EXPECT_NE(hijack.error_message().find("served by the executor alice"), std::string::npos) << hijack.error_message();
  EXPECT_EQ(proposals(run_id).size(), 1u) << "another executor's proposal was recorded";
  v1::RunSummary summary;
  EXPECT_EQ(cancel_as("bob-token", run_id, summary).error_code(), grpc::StatusCode::PERMISSION_DENIED);
  // Idempotency keys are names, not payloads: a long one is refused before anything is kept.
  EXPECT_EQ(propose("alice-token", next_step.value("id", ""), 1, next_diff, std::string(300, 'k'), verdict).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);

  // An executor already attached holds the run: a second is refused.
  Attached first(channel(), "alice-token", run_id, "");
  v1::KernelMessage m;
  ASSERT_TRUE(first.next(m));
  EXPECT_TRUE(m.has_attached());
  Attached second(channel(), "bob-token", run_id, "");
  EXPECT_FALSE(second.next(m));
  EXPECT_EQ(second.finish().error_code(), grpc::StatusCode::ALREADY_EXISTS);
  first.drop();
  // Gone, alice still serves it: bob may not attach in its place.
  for (int i = 0; i < 50; ++i) {
    Attached third(channel(), "bob-token", run_id, "");
    if (third.next(m)) {
      ADD_FAILURE() << "bob attached to alice's run";
      break;
    }
    grpc::Status refused = third.finish();
    if (refused.error_code() == grpc::StatusCode::ALREADY_EXISTS) {  // alice's stream is still closing
      std::this_thread::sleep_for(100ms);
      continue;
    }
    EXPECT_EQ(refused.error_code(), grpc::StatusCode::FAILED_PRECONDITION) << refused.error_message();
    break;
  }

  ASSERT_TRUE(cancel_as("alice-token", run_id, summary).ok());
  EXPECT_EQ(summary.status(), v1::RUN_STATUS_CANCELLED);
  expect_ledger_verifies();
}

// One caller's waiting streams hold at most a quarter of --max-calls: past it RESOURCE_EXHAUSTED,
// and every other caller is still served.
TEST_F(RemoteExecutors, OneCallersWaitingStreamsCannotTakeEveryThread) {
  server->kill(SIGTERM);
  ASSERT_TRUE(server->wait().exited_with(0));
  server.reset();
  server.emplace(start({"--tokens", (tmp / "tokens.json").string(), "--max-calls", "8"}));
  // An Attach waiting for a label no run has, given `wait` to be taken: its status then.
  auto attach_status = [&](std::chrono::milliseconds wait) {
    auto executor = v1::Executor::NewStub(channel());
    grpc::ClientContext context;
    context.AddMetadata("authorization", bearer("alice-token"));
    context.set_deadline(std::chrono::system_clock::now() + wait);
    auto stream = executor->Attach(&context);
    v1::ExecutorMessage first;
    first.mutable_attach()->set_label("nobody");
    stream->Write(first);
    v1::KernelMessage m;
    while (stream->Read(&m)) {
    }
    return stream->Finish();
  };
  {
    Attached one(channel(), "alice-token", "", "nobody"), two(channel(), "alice-token", "", "nobody");
    grpc::Status third;
    for (int i = 0; i < 50; ++i) {  // until the server holds both waiting
      third = attach_status(500ms);
      if (third.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED) break;
    }
    EXPECT_EQ(third.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << third.error_message();
    // Others are served all along.
    auto kernel = v1::Kernel::NewStub(channel());
    grpc::ClientContext context;
    context.AddMetadata("authorization", bearer("auditor-token"));
    v1::ListRunsResponse listed;
    EXPECT_TRUE(kernel->ListRuns(&context, v1::ListRunsRequest(), &listed).ok());
    EXPECT_EQ(attach_status(300ms).error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  }
  // Given back as the streams end: a new one waits again (until its own deadline).
  grpc::Status again;
  for (int i = 0; i < 50; ++i) {
    again = attach_status(300ms);
    if (again.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) break;
    std::this_thread::sleep_for(100ms);  // a left stream's handler notices within 200 ms
  }
  EXPECT_EQ(again.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << again.error_message();
}

// A pipeline's approval is a person's: only an admin's token answers it, in any form (the
// agent whose work waits on it must not approve it itself).
TEST_F(RemoteExecutors, AnExecutorCannotApproveAPipelinesApproval) {
  auto pipeline = v1::Pipeline::NewStub(channel());
  auto run = [&](v1::PipelineRunResponse& out) {
    grpc::ClientContext context;
    context.AddMetadata("authorization", bearer("alice-token"));
    v1::PipelineRunRequest request;
    request.set_config_json(read_file_or_empty(fs::path(WARDEN_SOURCE_DIR) / "examples" / "pipelines" / "approval.json"));
    request.set_input_json("release 0.2");
    return pipeline->Run(&context, request, &out);
  };
  auto resume = [&](const std::string& run_id, bool approve, const std::string& response, v1::PipelineRunResponse& out) {
    grpc::ClientContext context;
    context.AddMetadata("authorization", bearer("alice-token"));
    v1::PipelineResumeRequest request;
    request.set_run_id(run_id);
    request.set_approve(approve);
    request.set_response_json(response);
    return pipeline->Resume(&context, request, &out);
  };
  v1::PipelineRunResponse paused, ended;
  ASSERT_TRUE(run(paused).ok());
  ASSERT_EQ(paused.status(), v1::RUN_STATUS_LIVE);
  EXPECT_EQ(resume(paused.run_id(), true, "", ended).error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(resume(paused.run_id(), false, "yes", ended).error_code(), grpc::StatusCode::PERMISSION_DENIED)
      << "an approve word as a response is an approval too";
  EXPECT_EQ(resume(paused.run_id(), false, "", ended).error_code(), grpc::StatusCode::PERMISSION_DENIED);
  ProcessResult shown = warden({"pipeline", "show", paused.run_id(), "--ledger", ledger.string(), "--json"});
  EXPECT_NE(shown.out.find("\"status\":\"waiting\""), std::string::npos) << "the run still waits: " << shown.out;
}

// A run is served by the identity its starter names (its own by default): an executor waiting
// on the run's label with another token does not get it, the named one does.
TEST_F(RemoteExecutors, ARunIsServedByTheIdentityItsStarterNames) {
  // bob waits on the label before the run starts, as a squatter would.
  Attached squatter(channel(), "bob-token", "", "served");
  std::this_thread::sleep_for(300ms);
  const std::string run_id = start_remote("served", "served");
  ASSERT_FALSE(run_id.empty());
  // Had the squatter been given the run, alice's attach would be refused (ALREADY_EXISTS).
  Attached alice(channel(), "alice-token", run_id, "");
  v1::ProposalRequest r;
  ASSERT_TRUE(alice.next_request(r)) << alice.finish().error_message();
  EXPECT_EQ(r.run_id(), run_id);
  alice.drop();
  squatter.drop();

  // Started by alice for bob: bob serves it, and alice herself may not.
  auto kernel = v1::Kernel::NewStub(channel());
  grpc::ClientContext context;
  context.AddMetadata("authorization", bearer("alice-token"));
  v1::StartRunRequest request;
  request.set_blueprint("calculator");
  request.set_repository("for-bob");
  request.set_executor("remote");
  request.set_executor_label("for-bob");
  request.set_executor_identity("bob");
  v1::StartRunResponse started;
  ASSERT_TRUE(kernel->StartRun(&context, request, &started).ok());
  Attached refused(channel(), "alice-token", started.run_id(), "");
  v1::KernelMessage m;
  EXPECT_FALSE(refused.next(m));
  EXPECT_EQ(refused.finish().error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  Attached bob(channel(), "bob-token", "", "for-bob");
  ASSERT_TRUE(bob.next_request(r));
  EXPECT_EQ(r.run_id(), started.run_id());
  v1::RunSummary summary;
  EXPECT_TRUE(cancel_as("alice-token", started.run_id(), summary).ok()) << "its starter cancels it";
}

// Ended remote runs leave nothing open in the server: ten started and cancelled, and its
// descriptors are what they were (each run had a channel of its own while it lived).
TEST_F(RemoteExecutors, EndedRemoteRunsLeaveNoDescriptorBehind) {
  auto descriptors = [&] {
    size_t n = 0;
    for ([[maybe_unused]] const auto& e : fs::directory_iterator("/proc/" + std::to_string(server->pid()) + "/fd")) ++n;
    return n;
  };
  auto cancel = [&](const std::string& run_id) {
    v1::RunSummary summary;
    EXPECT_TRUE(cancel_as("alice-token", run_id, summary).ok());
  };
  cancel(start_remote("fd-0", "fd-0"));
  const size_t before = descriptors();
  for (int i = 1; i <= 10; ++i) cancel(start_remote("fd-" + std::to_string(i), "fd-" + std::to_string(i)));
  // Each start drops the runs that have ended before it; a run's channel closes as its
  // process exits, which on a loaded machine may lag the cancel's answer.
  size_t now = descriptors();
  for (int i = 11; i < 31 && now > before + 2; ++i) {
    std::this_thread::sleep_for(100ms);
    cancel(start_remote("fd-" + std::to_string(i), "fd-" + std::to_string(i)));
    now = descriptors();
  }
  EXPECT_LE(now, before + 2) << "descriptors grew with ended runs";
}

}  // namespace
}  // namespace warden::test
