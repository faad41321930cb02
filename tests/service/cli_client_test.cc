// The CLI as a client of `warden serve`: `warden build|run status|run cancel|run watch
// --server ADDR` exec `warden-grpc client ...`, which calls a real server (started here, over
// its unix socket) and prints what the local command prints. What a user must be able to rely
// on: a build over the server streams the same events and ends with the same result line as
// the same build run locally; run status, watch and cancel print what the local commands print
// from the server's ledger; and every failure (no server, no such run, a wrong token, a token
// file others can read, a server whose answers are not Warden's) exits with its documented
// code and the --json error line, never a crash.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <warden.grpc.pb.h>

#include <regex>
#include <string>
#include <vector>

#include "common/sha256.h"
#include "tests/service/runs_fixture.h"
#include "tests/support/files.h"
#include "tests/support/process.h"
#include "tests/support/warden_cli.h"

namespace warden::test {
namespace {

// The lines of `text` a filter keeps, in order.
std::vector<std::string> lines_where(const std::string& text, const std::function<bool(const std::string&)>& keep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    std::string line = text.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
    if (keep(line)) out.push_back(line);
    if (nl == std::string::npos) break;
    start = nl + 1;
  }
  return out;
}

// A build's progress lines: the step lines, the verdict and check lines under them, a cancellation.
bool progress_line(const std::string& line) {
  return line.starts_with("[") || line.starts_with("      ") || line.starts_with("cancelled:");
}

// The summary lines that describe the run itself (not where its repository and ledger are).
bool summary_line(const std::string& line) {
  for (const char* head : {"run        ", "steps      ", "verdicts   ", "commit     ", "tree       ", "plan       ", "policy     "}) {
    if (line.starts_with(head)) return true;
  }
  return false;
}

class CliClient : public ServeRuns {
 protected:
  std::string sock() const { return socket.string(); }

  ProcessResult local_build(const std::string& out, bool json) {
    std::vector<std::string> args{"build", (fs::path(WARDEN_SOURCE_DIR) / "examples" / "calculator" / "blueprint.json").string(),
                                  "--clock", "logical", "--out", (tmp / out).string()};
    if (json) args.push_back("--json");
    return warden(args);
  }

  // The run id from a human build's first line ("warden build: NAME  run ID  executor ...").
  static std::string run_id_of(const std::string& out) {
    std::smatch m;
    static const std::regex header("warden build: \\S+  run (\\S+)  ");
    return std::regex_search(out, m, header) ? m[1].str() : std::string();
  }

