// Runs over gRPC, from outside: a real `warden serve` starting real `warden build` children
// (bwrap sandboxes, git, the shared ledger) for clients on its unix socket. What a client must
// be able to rely on: a started run is recorded before its id comes back; a watch delivers
// every event of the run once, in ledger order, and ends after the terminal one, resuming
// from any seq; runs at once do not mix; cancel, SIGTERM and SIGKILL end runs with a recorded
// status, the ledger verifies and branches hold only accepted commits; and requests that
// would reach outside the server's state are refused.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <warden.grpc.pb.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <thread>

#include "common/sha256.h"
#include "tests/service/runs_fixture.h"
#include "tests/support/files.h"
#include "tests/support/git_fixture.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"
#include "tests/support/warden_cli.h"

namespace warden::test {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

TEST_F(ServeRuns, ARunIsWatchedWholeAndResumedFromAnySeq) {
  Child server = start();
  auto kernel = v1::Kernel::NewStub(channel());
  const std::string run_id = start_calculator(*kernel, "calc", "logical");
  ASSERT_FALSE(run_id.empty());
  // Recorded before its id came back: the run is known at once.
  EXPECT_EQ(get_run(*kernel, run_id).run_id(), run_id);

  std::vector<v1::RunEvent> all = watch(*kernel, run_id, 0);
  ASSERT_FALSE(all.empty());
  EXPECT_EQ(all.front().type(), "run_started");
  EXPECT_EQ(all.back().type(), "run_completed");
  std::vector<uint64_t> seqs;
  for (const auto& e : all) {
    EXPECT_EQ(e.run_id(), run_id);
    seqs.push_back(e.ledger_seq());
  }
  // Exactly the run's recorded events, each once, in ledger order.
  EXPECT_EQ(seqs, recorded_event_seqs(run_id));

  // A watcher that lost its connection after event k resumes from seq + 1: the rest, exactly.
  for (size_t k : {size_t{0}, all.size() / 2, all.size() - 2}) {
    std::vector<v1::RunEvent> rest = watch(*kernel, run_id, all[k].ledger_seq() + 1);
    ASSERT_EQ(rest.size(), all.size() - k - 1) << "resumed after event " << k;
    for (size_t i = 0; i < rest.size(); ++i) EXPECT_EQ(rest[i].event_id(), all[k + 1 + i].event_id());
  }

  v1::RunSummary summary = get_run(*kernel, run_id);
  EXPECT_EQ(summary.status(), v1::RUN_STATUS_COMPLETED);
  EXPECT_EQ(summary.kind(), v1::RUN_KIND_BUILD);
  EXPECT_EQ(summary.steps_done(), 5u);
  EXPECT_EQ(summary.steps_total(), 5u);
  grpc::ClientContext list_context;
  v1::ListRunsResponse listed;
  ASSERT_TRUE(kernel->ListRuns(&list_context, {}, &listed).ok());
  ASSERT_EQ(listed.runs_size(), 1);
  EXPECT_EQ(listed.runs(0).run_id(), run_id);

  // The accepted tip's receipt, served, verifies offline with the ledger's key.
  ProcessResult tip = run({"/usr/bin/git", "-C", (state / "repos" / "calc").string(), "rev-parse", "refs/heads/warden/calculator"});
  ASSERT_TRUE(tip.exited_with(0)) << describe(tip);
  auto ledger_client = v1::Ledger::NewStub(channel());
  grpc::ClientContext receipt_context;
  v1::GetReceiptRequest receipt_request;
  receipt_request.set_commit(tip.out.substr(0, 40));
  v1::Receipt receipt;
  grpc::Status got = ledger_client->GetReceipt(&receipt_context, receipt_request, &receipt);
  ASSERT_TRUE(got.ok()) << got.error_message();
  write_file(tmp / "receipt.json", receipt.receipt_json());
  ProcessResult verified = warden({"receipt", "verify", (tmp / "receipt.json").string(), "--key", (ledger / "signer.pub").string()});
  EXPECT_TRUE(verified.exited_with(0)) << describe(verified);
  grpc::ClientContext bad_context;
  receipt_request.set_commit(std::string(40, '0'));
  EXPECT_EQ(ledger_client->GetReceipt(&bad_context, receipt_request, &receipt).error_code(), grpc::StatusCode::NOT_FOUND);

  expect_ledger_verifies();
  expect_branch_holds_only_accepted("calc", run_id);
  server.kill(SIGTERM);
  EXPECT_TRUE(server.wait().exited_with(0));
}

TEST_F(ServeRuns, RequestsThatReachOutsideTheStateAreRefused) {
  write_file(tmp / "tokens.json", R"({"tokens": [
      {"name": "agent", "sha256": ")" + sha256("agent-token").str() + R"(", "roles": ["executor"]},
      {"name": "auditor", "sha256": ")" + sha256("auditor-token").str() + R"(", "roles": ["observer"]}]})");
  fs::permissions(tmp / "tokens.json", fs::perms::owner_read | fs::perms::owner_write, fs::perm_options::replace);
  Child server = start({"--tokens", (tmp / "tokens.json").string()});
  auto kernel = v1::Kernel::NewStub(channel());
  auto code = [&](const v1::StartRunRequest& request, const std::string& token) {
    grpc::ClientContext context;
    context.AddMetadata("authorization", "Bearer " + token);
    v1::StartRunResponse response;
    return kernel->StartRun(&context, request, &response);
  };
  struct Case {
    std::string what;
    std::function<void(v1::StartRunRequest&)> set;
    grpc::StatusCode expected;
  };
  const std::vector<Case> cases = {
      {"a blueprint path", [](auto& r) { r.set_blueprint("../blueprints/calculator"); }, grpc::StatusCode::INVALID_ARGUMENT},
      {"an absolute blueprint", [](auto& r) { r.set_blueprint("/etc"); }, grpc::StatusCode::INVALID_ARGUMENT},
      {"an unknown blueprint", [](auto& r) { r.set_blueprint("nothing"); }, grpc::StatusCode::NOT_FOUND},
      {"an inline blueprint with a seed on the server",
       [](auto& r) { r.set_blueprint_json(R"({"name": "x", "repository": {"seed": "/etc"}})"); },
       grpc::StatusCode::INVALID_ARGUMENT},
      {"an inline blueprint with held-out tests on the server",
       [](auto& r) { r.set_blueprint_json(R"({"name": "x", "held_out": {"dir": "secrets", "checks": []}})"); },
       grpc::StatusCode::INVALID_ARGUMENT},
      {"a repository path",
       [](auto& r) {
         r.set_blueprint("calculator");
         r.set_repository("../../tmp");
       },
       grpc::StatusCode::INVALID_ARGUMENT},
      {"a policy file",
       [](auto& r) {
         r.set_blueprint("calculator");
         r.set_policy("/etc/passwd");
       },
       grpc::StatusCode::INVALID_ARGUMENT},
      {"an executor of no kind",
       [](auto& r) {
         r.set_blueprint("calculator");
         r.set_executor("shell");
       },
       grpc::StatusCode::INVALID_ARGUMENT},
      {"a command executor without admin",
       [](auto& r) {
         r.set_blueprint("calculator");
         r.set_executor("command:/bin/sh -c id");
       },
       grpc::StatusCode::PERMISSION_DENIED},
      // A policy decides what is accepted and in which sandbox: a client names only a built-in one.
      {"an inline blueprint naming a policy file on the server",
       [](auto& r) { r.set_blueprint_json(R"({"name": "x", "policy": "/etc/passwd"})"); }, grpc::StatusCode::INVALID_ARGUMENT},
      {"an inline blueprint committing on the base branch",
       [](auto& r) { r.set_blueprint_json(R"({"name": "x", "repository": {"branch": "main"}})"); },
       grpc::StatusCode::INVALID_ARGUMENT},
      {"a plan digest that is none", [](auto& r) { r.set_plan_sha256("sha256:00"); }, grpc::StatusCode::INVALID_ARGUMENT},
      {"a plan the ledger does not hold", [](auto& r) { r.set_plan_sha256("sha256:" + std::string(64, 'a')); },
       grpc::StatusCode::NOT_FOUND},
      {"nothing to build", [](auto&) {}, grpc::StatusCode::INVALID_ARGUMENT},
  };
  for (const Case& c : cases) {
    v1::StartRunRequest request;
    c.set(request);
    grpc::Status st = code(request, "agent-token");
    EXPECT_EQ(st.error_code(), c.expected) << c.what << ": " << st.error_message();
  }
  v1::StartRunRequest fine;
  fine.set_blueprint("calculator");
  EXPECT_EQ(code(fine, "auditor-token").error_code(), grpc::StatusCode::PERMISSION_DENIED) << "an observer starts nothing";
  EXPECT_EQ(code(fine, "wrong").error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_FALSE(fs::exists(state / "repos")) << "a refused request made a repository";
  server.kill(SIGTERM);
  EXPECT_TRUE(server.wait().exited_with(0));
}

