// The remote executor end to end with the real binary: the test plays `warden serve`'s relay
// on the other end of `warden build --executor remote:calc --executor-channel 3`, answering
// every request by running examples/calculator/agent.py on it (what a command executor does)
// as the executor "alice". The ledger verifies and replays, names who answered, and holds
// the same records as the command executor's build but for who proposed and how it was
// confined: the transport is no input to any decision. An executor that disconnects
// mid-run leaves its attempts recorded as executor_failed and the run failed, verifiably.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <functional>
#include <optional>
#include <string>

#include "tests/kernel/build_fixture.h"
#include "tests/support/process.h"

namespace warden::test {
namespace {

namespace fs = std::filesystem;

const fs::path kExamples = fs::path(WARDEN_SOURCE_DIR) / "examples";
const fs::path kBlueprint = kExamples / "calculator" / "blueprint.json";

// `warden build ... --executor-channel 3` with the kernel's end of a socketpair as fd 3 and
// its output in `log`; the test holds the other end. The destructor kills and reaps a build
// still running, so a failed assertion leaves nothing behind.
class RemoteBuild {
 public:
  // With `channel` (>= 0), that descriptor is fd 3 instead of a socketpair's end.
  RemoteBuild(const std::vector<std::string>& args, const fs::path& log, int channel = -1) {
    int fds[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) throw std::runtime_error("socketpair");
    server_ = UniqueFd(fds[0]);
    UniqueFd kernel_end(fds[1]);
    const int fd3 = channel >= 0 ? channel : kernel_end.get();
    std::vector<std::string> argv = {warden_binary()};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.insert(argv.end(), {"--executor-channel", "3"});
    std::vector<char*> c_argv;
    for (auto& a : argv) c_argv.push_back(a.data());
    c_argv.push_back(nullptr);
    UniqueFd out(::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    pid_ = ::fork();
    if (pid_ < 0) throw std::runtime_error("fork");
    if (pid_ == 0) {
      // dup2 leaves the new descriptors inheritable, as `warden serve` will pass them.
      // (dup2 onto itself would keep close-on-exec: clear it by hand then.)
      if ((fd3 == 3 ? ::fcntl(3, F_SETFD, 0) : ::dup2(fd3, 3)) < 0 || ::dup2(out.get(), 1) < 0 || ::dup2(out.get(), 2) < 0) ::_exit(127);
      ::execv(c_argv[0], c_argv.data());
      ::_exit(127);
    }
  }
  ~RemoteBuild() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  RemoteBuild(const RemoteBuild&) = delete;
  RemoteBuild& operator=(const RemoteBuild&) = delete;

  // The kernel's next line, parsed; null at EOF or after a minute of silence.
  json read_line() {
    for (;;) {
      if (size_t end = buffer_.find('\n'); end != std::string::npos) {
        json line = json::parse(buffer_.substr(0, end));
        buffer_.erase(0, end + 1);
        return line;
      }
      pollfd p{server_.get(), POLLIN, 0};
      if (::poll(&p, 1, 60'000) <= 0) return nullptr;
      char chunk[65536];
      const ssize_t n = ::recv(server_.get(), chunk, sizeof chunk, 0);
      if (n <= 0) return nullptr;
      buffer_.append(chunk, static_cast<size_t>(n));
    }
  }
  void send_line(const json& line) {
    const std::string text = line.dump() + "\n";
    size_t done = 0;
    while (done < text.size()) {
      const ssize_t n = ::send(server_.get(), text.data() + done, text.size() - done, MSG_NOSIGNAL);
      if (n <= 0) return;  // the kernel went away; its exit status says why
      done += static_cast<size_t>(n);
    }
  }
  void disconnect() { server_.reset(); }
  pid_t pid() const { return pid_; }
  // Its exit status (-1 if a signal ended it).
  int wait() {
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

 private:
  pid_t pid_ = -1;
  UniqueFd server_;
  std::string buffer_;
};

// What a command executor would answer: agent.py run on the request.
json agent_answer(const json& line, const std::string& identity) {
  SpawnOptions options;
  options.stdin_data = line.at("request").dump() + "\n";
  auto ran = Child::spawn({"/usr/bin/python3", (kExamples / "calculator" / "agent.py").string()}, options).wait();
  json answer = {{"type", "answer"}, {"request_id", line.at("request_id")}, {"executor_identity", identity}};
  if (ran.exited_with(0)) {
    answer["proposal"] = ran.out;
  } else {
    answer["error"] = "agent.py exited: " + ran.err;
  }
  return answer;
}

// Serves the build until it closes the channel: proposals and replans through agent.py;
// returns every line the kernel sent.
std::vector<json> serve(RemoteBuild& build, const std::string& identity) {
  std::vector<json> lines;
  for (json line = build.read_line(); !line.is_null(); line = build.read_line()) {
    lines.push_back(line);
    if (line["type"] == "propose") build.send_line(agent_answer(line, identity));
    if (line["type"] == "replan") {
      json request = line;
      request["request"] = json{{"replan", line["request"]}};
      build.send_line(agent_answer(request, identity));
    }
  }
  return lines;
}

// The record with what says who proposed and how it was confined removed (and the chain
// hashes, which cover those fields): what every decision rests on.
json decision_inputs(json record) {
  for (const char* field : {"prev", "hash"}) record.erase(field);
  json& payload = record["payload"];
  for (const char* field : {"executor", "executor_sandbox", "executor_identity", "tool_name", "toolName"}) payload.erase(field);
  return record;
}

// What the other build names differently for the same thing, by position: each record's
// hash (it covers the executor's name, so evidence lists that cite records differ), and each
// accepted commit (its message names the record that accepted it, Warden-Record).
struct Aliases {
  std::vector<std::string> from, to;
  void add(const json& a, const json& b) {
    from.push_back(a.get<std::string>());
    to.push_back(b.get<std::string>());
  }
};

Aliases aliases(const std::vector<json>& from, const std::vector<json>& to) {
  Aliases out;
  for (size_t i = 0; i < std::min(from.size(), to.size()); ++i) {
    out.add(from[i].at("hash"), to[i].at("hash"));
    if (from[i].at("kind") == "commit") out.add(from[i]["payload"].at("commit"), to[i]["payload"].at("commit"));
  }
  return out;
}

// `record` with every name in `aliases.from` spelled as its counterpart.
json renamed(const json& record, const Aliases& aliases) {
  std::string text = record.dump();
  for (size_t i = 0; i < aliases.from.size(); ++i) {
    const std::string& from = aliases.from[i];
    for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + aliases.to[i].size())) {
      text.replace(at, from.size(), aliases.to[i]);
    }
  }
  return json::parse(text);
}

std::string log_of(const fs::path& log) { return read_file(log); }

TEST(RemoteExecutor, BuildsTheCalculatorAndRecordsTheSameDecisionsAsTheCommandExecutor) {
  TempDir tmp;
  const fs::path remote_out = tmp / "remote";
  std::vector<json> lines;
  {
    RemoteBuild build({"build", kBlueprint.string(), "--out", remote_out.string(), "--clock", "logical", "--executor",
                       "remote:calc", "--json"},
                      tmp / "remote.log");
    lines = serve(build, "alice");
    ASSERT_EQ(build.wait(), 0) << log_of(tmp / "remote.log");
  }
  // Six proposals (the eval() draft refused once), a learn line after the refusal, the end.
  size_t proposes = 0, learns = 0;
  for (const auto& l : lines) {
    proposes += l["type"] == "propose" ? 1 : 0;
    learns += l["type"] == "learn" ? 1 : 0;
  }
  EXPECT_EQ(proposes, 6u);
  EXPECT_EQ(learns, 1u);
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines.back(), (json{{"type", "end"}}));

  const fs::path ledger = remote_out / "ledger";
  expect_ledger_verifies(ledger, ledger / "signer.pub");
  auto replayed = warden({"replay", ledger.string(), "--key", (ledger / "signer.pub").string()});
  EXPECT_TRUE(replayed.exited_with(0)) << describe(replayed);
  auto remote = ledger_records(ledger);
  auto proposals = payloads(remote, "proposal");
  ASSERT_EQ(proposals.size(), 6u);
  for (const auto& p : proposals) {
    EXPECT_EQ(p["executor"], "remote:calc");
    EXPECT_EQ(p["executor_identity"], "alice");
    EXPECT_FALSE(p.contains("executor_sandbox")) << p.dump();
  }

  const fs::path command_out = tmp / "command";
  auto local = warden({"build", kBlueprint.string(), "--out", command_out.string(), "--clock", "logical", "--executor",
                       "command:python3 agent.py", "--json"});
  ASSERT_TRUE(local.exited_with(0)) << describe(local);
  auto command = ledger_records(command_out / "ledger");
  ASSERT_EQ(remote.size(), command.size());
  const Aliases names = aliases(remote, command);
  for (size_t i = 0; i < remote.size(); ++i) {
    EXPECT_EQ(decision_inputs(renamed(remote[i], names)), decision_inputs(command[i])) << "record " << i;
  }
  // The commits differ in their Warden-Record trailer alone: the same trees, steps and diffs.
  const auto remote_commits = payloads(remote, "commit"), command_commits = payloads(command, "commit");
  ASSERT_EQ(remote_commits.size(), 5u);
  ASSERT_EQ(command_commits.size(), 5u);
  for (size_t i = 0; i < remote_commits.size(); ++i) {
    auto message = [](const fs::path& repo, const std::string& commit) {
      std::string text = git_in(repo, {"show", "-s", "--format=%T%n%B", commit});
      return text.substr(0, text.find("Warden-Record:"));
    };
    EXPECT_EQ(message(remote_out / "repo", remote_commits[i]["commit"]),
              message(command_out / "repo", command_commits[i]["commit"]));
  }
}

// Held-out checks with a remote executor: everything it is sent (each request, each refusal
// it learns of) and everything an observer of the run's events sees holds nothing of the
// held-out tests; the memorizing draft is refused held_out_failed and the run decides as the
// plan executor's.
TEST(RemoteExecutor, HeldOutTestsReachNeitherTheExecutorNorTheRunsEvents) {
  TempDir tmp;
  const fs::path out = tmp / "remote";
  std::vector<json> lines;
  {
    RemoteBuild build({"build", (kExamples / "calculator" / "blueprint-held-out.json").string(), "--out", out.string(),
                       "--executor", "remote:calc", "--json"},
                      tmp / "remote.log");
    lines = serve(build, "alice");
    ASSERT_EQ(build.wait(), 0) << log_of(tmp / "remote.log");
  }
  const std::string sent = json(lines).dump(), events = log_of(tmp / "remote.log");
  for (const char* secret : {"test_nested_parentheses", "test_parse_held_out", "2 * (3 + (4 - 1))"}) {
    EXPECT_EQ(sent.find(secret), std::string::npos) << secret << " was sent to the executor";
    EXPECT_EQ(events.find(secret), std::string::npos) << secret << " is in the run's events";
  }
  EXPECT_NE(sent.find("held_out_failed"), std::string::npos) << "the executor learns that the held-out tests failed";
  auto decisions = payloads(ledger_records(out / "ledger"), "decision");
  ASSERT_EQ(decisions.size(), 6u);
  EXPECT_EQ(reason_codes(decisions[2]), std::vector<std::string>{"held_out_failed"});
}

// The kernel's fd 3 flags, from /proc: the channel must be close-on-exec while the build
// runs, so no sandbox, check or git process inherits it.
bool close_on_exec(pid_t pid) {
  const std::string info = read_file("/proc/" + std::to_string(pid) + "/fdinfo/3");
  const size_t at = info.find("flags:");
  return at != std::string::npos && (std::stoul(info.substr(at + 6), nullptr, 8) & O_CLOEXEC) != 0;
}

TEST(RemoteExecutor, AnExecutorThatFailsAndThenDisconnectsMidRunFailsTheRunVerifiably) {
  TempDir tmp;
  const fs::path out = tmp / "out";
  {
    RemoteBuild build({"build", kBlueprint.string(), "--out", out.string(), "--clock", "logical", "--executor",
                       "remote:calc", "--json"},
                      tmp / "build.log");
    json first = build.read_line();
    ASSERT_EQ(first["type"], "propose");
    EXPECT_TRUE(close_on_exec(build.pid()));
    build.send_line(agent_answer(first, "alice"));
    json second = build.read_line();
    ASSERT_EQ(second["type"], "propose");
    build.send_line({{"type", "answer"}, {"request_id", second["request_id"]}, {"error", "model unavailable"},
                     {"code", "executor_failed"}, {"executor_identity", "bob"}});
    json learn = build.read_line();
    EXPECT_EQ(learn["type"], "learn");
    json third = build.read_line();
    ASSERT_EQ(third["type"], "propose");
    build.disconnect();  // mid-step: the third request is never answered
    EXPECT_EQ(build.wait(), 1) << log_of(tmp / "build.log");
  }
  const fs::path ledger = out / "ledger";
  expect_ledger_verifies(ledger, ledger / "signer.pub");
  auto replayed = warden({"replay", ledger.string(), "--key", (ledger / "signer.pub").string()});
  EXPECT_TRUE(replayed.exited_with(0)) << describe(replayed);
  auto records = ledger_records(ledger);
  auto proposals = payloads(records, "proposal");
  ASSERT_GE(proposals.size(), 3u);
  EXPECT_EQ(proposals[0]["executor_identity"], "alice");
  EXPECT_TRUE(proposals[0]["error"].is_null());
  // The failure is recorded with who failed.
  EXPECT_EQ(proposals[1]["executor_identity"], "bob");
  EXPECT_NE(proposals[1]["error"].get<std::string>().find("model unavailable"), std::string::npos) << proposals[1].dump();
  for (size_t i = 2; i < proposals.size(); ++i) {
    EXPECT_EQ(proposals[i]["error"], "the executor channel closed") << proposals[i].dump();
    EXPECT_FALSE(proposals[i].contains("executor_identity")) << proposals[i].dump();
  }
  auto decisions = payloads(records, "decision");
  ASSERT_EQ(decisions.size(), proposals.size());
  for (size_t i = 1; i < decisions.size(); ++i) {
    EXPECT_FALSE(decisions[i]["verdict"]["accepted"]);
    EXPECT_TRUE(has_code(reason_codes(decisions[i]), "executor_failed")) << decisions[i].dump();
  }
  auto status = payloads(records, "run_status");
  ASSERT_FALSE(status.empty());
  EXPECT_EQ(status.back()["status"], "refused") << status.back().dump();
}

// An executor that answers garbage every time is refused every time, with who said it; when
// the step runs out of retries the kernel asks it for a replacement plan over the channel, and
// its refusal to give one ends the run, recorded and verifiable.
TEST(RemoteExecutor, GarbageAnswersAreRefusedAndTheReplanAsksTheChannel) {
  TempDir tmp;
  const fs::path out = tmp / "out";
  std::vector<json> lines;
  {
    RemoteBuild build({"build", kBlueprint.string(), "--out", out.string(), "--clock", "logical", "--executor",
                       "remote:calc", "--json"},
                      tmp / "build.log");
    for (json line = build.read_line(); !line.is_null(); line = build.read_line()) {
      lines.push_back(line);
      json answer = {{"type", "answer"}, {"request_id", line["request_id"]}, {"executor_identity", "mallory"}};
      if (line["type"] == "propose") answer["proposal"] = std::string(1, '\0') + " not a diff {\"files\":";
      if (line["type"] == "replan") answer["error"] = "no plan from me";
      if (line["type"] == "propose" || line["type"] == "replan") build.send_line(answer);
    }
    EXPECT_EQ(build.wait(), 1) << log_of(tmp / "build.log");
  }
  size_t replans = 0;
  for (const auto& l : lines) replans += l["type"] == "replan" ? 1 : 0;
  EXPECT_EQ(replans, 1u);
  const fs::path ledger = out / "ledger";
  expect_ledger_verifies(ledger, ledger / "signer.pub");
  auto replayed = warden({"replay", ledger.string(), "--key", (ledger / "signer.pub").string()});
  EXPECT_TRUE(replayed.exited_with(0)) << describe(replayed);
  auto records = ledger_records(ledger);
  auto proposals = payloads(records, "proposal");
  ASSERT_FALSE(proposals.empty());
  for (const auto& p : proposals) {
    EXPECT_EQ(p["executor_identity"], "mallory");
    EXPECT_TRUE(p["diff_sha256"].is_null()) << p.dump();
    // Judged for what it said (a NUL and half a Diff), not lost on the way.
    EXPECT_TRUE(p["error"].is_string() && p["error"] != "executor proposed nothing") << p.dump();
  }
  for (const auto& d : payloads(records, "decision")) EXPECT_FALSE(d["verdict"]["accepted"]) << d.dump();
  const std::string log = log_of(tmp / "build.log");
  EXPECT_NE(log.find("no plan from me"), std::string::npos) << log;
}

// An executor that never answers cannot hang the build: the step's watchdog ends the wait,
// and the run ends recorded and verifiable with the channel still open.
TEST(RemoteExecutor, AnExecutorThatNeverAnswersCannotHangTheRun) {
  TempDir tmp;
  const fs::path out = tmp / "out";
  const auto start = std::chrono::steady_clock::now();
  int status = -1;
  {
    RemoteBuild build({"build", kBlueprint.string(), "--out", out.string(), "--executor", "remote:calc",
                       "--step-timeout", "1", "--json"},
                      tmp / "build.log");
    json first = build.read_line();
    ASSERT_EQ(first["type"], "propose");
    EXPECT_LE(first["timeout_ms"].get<int64_t>(), 1000);
    status = build.wait();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
  EXPECT_EQ(status, 124) << log_of(tmp / "build.log");
  const fs::path ledger = out / "ledger";
  expect_ledger_verifies(ledger, ledger / "signer.pub");
  // The request's time and the step's watchdog run out together: either the watchdog
  // stopped the step first (nothing proposed, nothing decided) or the attempt is recorded as
  // the executor's timeout; either way the run is recorded as timed out.
  auto records = ledger_records(ledger);
  for (const auto& p : payloads(records, "proposal")) {
    EXPECT_TRUE(p["error"].is_string() && p["error"].get<std::string>().starts_with("executor timed out")) << p.dump();
  }
  for (const auto& d : payloads(records, "decision")) {
    EXPECT_TRUE(has_code(reason_codes(d), "executor_timeout")) << d.dump();
  }
  auto status_records = payloads(records, "run_status");
  ASSERT_FALSE(status_records.empty());
  EXPECT_EQ(status_records.back()["status"], "timeout") << status_records.back().dump();
}

// Cancelling the build (SIGTERM) while it waits for the remote executor ends the wait at
// once: the run is recorded as cancelled and verifies.
TEST(RemoteExecutor, ACancelWhileWaitingForTheExecutorEndsTheRunAtOnce) {
  TempDir tmp;
  const fs::path out = tmp / "out";
  {
    RemoteBuild build({"build", kBlueprint.string(), "--out", out.string(), "--executor", "remote:calc", "--json"},
                      tmp / "build.log");
    json first = build.read_line();
    ASSERT_EQ(first["type"], "propose");
    const auto start = std::chrono::steady_clock::now();
    ::kill(build.pid(), SIGTERM);
    EXPECT_EQ(build.wait(), 130) << log_of(tmp / "build.log");
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  }
  const fs::path ledger = out / "ledger";
  expect_ledger_verifies(ledger, ledger / "signer.pub");
  auto status = payloads(ledger_records(ledger), "run_status");
  ASSERT_FALSE(status.empty());
  EXPECT_EQ(status.back()["status"], "cancelled") << status.back().dump();
}

TEST(RemoteExecutor, AChannelThatIsNotAUnixStreamSocketIsRefused) {
  TempDir tmp;
  // 0 to 2 are the build's standard streams (its --json output could be a socket), 9 is
  // not open.
  for (const std::string fd : {"0", "1", "2", "9", "-1"}) {
    auto r = warden({"build", kBlueprint.string(), "--out", (tmp / "out").string(), "--executor", "remote:calc",
                     "--executor-channel", fd});
    EXPECT_TRUE(r.exited_with(3)) << describe(r);
    EXPECT_NE(r.err.find("--executor-channel " + fd), std::string::npos) << describe(r);
  }
  // As fd 3: a regular file, a datagram unix socket, an unconnected unix stream socket.
  const fs::path file = tmp / "file";
  write_file(file, "x");
  int dgram[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, dgram), 0);
  UniqueFd dgram_a(dgram[0]), dgram_b(dgram[1]);
  std::vector<UniqueFd> not_channels;
  not_channels.emplace_back(::open(file.c_str(), O_RDWR | O_CLOEXEC));
  not_channels.emplace_back(std::move(dgram_a));
  not_channels.emplace_back(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  for (const auto& fd : not_channels) {
    ASSERT_TRUE(fd);
    const fs::path log = tmp / "log";
    RemoteBuild build({"build", kBlueprint.string(), "--out", (tmp / "out").string(), "--executor", "remote:calc"}, log,
                      fd.get());
    EXPECT_EQ(build.wait(), 3) << log_of(log);
    EXPECT_NE(log_of(log).find("not a connected unix stream socket"), std::string::npos) << log_of(log);
  }
  // A label that could not name an executor in the ledger.
  {
    const fs::path log = tmp / "log";
    RemoteBuild build({"build", kBlueprint.string(), "--out", (tmp / "out").string(), "--executor", "remote:a b"}, log);
    EXPECT_EQ(build.wait(), 3) << log_of(log);
  }
  auto no_channel = warden({"build", kBlueprint.string(), "--out", (tmp / "out").string(), "--executor", "remote:calc"});
  EXPECT_TRUE(no_channel.exited_with(3)) << describe(no_channel);
  EXPECT_NE(no_channel.err.find("warden serve"), std::string::npos) << describe(no_channel);
  auto stray = warden({"build", kBlueprint.string(), "--out", (tmp / "out").string(), "--executor-channel", "0"});
  EXPECT_TRUE(stray.exited_with(3)) << describe(stray);
  EXPECT_FALSE(fs::exists(tmp / "out" / "ledger"));
}

}  // namespace
}  // namespace warden::test