  static void expect_error_line(const ProcessResult& r, int exit_code, const std::string& code) {
    EXPECT_TRUE(r.exited_with(exit_code)) << describe(r);
    auto last = stdout_json(r);
    EXPECT_EQ(last.value("type", ""), "error") << describe(r);
    EXPECT_EQ(last["error"].value("code", ""), code) << describe(r);
    EXPECT_EQ(last["error"].value("exit_code", -1), exit_code) << describe(r);
  }
};

TEST_F(CliClient, ABuildOverTheServerPrintsWhatTheLocalBuildPrints) {
  Child server = start();
  ProcessResult remote = warden({"build", "calculator", "--server", sock(), "--clock", "logical", "--json"});
  ASSERT_TRUE(remote.exited_with(0)) << describe(remote);
  ProcessResult local = local_build("local-json", true);
  ASSERT_TRUE(local.exited_with(0)) << describe(local);

  // Every event line, field by field, and the result line: the same run, told the same way.
  auto remote_lines = stdout_json_lines(remote);
  auto local_lines = stdout_json_lines(local);
  ASSERT_EQ(remote_lines.size(), local_lines.size()) << remote.out << "\n---\n" << local.out;
  for (size_t i = 0; i + 1 < local_lines.size(); ++i) {
    EXPECT_EQ(remote_lines[i].value("type", ""), local_lines[i].value("type", ""));
    EXPECT_EQ(remote_lines[i], local_lines[i]) << "event line " << i;
  }
  // The checkpoint is signed by each ledger's own key, for its own origin: the tree it signs
  // (size and root, its second and third lines) is the same.
  auto remote_result = remote_lines.back();
  auto local_result = local_lines.back();
  EXPECT_EQ(remote_result.value("type", ""), "result");
  auto signed_tree = [](const std::string& note) {
    const size_t first = note.find('\n');
    return note.substr(first + 1, note.find("\n\n") - first - 1);
  };
  EXPECT_EQ(signed_tree(remote_result.value("checkpoint", "")), signed_tree(local_result.value("checkpoint", "")));
  remote_result.erase("checkpoint");
  local_result.erase("checkpoint");
  EXPECT_EQ(remote_result, local_result);

  // The result line is the server's `warden build --json` child's, as GetRun keeps it.
  auto kernel = v1::Kernel::NewStub(channel());
  const std::string run_id = remote_result.value("run_id", "");
  v1::RunSummary summary = get_run(*kernel, run_id);
  EXPECT_EQ(nlohmann::json::parse(summary.result_json()).value("commit", ""), remote_result.value("commit", ""));

  // For people: the same progress lines, the same summary of the run. A fresh server: a
  // logical clock numbers runs from 1, and the first run holds that id in this one's ledger.
  server.kill(SIGTERM);
  ASSERT_TRUE(server.wait().exited_with(0));
  fs::remove_all(state);
  Child second = start();
  ProcessResult human = warden({"build", "calculator", "--server", sock(), "--clock", "logical"});
  ASSERT_TRUE(human.exited_with(0)) << describe(human);
  ProcessResult local_human = local_build("local-human", false);
  ASSERT_TRUE(local_human.exited_with(0)) << describe(local_human);
  auto progress = lines_where(human.out, progress_line);
  EXPECT_FALSE(progress.empty());
  EXPECT_EQ(progress, lines_where(local_human.out, progress_line));
  EXPECT_EQ(lines_where(human.out, summary_line), lines_where(local_human.out, summary_line));
  EXPECT_NE(human.out.find("warden build: calculator  run "), std::string::npos) << human.out;

  second.kill(SIGTERM);
  EXPECT_TRUE(second.wait().exited_with(0));
}

// `warden build --plan SHA256 --server`: a plan committed to the server's ledger is built
// there by its digest, and told as the local `warden build --plan` tells it.
TEST_F(CliClient, ACommittedPlanIsBuiltOverTheServerAsLocally) {
  Child server = start();
  const std::string plan = (tmp / "plan.json").string();
  ASSERT_TRUE(warden({"plan", "generate", (fs::path(WARDEN_SOURCE_DIR) / "examples" / "calculator" / "blueprint.json").string(),
                      "-o", plan})
                  .exited_with(0));
  // Committed to the server's ledger, and to a local one for the same build run here.
  ProcessResult committed = warden({"plan", "commit", plan, "--ledger", ledger.string(), "--json"});
  ASSERT_TRUE(committed.exited_with(0)) << describe(committed);
  const std::string digest = stdout_json(committed).value("plan_sha256", "");
  ASSERT_TRUE(warden({"plan", "commit", plan, "--ledger", (tmp / "local" / "ledger").string()}).exited_with(0));

  ProcessResult remote = warden({"build", "--plan", digest, "--server", sock(), "--clock", "logical"});
  ASSERT_TRUE(remote.exited_with(0)) << describe(remote);
  ProcessResult local = warden({"build", "--plan", digest, "--out", (tmp / "local").string(), "--clock", "logical"});
  ASSERT_TRUE(local.exited_with(0)) << describe(local);
  EXPECT_EQ(lines_where(remote.out, progress_line), lines_where(local.out, progress_line));
  // Every line of the summary but the commit: its message names its decision's record hash,
  // which chains over each ledger's own earlier records (the two plan commits' times differ).
  auto run_lines = [](const std::string& out) {
    return lines_where(out, [](const std::string& l) { return summary_line(l) && !l.starts_with("commit "); });
  };
  EXPECT_EQ(run_lines(remote.out), run_lines(local.out));
  EXPECT_NE(remote.out.find("warden build: calculator  run "), std::string::npos) << remote.out;
  EXPECT_NE(remote.out.find("repos/calculator on "), std::string::npos) << remote.out;

  ProcessResult unknown = warden({"build", "--plan", "sha256:" + std::string(64, 'c'), "--server", sock(), "--json"});
  expect_error_line(unknown, 4, "not_found");
  ProcessResult both = warden({"build", "calculator", "--plan", digest, "--server", sock(), "--json"});
  expect_error_line(both, 3, "invalid_argument");

  server.kill(SIGTERM);
  EXPECT_TRUE(server.wait().exited_with(0));
}

// A repository whose branch is already past the run's base (an earlier build completed there)
// is refused before anything is recorded: FAILED_PRECONDITION over gRPC, and the CLI says so as
// the local build does (exit 1, failed_precondition).
TEST_F(CliClient, ABranchThatMovedIsAFailedPrecondition) {
  Child server = start();
  auto kernel = v1::Kernel::NewStub(channel());
  const std::string first = start_calculator(*kernel, "moved");
  ASSERT_FALSE(first.empty());
  ASSERT_EQ(watch(*kernel, first, 0).back().type(), "run_completed");
  // Every run_status record of the ledger: a run that starts records one.
  auto run_statuses = [&] { return stdout_json_lines(warden({"ledger", "show", ledger.string(), "--kind", "run_status", "--json"})).size(); };
  const size_t runs = run_statuses();

  v1::StartRunRequest again;
  again.set_blueprint("calculator");
  again.set_repository("moved");
  std::string run_id;
  grpc::Status st = start_run(*kernel, again, run_id);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::FAILED_PRECONDITION) << st.error_message();
  EXPECT_NE(st.error_message().find("branch warden/calculator"), std::string::npos) << st.error_message();
  ProcessResult cli = warden({"build", "calculator", "--server", sock(), "--repository", "moved", "--json"});
  expect_error_line(cli, 1, "failed_precondition");
  ProcessResult local = warden({"build", (fs::path(WARDEN_SOURCE_DIR) / "examples" / "calculator" / "blueprint.json").string(),
                                "--repo", (state / "repos" / "moved").string(), "--ledger", (tmp / "local-ledger").string(), "--json"});
  expect_error_line(local, 1, "failed_precondition");
  EXPECT_EQ(run_statuses(), runs) << "a refused start recorded a run";