// Runs on a logical clock are numbered by the server after the ledger's runs: a second one on
// the shared ledger starts (a child's own logical ids would start at 1 again).
TEST_F(ServeRuns, LogicalClockRunsAreNumberedAfterTheLedgersRuns) {
  Child server = start();
  auto kernel = v1::Kernel::NewStub(channel());
  const std::string first = start_calculator(*kernel, "logical-1", "logical");
  const std::string second = start_calculator(*kernel, "logical-2", "logical");
  EXPECT_EQ(first, "run-000001");
  EXPECT_EQ(second, "run-000002");
  for (const std::string& id : {first, second}) EXPECT_EQ(watch(*kernel, id, 0).back().type(), "run_completed");
  server.kill(SIGTERM);
  EXPECT_TRUE(server.wait().exited_with(0));
  // Two repositories built from one blueprint on the logical clock hold the same commits:
  // replay over the server's repositories checks each branch in its own.
  ProcessResult replay = warden({"replay", ledger.string(), "--repos", (state / "repos").string()});
  EXPECT_TRUE(replay.exited_with(0)) << describe(replay);
  // The two repositories share their seed and trees; logical-2's branch, moved back behind
  // the ledger's back, is still held to what the ledger accepted for it there, not excused by
  // logical-1's.
  ProcessResult back = run({"/usr/bin/git", "-C", (state / "repos" / "logical-2").string(), "update-ref",
                            "refs/heads/warden/calculator", "refs/heads/warden/calculator~2"});
  ASSERT_TRUE(back.exited_with(0)) << describe(back);
  ProcessResult caught = warden({"replay", ledger.string(), "--repos", (state / "repos").string()});
  EXPECT_TRUE(caught.exited_with(1)) << describe(caught);
  EXPECT_NE(caught.out.find("moved without a decision"), std::string::npos) << caught.out;
}