  server.kill(SIGTERM);
  EXPECT_TRUE(server.wait().exited_with(0));
}

// `warden run status` of a pipeline run over the server prints the local command's lines; only
// where the details are differs (the server's Pipeline.Watch, not a local `pipeline show`).
TEST_F(CliClient, RunStatusOfAPipelineRunOverTheServerIsTheLocalLine) {
  Child server = start();
  v1::PipelineRunResponse ran;
  grpc::Status st = run_pipeline("fan_out", "x", ran);
  ASSERT_TRUE(st.ok()) << st.error_message();
  auto not_details = [](const std::string& l) { return !l.empty() && !l.starts_with("details "); };
  for (bool json : {false, true}) {
    std::vector<std::string> remote_args{"run", "status", ran.run_id(), "--server", sock()};
    std::vector<std::string> local_args{"run", "status", ran.run_id(), "--ledger", ledger.string()};
    if (json) {
      remote_args.push_back("--json");
      local_args.push_back("--json");
    }
    ProcessResult remote = warden(remote_args);
    ProcessResult local = warden(local_args);
    ASSERT_TRUE(remote.exited_with(0)) << describe(remote);
    ASSERT_TRUE(local.exited_with(0)) << describe(local);
    if (json) {
      auto r = stdout_json(remote), l = stdout_json(local);
      EXPECT_NE(r.value("show_command", "").find("Pipeline.Watch"), std::string::npos) << remote.out;
      r.erase("show_command");
      l.erase("show_command");
      EXPECT_EQ(r, l);
    } else {
      EXPECT_EQ(lines_where(remote.out, not_details), lines_where(local.out, not_details));
      EXPECT_NE(remote.out.find("kind       pipeline"), std::string::npos) << remote.out;
    }
  }
  server.kill(SIGTERM);
  EXPECT_TRUE(server.wait().exited_with(0));
}

TEST_F(CliClient, RunStatusAndWatchOverTheServerPrintWhatTheLocalCommandsPrint) {
  Child server = start();
  ProcessResult built = warden({"build", "calculator", "--server", sock(), "--clock", "logical", "--json"});
  ASSERT_TRUE(built.exited_with(0)) << describe(built);
  const std::string run_id = stdout_json(built).value("run_id", "");
  ASSERT_FALSE(run_id.empty());

  // The local commands read the server's ledger; the remote ones ask the server.
  const std::vector<std::vector<std::string>> commands = {
      {"run", "status", run_id},
      {"run", "status", run_id, "--json"},
      {"run", "status", run_id, "--follow"},
      {"run", "status", run_id, "--follow", "--json"},
      {"run", "watch", run_id},
      {"run", "watch", run_id, "--json"},
      {"run", "watch", run_id, "--json", "--from-seq", "9"},
  };
  for (const auto& command : commands) {
    std::vector<std::string> over_server = command, over_ledger = command;
    over_server.insert(over_server.end(), {"--server", sock()});
    over_ledger.insert(over_ledger.end(), {"--ledger", ledger.string()});
    ProcessResult remote = warden(over_server);
    ProcessResult local = warden(over_ledger);
    std::string what;
    for (const auto& w : command) what += w + " ";
    EXPECT_TRUE(local.exited_with(0)) << what << describe(local);
    EXPECT_TRUE(remote.exited_with(0)) << what << describe(remote);
    EXPECT_EQ(remote.out, local.out) << what;
    EXPECT_FALSE(remote.out.empty()) << what;
  }
  // A resumed watch is the rest of the whole one, exactly.
  ProcessResult whole = warden({"run", "watch", run_id, "--json", "--server", sock()});
  auto events = lines_where(whole.out, [](const std::string& l) { return !l.empty(); });
  ASSERT_GT(events.size(), 3u);
  const uint64_t third_seq = [&] {
    ProcessResult listed = warden({"ledger", "show", ledger.string(), "--kind", "run_event", "--run", run_id, "--json"});
    std::vector<uint64_t> seqs;
    for (const auto& line : stdout_json_lines(listed)) {
      if (line.value("type", "") == "record") seqs.push_back(line.value("seq", uint64_t{0}));
    }
    return seqs.size() > 2 ? seqs[2] : 0;
  }();
  ProcessResult rest = warden({"run", "watch", run_id, "--json", "--server", sock(), "--from-seq", std::to_string(third_seq + 1)});
  EXPECT_EQ(lines_where(rest.out, [](const std::string& l) { return !l.empty(); }),
            std::vector<std::string>(events.begin() + 3, events.end()));

  server.kill(SIGTERM);
  EXPECT_TRUE(server.wait().exited_with(0));
}