// A server's ledger spans its repositories (one per StartRun repository): `replay --repos`
// checks each run against the repository that holds it, where `--repo` wants every commit in
// the one it is given. A branch moved behind the ledger's back in either is still caught.
TEST_F(ServeRuns, ReplayOfAServersLedgerChecksEachRunInItsOwnRepository) {
  Child server = start();
  auto kernel = v1::Kernel::NewStub(channel());
  const std::string a = start_calculator(*kernel, "calc-a");
  const std::string b = start_calculator(*kernel, "calc-b");
  for (const std::string& id : {a, b}) EXPECT_EQ(watch(*kernel, id, 0).back().type(), "run_completed");
  server.kill(SIGTERM);
  EXPECT_TRUE(server.wait().exited_with(0));
  ProcessResult one = warden({"replay", ledger.string(), "--repo", (state / "repos" / "calc-a").string()});
  EXPECT_FALSE(one.exited_with(0)) << "calc-b's commits are not in calc-a: " << describe(one);
  ProcessResult all = warden({"replay", ledger.string(), "--repos", (state / "repos").string(), "--json"});
  ASSERT_TRUE(all.exited_with(0)) << describe(all);
  EXPECT_EQ(stdout_json(all).value("branches", 0), 2) << all.out;
  ProcessResult both = warden({"replay", ledger.string(), "--repo", "x", "--repos", "y"});
  EXPECT_TRUE(both.exited_with(2)) << describe(both);

  const fs::path moved = state / "repos" / "calc-b";
  ProcessResult back = run({"/usr/bin/git", "-C", moved.string(), "update-ref", "refs/heads/warden/calculator",
                            "refs/heads/warden/calculator~1"});
  ASSERT_TRUE(back.exited_with(0)) << describe(back);
  ProcessResult caught = warden({"replay", ledger.string(), "--repos", (state / "repos").string()});
  EXPECT_TRUE(caught.exited_with(1)) << describe(caught);
  EXPECT_NE(caught.out.find("moved without a decision"), std::string::npos) << caught.out;
}