// A run that waits for a remote executor nobody attaches is live until cancelled: the build
// watching it over the server ends as a cancelled local build does (130, "cancelled: ..."), and
// the cancel prints the run's final state as `warden run cancel` does. Ctrl-C to the build
// cancels the run as it cancels a local build.
TEST_F(CliClient, RunCancelOrCtrlCOverTheServerEndsTheRunAndItsWatchingBuild) {
  Child server = start();
  Child build = Child::spawn({warden_binary(), "build", "calculator", "--server", sock(), "--executor", "remote", "--label", "nobody"});
  std::string run_id;
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (run_id.empty() && std::chrono::steady_clock::now() < deadline && build.output_open()) {
    build.pump(std::chrono::steady_clock::now() + 100ms);
    run_id = run_id_of(build.out());
  }
  ASSERT_FALSE(run_id.empty()) << build.out() << build.err();
  EXPECT_NE(build.out().find("executor remote:nobody"), std::string::npos) << build.out();

  ProcessResult cancelled = warden({"run", "cancel", run_id, "--server", sock(), "--wait", "60"});
  EXPECT_TRUE(cancelled.exited_with(0)) << describe(cancelled);
  ProcessResult status = warden({"run", "status", run_id, "--ledger", ledger.string()});
  EXPECT_EQ(cancelled.out, status.out) << "the cancel prints the ended run's state";
  EXPECT_NE(cancelled.out.find("  cancelled"), std::string::npos) << cancelled.out;

  ProcessResult watched = build.wait();
  EXPECT_TRUE(watched.exited_with(130)) << describe(watched);
  EXPECT_EQ(lines_where(watched.out, [](const std::string& l) { return l.starts_with("cancelled: "); }).size(), 1u) << watched.out;
  EXPECT_NE(watched.out.find("\nrun        " + run_id + "  cancelled"), std::string::npos) << watched.out;

  // A --json build waiting for a remote executor, and its run's id from its first event.
  auto waiting_build = [&](const std::string& repository, std::string& id) {
    Child child = Child::spawn({warden_binary(), "build", "calculator", "--server", sock(), "--executor", "remote", "--label",
                                "nobody", "--repository", repository, "--json"});
    const auto until = std::chrono::steady_clock::now() + 60s;
    while (id.empty() && std::chrono::steady_clock::now() < until && child.output_open()) {
      child.pump(std::chrono::steady_clock::now() + 100ms);
      std::smatch m;
      static const std::regex started(R"re("run_id":"([^"]+)")re");
      if (std::regex_search(child.out(), m, started)) id = m[1].str();
    }
    return child;
  };

  // A cancel that does not see the end within --wait: 124, and the request stands. The server
  // does the waiting: a client deadline of --wait could pass before the request reached it.
  std::string short_id;
  Child short_wait = waiting_build("short-wait", short_id);
  ASSERT_FALSE(short_id.empty()) << short_wait.out() << short_wait.err();
  ProcessResult impatient = warden({"run", "cancel", short_id, "--server", sock(), "--wait", "0", "--json"});
  expect_error_line(impatient, 124, "deadline_exceeded");
  EXPECT_NE(impatient.err.find("the cancel request stands"), std::string::npos) << impatient.err;
  ProcessResult short_ended = short_wait.wait();
  EXPECT_TRUE(short_ended.exited_with(130)) << "the run was cancelled all the same: " << describe(short_ended);

  // Ctrl-C to a build over the server cancels the run there, as it cancels a local build.
  std::string second_id;
  Child interrupted = waiting_build("interrupted", second_id);
  ASSERT_FALSE(second_id.empty()) << interrupted.out() << interrupted.err();
  interrupted.kill(SIGINT);
  ProcessResult ended = interrupted.wait();
  EXPECT_TRUE(ended.exited_with(130)) << describe(ended);
  auto lines = stdout_json_lines(ended);
  ASSERT_GE(lines.size(), 2u);
  EXPECT_EQ(lines[lines.size() - 2].value("type", ""), "run_cancelled") << ended.out;
  EXPECT_EQ(lines.back().value("status", ""), "cancelled") << ended.out;
  EXPECT_NE(warden({"run", "status", second_id, "--ledger", ledger.string()}).out.find("  cancelled"), std::string::npos);

  // Cancelling it again: the run has ended, as `warden run cancel` says of a run that ended first.
  ProcessResult again = warden({"run", "cancel", run_id, "--server", sock(), "--json"});
  expect_error_line(again, 1, "failed_precondition");
  expect_ledger_verifies();
  server.kill(SIGTERM);
  EXPECT_TRUE(server.wait().exited_with(0));
}

TEST_F(CliClient, FailuresExitWithTheirDocumentedCodes) {
  write_file(tmp / "tokens.json", R"({"tokens": [
      {"name": "auditor", "sha256": ")" + sha256("auditor-token").str() + R"(", "roles": ["observer"]}]})");
  fs::permissions(tmp / "tokens.json", fs::perms::owner_read | fs::perms::owner_write, fs::perm_options::replace);
  Child server = start({"--tokens", (tmp / "tokens.json").string()});
  auto token_file = [&](const std::string& name, const std::string& token, fs::perms perms) {
    write_file(tmp / name, token + "\n");
    fs::permissions(tmp / name, perms, fs::perm_options::replace);
    return (tmp / name).string();
  };
  const auto owner = fs::perms::owner_read | fs::perms::owner_write;
  const std::string good = token_file("good.token", "auditor-token", owner);
  const std::string wrong = token_file("wrong.token", "nope", owner);
  const std::string readable = token_file("readable.token", "auditor-token", owner | fs::perms::group_read | fs::perms::others_read);

  // The right token: the server answers (here: no such run, 4).
  expect_error_line(warden({"run", "status", "no-such-run", "--server", sock(), "--token", good, "--json"}), 4, "not_found");
  expect_error_line(warden({"run", "watch", "no-such-run", "--server", sock(), "--token", good, "--json"}), 4, "not_found");
  // No token, a wrong one, one without the role: 2, the credentials given do not do.
  expect_error_line(warden({"run", "status", "no-such-run", "--server", sock(), "--json"}), 2, "unauthenticated");
  expect_error_line(warden({"run", "status", "no-such-run", "--server", sock(), "--token", wrong, "--json"}), 2, "unauthenticated");
  expect_error_line(warden({"build", "calculator", "--server", sock(), "--token", good, "--json"}), 2, "permission_denied");
  expect_error_line(warden({"run", "cancel", "no-such-run", "--server", sock(), "--token", good, "--json"}), 2, "permission_denied");
  // A token file others can read is refused before anything is sent; so is a symlink to one.
  ProcessResult exposed = warden({"run", "status", "r", "--server", sock(), "--token", readable, "--json"});
  expect_error_line(exposed, 3, "invalid_argument");
  EXPECT_NE(exposed.err.find("chmod 600"), std::string::npos) << exposed.err;
  fs::create_symlink(good, tmp / "link.token");
  expect_error_line(warden({"run", "status", "r", "--server", sock(), "--token", (tmp / "link.token").string(), "--json"}), 3,
                    "invalid_argument");
  // A FIFO where the token should be is refused, not waited on.
  ASSERT_EQ(::mkfifo((tmp / "fifo.token").c_str(), 0600), 0);
  expect_error_line(warden({"run", "status", "r", "--server", sock(), "--token", (tmp / "fifo.token").string(), "--json"}), 3,
                    "invalid_argument");
  // A token never goes over plaintext TCP to another host.
  expect_error_line(warden({"run", "status", "r", "--server", "example.invalid:443", "--token", good, "--json"}), 3, "invalid_argument");
  server.kill(SIGTERM);
  EXPECT_TRUE(server.wait().exited_with(0));

  // No server: no socket there (4), or a socket nobody listens on (5).
  expect_error_line(warden({"run", "status", "r", "--server", (tmp / "nothing.sock").string(), "--json"}), 4, "not_found");
  // A socket file nobody listens on (a server that was killed leaves one).
  const std::string stale = (tmp / "stale.sock").string();
  {
    Child killed = Child::spawn({warden_binary(), "serve", "--state", state.string(), "--socket", stale});
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    while (!fs::exists(stale) && std::chrono::steady_clock::now() < deadline && killed.output_open()) {
      killed.pump(std::chrono::steady_clock::now() + 50ms);
    }
    killed.kill(SIGKILL);
    killed.wait();
  }
  ASSERT_TRUE(fs::exists(stale));
  ProcessResult gone = warden({"build", "calculator", "--server", stale, "--json"});
  expect_error_line(gone, 5, "io_error");
  EXPECT_NE(gone.err.find("no Warden server answers at " + stale), std::string::npos) << gone.err;
  // A file that is not a blueprint the server could serve: said before connecting.
  expect_error_line(warden({"build", "no/such/blueprint.json", "--server", sock(), "--json"}), 4, "not_found");
  // Options the client does not know are usage errors, as locally.
  expect_error_line(warden({"run", "status", "r", "--server", sock(), "--bogus", "--json"}), 2, "usage");

  // `warden` without warden-grpc beside it says what to build.
  fs::create_directories(tmp / "alone");
  fs::copy_file(warden_binary(), tmp / "alone" / "warden");
  ProcessResult alone = run({(tmp / "alone" / "warden").string(), "run", "status", "r", "--server", sock(), "--json"});
  expect_error_line(alone, 4, "not_found");
  EXPECT_NE(alone.err.find("target warden-grpc"), std::string::npos) << alone.err;
}

// Over TCP with TLS and mutual TLS (certificates made here with the openssl CLI): the client
// trusts the server only through --tls-ca, shows its own certificate with --tls-cert/--tls-key,
// and a handshake that fails is "no server answers" (5), never a call in the clear.
TEST_F(CliClient, OverTcpWithTlsAndMutualTls) {
  const fs::path pki = tmp / "pki";
  fs::create_directories(pki);
  auto openssl = [&](std::vector<std::string> args) {
    args.insert(args.begin(), "/usr/bin/openssl");
    ProcessResult r = run(args);
    ASSERT_TRUE(r.exited_with(0)) << describe(r);
  };
  auto key_only_mine = [&](const std::string& name) {
    fs::permissions(pki / (name + ".key"), fs::perms::owner_read | fs::perms::owner_write, fs::perm_options::replace);
  };
  for (const std::string ca : {"ca", "other-ca"}) {
    openssl({"req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout",
             (pki / (ca + ".key")).string(), "-out", (pki / (ca + ".pem")).string(), "-days", "2", "-subj", "/CN=" + ca});
  }
  auto issue = [&](const std::string& name, const std::string& extensions) {
    write_file(pki / (name + ".ext"), extensions);
    openssl({"req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", (pki / (name + ".key")).string(),
             "-out", (pki / (name + ".csr")).string(), "-subj", "/CN=" + name});
    openssl({"x509", "-req", "-in", (pki / (name + ".csr")).string(), "-CA", (pki / "ca.pem").string(), "-CAkey",
             (pki / "ca.key").string(), "-set_serial", "7", "-days", "2", "-extfile", (pki / (name + ".ext")).string(), "-out",
             (pki / (name + ".pem")).string()});
    key_only_mine(name);
  };
  issue("server", "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n");
  issue("client", "extendedKeyUsage=clientAuth\n");
  write_file(tmp / "tokens.json", R"({"tokens": [{"name": "auditor", "sha256": ")" + sha256("auditor-token").str() +
                                      R"(", "roles": ["observer"]}]})");
  fs::permissions(tmp / "tokens.json", fs::perms::owner_read | fs::perms::owner_write, fs::perm_options::replace);
  write_file(tmp / "good.token", "auditor-token\n");
  fs::permissions(tmp / "good.token", fs::perms::owner_read | fs::perms::owner_write, fs::perm_options::replace);
  const std::string token = (tmp / "good.token").string();

  auto serve_tls = [&](std::vector<std::string> extra) {
    std::vector<std::string> args{"--tokens", (tmp / "tokens.json").string(), "--listen", "127.0.0.1:0", "--tls-cert",
                                  (pki / "server.pem").string(), "--tls-key", (pki / "server.key").string()};
    args.insert(args.end(), extra.begin(), extra.end());
    return start(args);
  };
  auto port_of = [&](Child& server) {
    static const std::regex line(R"(listening on 127\.0\.0\.1:(\d+) \()");
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    std::smatch m;
    while (std::chrono::steady_clock::now() < deadline) {
      const std::string err = server.err();
      if (std::regex_search(err, m, line)) return "127.0.0.1:" + m[1].str();
      server.pump(std::chrono::steady_clock::now() + 50ms);
    }
    ADD_FAILURE() << "no listening line: " << server.err();
    return std::string();
  };
  const std::string ca = (pki / "ca.pem").string(), other_ca = (pki / "other-ca.pem").string();
  {
    Child server = serve_tls({});
    const std::string address = port_of(server);
    ASSERT_FALSE(address.empty());
    // Through TLS the server answers: no such run.
    expect_error_line(warden({"run", "status", "nope", "--server", address, "--tls-ca", ca, "--token", token, "--json"}), 4, "not_found");
    // A server whose certificate the given CA did not sign, or plaintext to a TLS port: nothing answers.
    ProcessResult untrusted = warden({"run", "status", "nope", "--server", address, "--tls-ca", other_ca, "--token", token, "--json"});
    expect_error_line(untrusted, 5, "io_error");
    EXPECT_NE(untrusted.err.find("TLS handshake failed"), std::string::npos) << untrusted.err;
    expect_error_line(warden({"run", "status", "nope", "--server", address, "--token", token, "--json"}), 5, "io_error");
    // --tls-* on a unix socket, a certificate without its key: usage the client refuses itself.
    expect_error_line(warden({"run", "status", "nope", "--server", sock(), "--tls-ca", ca, "--json"}), 3, "invalid_argument");
    expect_error_line(warden({"run", "status", "nope", "--server", address, "--tls-ca", ca, "--tls-cert",
                              (pki / "client.pem").string(), "--json"}),
                      3, "invalid_argument");
    server.kill(SIGTERM);
    EXPECT_TRUE(server.wait().exited_with(0));
  }
  {
    Child server = serve_tls({"--client-ca", ca});
    const std::string address = port_of(server);
    ASSERT_FALSE(address.empty());
    expect_error_line(warden({"run", "status", "nope", "--server", address, "--tls-ca", ca, "--tls-cert", (pki / "client.pem").string(),
                              "--tls-key", (pki / "client.key").string(), "--token", token, "--json"}),
                      4, "not_found");
    // Without the client's certificate mutual TLS lets nothing through.
    expect_error_line(warden({"run", "status", "nope", "--server", address, "--tls-ca", ca, "--token", token, "--json"}), 5, "io_error");
    server.kill(SIGTERM);
    EXPECT_TRUE(server.wait().exited_with(0));
  }
}