// The message limit is configured, and a message past it is refused before it is read whole.
TEST_F(ServeRuns, AMessageOverTheConfiguredLimitIsResourceExhausted) {
  Child server = start({"--max-message-bytes", "65536"});
  auto kernel = v1::Kernel::NewStub(channel());
  v1::StartRunRequest request;
  request.set_blueprint_json("{\"name\": \"" + std::string(100'000, 'x') + "\"}");
  std::string run_id;
  EXPECT_EQ(start_run(*kernel, request, run_id).error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  request.set_blueprint_json("{\"name\": \"" + std::string(1'000, 'x') + "\"}");
  EXPECT_EQ(start_run(*kernel, request, run_id).error_code(), grpc::StatusCode::INVALID_ARGUMENT) << "a small one is read";
  server.kill(SIGTERM);
  EXPECT_TRUE(server.wait().exited_with(0));
}

// Runs live at once are bounded: past --max-runs StartRun is refused, not a process more.
TEST_F(ServeRuns, RunsPastTheConfiguredMostAreResourceExhausted) {
  Child server = start({"--max-runs", "1"});
  auto kernel = v1::Kernel::NewStub(channel());
  const std::string first = start_calculator(*kernel, "m1");
  ASSERT_FALSE(first.empty());
  v1::StartRunRequest request;
  request.set_blueprint("calculator");
  request.set_repository("m2");
  std::string run_id;
  grpc::Status refused = start_run(*kernel, request, run_id);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << refused.error_message();
  watch(*kernel, first, 0);
  // Its end is recorded; its process may take a moment more to exit.
  grpc::Status started;
  for (int i = 0; i < 100; ++i) {
    started = start_run(*kernel, request, run_id);
    if (started.error_code() != grpc::StatusCode::RESOURCE_EXHAUSTED) break;
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_TRUE(started.ok()) << "a run may start once one has ended: " << started.error_message();
  watch(*kernel, run_id, 0);
  server.kill(SIGTERM);
  EXPECT_TRUE(server.wait().exited_with(0));
}

// An attacker's try: two runs started at once on the same repository (a client names the
// repository), racing for one branch. Whatever each run manages, the branch must hold only
// commits the ledger accepted, in the order it accepted them, and the ledger must verify and
// replay: a run whose commit lost the race records that, never a commit that is not there.
TEST_F(ServeRuns, TwoRunsRacingForOneRepositoryLeaveOnlyAcceptedCommits) {
  Child server = start();
  {
    // The repository made and seeded by a run cancelled before it commits: the branch is not
    // made yet, so neither racer below is turned away at the start.
    auto kernel = v1::Kernel::NewStub(channel());
    const std::string first = start_calculator(*kernel, "shared");
    v1::RunSummary cancelled;
    ASSERT_TRUE(cancel_run(*kernel, first, cancelled).ok());
  }
  std::string ids[2];
  std::string refused[2];
  std::thread racers[2];
  for (int i = 0; i < 2; ++i) {
    racers[i] = std::thread([&, i] {
      auto kernel = v1::Kernel::NewStub(channel());
      v1::StartRunRequest request;
      request.set_blueprint("calculator");
      request.set_repository("shared");
      std::string run_id;
      grpc::Status st = start_run(*kernel, request, run_id);
      if (st.ok()) {
        ids[i] = run_id;
        watch(*kernel, run_id, 0);
      } else {
        refused[i] = st.error_message();
      }
    });
  }
  for (auto& t : racers) t.join();
  auto kernel = v1::Kernel::NewStub(channel());
  int completed = 0;
  for (int i = 0; i < 2; ++i) {
    ASSERT_FALSE(ids[i].empty()) << "racer " << i << " did not start: " << refused[i];
    v1::RunSummary summary = get_run(*kernel, ids[i]);
    if (summary.status() == v1::RUN_STATUS_COMPLETED) {
      ++completed;
    } else {
      // The loser says why: the branch moved under it.
      EXPECT_NE(summary.reason().find("branch_moved"), std::string::npos) << summary.reason();
    }
  }
  EXPECT_LE(completed, 1) << "both runs completed on one branch";
  // Every commit on the branch, oldest first, is one a commit record of some run names.
  std::set<std::string> accepted;
  for (const std::string& id : ids) {
    if (id.empty()) continue;
    for (const auto& line : recorded(ledger, "commit", id)) accepted.insert(line["payload"].value("commit", ""));
  }
  ProcessResult log = run({"/usr/bin/git", "-C", (state / "repos" / "shared").string(), "rev-list", "--first-parent",
                           "refs/heads/warden/calculator"});
  ASSERT_TRUE(log.exited_with(0)) << describe(log);
  std::vector<std::string> on_branch = complete_lines(log.out);
  ASSERT_FALSE(on_branch.empty());
  on_branch.pop_back();  // the seed commit
  for (const std::string& commit : on_branch) {
    EXPECT_TRUE(accepted.contains(commit)) << commit << " is on the branch but no run's commit record names it";
  }
  expect_ledger_verifies();
  ProcessResult replay = warden({"replay", ledger.string(), "--repo", (state / "repos" / "shared").string()});
  EXPECT_TRUE(replay.exited_with(0)) << describe(replay);
  server.kill(SIGTERM);
  EXPECT_TRUE(server.wait().exited_with(0));
}

TEST_F(ServeRuns, SixteenRunsFromSixteenClientsEachWatchedTwice) {
  Child server = start();
  constexpr int kRuns = 16;
  std::vector<std::string> ids(kRuns);
  std::vector<std::vector<v1::RunEvent>> seen(kRuns * 2);
  std::vector<std::thread> clients;
  for (int i = 0; i < kRuns; ++i) {
    clients.emplace_back([&, i] {
      auto kernel = v1::Kernel::NewStub(channel());  // a client of its own
      ids[i] = start_calculator(*kernel, "r" + std::to_string(i));
      if (ids[i].empty()) return;
      std::thread second([&, i] {
        auto other = v1::Kernel::NewStub(channel());
        seen[2 * i + 1] = watch(*other, ids[i], 0);
      });
      seen[2 * i] = watch(*kernel, ids[i], 0);
      second.join();
    });
  }
  for (auto& t : clients) t.join();
  auto kernel = v1::Kernel::NewStub(channel());
  for (int i = 0; i < kRuns; ++i) {
    ASSERT_FALSE(ids[i].empty()) << "run " << i << " did not start";
    std::vector<uint64_t> recorded = recorded_event_seqs(ids[i]);
    for (int w = 0; w < 2; ++w) {
      const auto& events = seen[2 * i + w];
      ASSERT_FALSE(events.empty());
      EXPECT_EQ(events.back().type(), "run_completed") << ids[i];
      std::vector<uint64_t> seqs;
      for (const auto& e : events) {
        EXPECT_EQ(e.run_id(), ids[i]) << "another run's event in this run's watch";
        seqs.push_back(e.ledger_seq());
      }
      EXPECT_EQ(seqs, recorded) << "run " << ids[i] << " watcher " << w << ": lost, repeated or reordered events";
    }
    EXPECT_EQ(get_run(*kernel, ids[i]).status(), v1::RUN_STATUS_COMPLETED);
    expect_branch_holds_only_accepted("r" + std::to_string(i), ids[i]);
  }
  expect_ledger_verifies();
  server.kill(SIGTERM);
  EXPECT_TRUE(server.wait().exited_with(0));
}

TEST_F(ServeRuns, CancelSigtermAndSigkillEndRunsWithARecordedStatus) {
  std::optional<Child> server;
  server.emplace(start());
  auto kernel = v1::Kernel::NewStub(channel());
  const std::string cancelled = start_calculator(*kernel, "c0");
  v1::RunSummary after;
  grpc::Status st = cancel_run(*kernel, cancelled, after);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_EQ(after.status(), v1::RUN_STATUS_CANCELLED);
  EXPECT_EQ(watch(*kernel, cancelled, 0).back().type(), "run_cancelled");
  EXPECT_EQ(cancel_run(*kernel, cancelled, after).error_code(), grpc::StatusCode::FAILED_PRECONDITION);

  // SIGTERM: the live runs are cancelled and recorded so before the server exits 0.
  const std::string terminated = start_calculator(*kernel, "c1");
  server->kill(SIGTERM);
  ProcessResult stopped = server->wait();
  EXPECT_TRUE(stopped.exited_with(0)) << describe(stopped);

  // SIGKILL: the runs die with the server; the next server records their end before serving.
  server.reset();
  server.emplace(start());
  kernel = v1::Kernel::NewStub(channel());
  EXPECT_EQ(get_run(*kernel, terminated).status(), v1::RUN_STATUS_CANCELLED);
  const std::string killed = start_calculator(*kernel, "c2");
  std::this_thread::sleep_for(300ms);
  server->kill(SIGKILL);
  server->wait();
  server.reset();
  server.emplace(start());
  kernel = v1::Kernel::NewStub(channel());
  v1::RunSummary summary = get_run(*kernel, killed);
  EXPECT_EQ(summary.status(), v1::RUN_STATUS_FAILED);
  EXPECT_NE(summary.reason().find("interrupted"), std::string::npos) << summary.reason();
  std::vector<v1::RunEvent> events = watch(*kernel, killed, 0);
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().type(), "run_failed") << "the recorded end is watched like any other";

  expect_ledger_verifies();
  expect_branch_holds_only_accepted("c0", cancelled);
  expect_branch_holds_only_accepted("c1", terminated);
  expect_branch_holds_only_accepted("c2", killed);
  server->kill(SIGTERM);
  EXPECT_TRUE(server->wait().exited_with(0));
}

// A pipeline paused on an approval, resumed over gRPC and watched from its records; a plan
// generated, verified and committed over gRPC, as the CLI does them.
TEST_F(ServeRuns, PipelinesAndPlans) {
  Child server = start();
  auto pipeline = v1::Pipeline::NewStub(channel());
  v1::PipelineRunResponse paused;
  grpc::Status st = run_pipeline("approval", "release 0.2", paused);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_EQ(paused.status(), v1::RUN_STATUS_LIVE);
  EXPECT_NE(paused.interrupt_json().find("approval"), std::string::npos) << paused.interrupt_json();
  v1::PipelineResumeRequest resume;
  resume.set_run_id(paused.run_id());
  resume.set_approve(true);
  v1::PipelineRunResponse ended;
  grpc::ClientContext resume_context;
  st = pipeline->Resume(&resume_context, resume, &ended);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_EQ(ended.status(), v1::RUN_STATUS_COMPLETED);
  grpc::ClientContext watch_context;
  v1::WatchRunRequest watch_request;
  watch_request.set_run_id(paused.run_id());
  auto reader = pipeline->Watch(&watch_context, watch_request);
  std::vector<std::string> kinds;
  v1::RunEvent e;
  uint64_t last_seq = 0;
  while (reader->Read(&e)) {
    // The events of one record (a step's) share its seq.
    EXPECT_TRUE(kinds.empty() || e.ledger_seq() >= last_seq);
    last_seq = e.ledger_seq();
    kinds.push_back(e.type());
  }
  ASSERT_TRUE(reader->Finish().ok());
  ASSERT_FALSE(kinds.empty());
  // The stream's event vocabulary (kernel/record/event_stream.h), not the records' kinds.
  EXPECT_EQ(kinds.front(), "stage_started");
  EXPECT_NE(std::find(kinds.begin(), kinds.end(), "interrupt_raised"), kinds.end());
  EXPECT_EQ(kinds.back(), "pipeline_completed");

  auto kernel = v1::Kernel::NewStub(channel());
  const std::string blueprint = R"({"format": "warden.blueprint/v1", "name": "tiny", "language": "python",
      "repository": {"seed": null, "base": "HEAD"}, "goals": ["a constant"], "policy": "python",
      "intent": {"name": "python_package", "artifacts": ["module"]},
      "modules": [{"name": "tiny", "path": "src/tiny/__init__.py", "content": "X = 1\n"}]})";
  v1::GeneratePlanRequest generate;
  generate.set_blueprint_json(blueprint);
  v1::PlanResponse plan;
  grpc::ClientContext generate_context;
  st = kernel->GeneratePlan(&generate_context, generate, &plan);
  ASSERT_TRUE(st.ok()) << st.error_message();
  v1::VerifyPlanRequest verify;
  verify.set_plan_json(plan.plan_json());
  verify.set_policy("python");
  v1::VerifyPlanResponse verified;
  grpc::ClientContext verify_context;
  ASSERT_TRUE(kernel->VerifyPlan(&verify_context, verify, &verified).ok());
  EXPECT_TRUE(verified.ok());
  v1::CommitPlanRequest commit;
  commit.set_plan_json(plan.plan_json());
  v1::CommitPlanResponse committed;
  grpc::ClientContext commit_context;
  st = kernel->CommitPlan(&commit_context, commit, &committed);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_EQ(committed.plan_sha256(), plan.plan_sha256());

  // A run of the committed plan, by its digest alone: its repository is new and empty.
  v1::StartRunRequest from_plan;
  from_plan.set_plan_sha256(committed.plan_sha256());
  v1::StartRunResponse started;
  grpc::ClientContext start_context;
  st = kernel->StartRun(&start_context, from_plan, &started);
  ASSERT_TRUE(st.ok()) << st.error_message() << "\n" << read_file_or_empty(state / "runs" / "children.log");
  EXPECT_EQ(started.name(), "tiny");
  EXPECT_EQ(started.repository(), "tiny");
  auto events = watch(*kernel, started.run_id(), 0);
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().type(), "run_completed");
  v1::RunSummary summary = get_run(*kernel, started.run_id());
  EXPECT_EQ(nlohmann::json::parse(summary.result_json()).value("plan_sha256", ""), committed.plan_sha256());
  ProcessResult replay = warden({"replay", ledger.string(), "--repo", (state / "repos" / "tiny").string()});
  EXPECT_TRUE(replay.exited_with(0)) << describe(replay);

  // A plan or policy that names a file on the server is refused before anything runs, and
  // what a call sent does not stay behind it.
  auto verify_code = [&](const std::string& plan_json, const std::string& policy) {
    v1::VerifyPlanRequest r;
    r.set_plan_json(plan_json);
    r.set_policy(policy);
    v1::VerifyPlanResponse ignored;
    grpc::ClientContext c;
    return kernel->VerifyPlan(&c, r, &ignored).error_code();
  };
  auto with_policy = nlohmann::json::parse(plan.plan_json());
  with_policy["policy"] = "/etc/passwd";
  EXPECT_EQ(verify_code(with_policy.dump(), ""), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(verify_code(plan.plan_json(), R"({"format": "warden.policy/v1", "name": "evil", "sandbox_profile": "/tmp/profile.json"})"),
            grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(!fs::exists(state / "tmp") || fs::is_empty(state / "tmp")) << "a call's documents stayed behind it";

  // A policy path on the server is not a policy a client may name.
  verify.set_policy("/etc/passwd");
  grpc::ClientContext bad_context;
  EXPECT_EQ(kernel->VerifyPlan(&bad_context, verify, &verified).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  expect_ledger_verifies();
  server.kill(SIGTERM);
  EXPECT_TRUE(server.wait().exited_with(0));
}

}  // namespace
}  // namespace warden::test