// A server that is not Warden's (or lies): events of no known type, data that is not an
// object, state whose fields have the wrong JSON types. The client says so and exits 3; it
// never crashes or prints the garbage as Warden's.
class LyingKernel final : public v1::Kernel::Service {
 public:
  std::string event_type = "run_started", event_data = "{}", report_json = "{}";
  grpc::Status WatchRun(grpc::ServerContext*, const v1::WatchRunRequest* request, grpc::ServerWriter<v1::RunEvent>* writer) override {
    v1::RunEvent e;
    e.set_run_id(request->run_id());
    e.set_type(event_type);
    e.set_data_json(event_data);
    e.set_step_index(-1);
    writer->Write(e);
    return grpc::Status::OK;
  }
  grpc::Status StartRun(grpc::ServerContext*, const v1::StartRunRequest*, v1::StartRunResponse* out) override {
    out->set_run_id("r");
    return grpc::Status::OK;
  }
  grpc::Status GetRun(grpc::ServerContext*, const v1::GetRunRequest* request, v1::RunSummary* out) override {
    out->set_run_id(request->run_id());
    out->set_report_json(report_json);
    return grpc::Status::OK;
  }
};

TEST(CliClientAgainstALyingServer, ItsAnswersAreRefusedNotRendered) {
  TempDir tmp;
  const std::string sock = (tmp / "liar.sock").string();
  LyingKernel liar;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + sock, grpc::InsecureServerCredentials());
  builder.RegisterService(&liar);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_TRUE(server);
  struct Stop {
    grpc::Server& s;
    ~Stop() { s.Shutdown(std::chrono::system_clock::now() + 1s); }
  } stop{*server};

  // Refused with exit 3; with --json the error line ends the stream, without it nothing of
  // the garbage is printed.
  auto expect_refused = [&](const std::vector<std::string>& args, const std::string& why) {
    ProcessResult r = warden(args);
    EXPECT_TRUE(r.exited_with(3)) << why << ": " << describe(r);
    EXPECT_NE(r.err.find("warden: error: "), std::string::npos) << why << ": " << describe(r);
    if (std::find(args.begin(), args.end(), "--json") != args.end()) {
      EXPECT_EQ(stdout_json(r).value("type", ""), "error") << why;
    } else {
      EXPECT_EQ(r.out.find("many"), std::string::npos) << why << ": " << describe(r);
      EXPECT_TRUE(r.out.empty() || r.out.back() == '\n') << why << ": half a line printed: " << describe(r);
    }
  };
  liar.event_type = "run_exploded";
  expect_refused({"run", "watch", "r", "--server", sock, "--json"}, "an unknown event type");
  liar.event_type = "step_started";
  liar.event_data = "[1]";
  expect_refused({"run", "watch", "r", "--server", sock, "--json"}, "event data that is not an object");
  liar.event_data = "{\"steps_completed\": \"many\"";
  expect_refused({"run", "watch", "r", "--server", sock, "--json"}, "event data that is not JSON");
  liar.event_data = R"({"steps_completed": "many", "targets": [1]})";
  expect_refused({"build", "calculator", "--server", sock}, "a step whose fields have the wrong types");
  liar.report_json = R"({"run_id": "r", "status": 7, "steps_completed": "x"})";
  expect_refused({"run", "status", "r", "--server", sock}, "a report whose fields have the wrong types");
  liar.report_json = "[]";
  expect_refused({"run", "status", "r", "--server", sock, "--json"}, "a report that is not an object");
}

}  // namespace
}  // namespace warden::test
