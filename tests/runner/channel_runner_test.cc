// The kernel's side of remote runners (runner/check/channel_runner.h) on a real repository: the
// other end of its socket plays `warden serve` and a runner in one, running the request in a
// real LocalRunner (bwrap) and signing the result with a runner key, then answering it as
// given or altered. What must hold: a result that is what was asked comes back with its
// attestation; every alteration the kernel can see (a signature that does not cover the
// result, another tree, another tree hash, another check, another profile, bodies that are
// not what the result names, an attestation for another task) is refused with the reason;
// an error answer and a stop end the wait.
#include <sys/socket.h>

#include <functional>
#include <thread>

#include "common/ed25519.h"
#include "common/encoding.h"
#include "common/line_socket.h"
#include "runner/check/channel_runner.h"
#include "runner/check/diff_layer.h"
#include "runner/check/local_runner.h"
#include "runner/check/remote_run.h"
#include "runner/sandbox/scratch_dir.h"
#include "runner/workspace/workspace.h"
#include "tests/support/git_fixture.h"
#include "tests/support/sandbox_support.h"

namespace warden::test {
namespace {

namespace fs = std::filesystem;

// What the far end answers: the result line, changed by `alter` (after signing, unless it
// signs again itself).
struct Answer {
  Json run_result;
  Json bodies;
  Json attestation;
  Json more = Json::array();  // further attestations (a quorum's)
};

class ChannelRunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    repo_.write("a.txt", "alpha\n");
    base_commit_ = repo_.commit_all("base");
    repo_.write("a.txt", "alpha, changed\n");
    repo_.write("b.txt", "bravo\n");
    std::string patch = repo_.staged_patch();
    repo_.reset_hard(base_commit_);
    auto ws = Workspace::open(repo_.repo());
    ASSERT_TRUE(ws);
    auto diff = ws->diff_from_patch(patch, base_commit_, "step-1");
    ASSERT_TRUE(diff) << diff.error().message();
    diff_ = *diff;
    auto git = GitRepo::open(repo_.repo());
    ASSERT_TRUE(git);
    git_.emplace(std::move(*git));
    base_tree_ = *git_->tree_of(*git_->resolve_commit(base_commit_));
    auto cache = ScratchDir::create("/tmp", "warden-channel-runner-test-", 0711);
    ASSERT_TRUE(cache);
    cache_.emplace(std::move(*cache));
  }

  // Runs one request through a ChannelRunner whose far end answers with `alter` applied.
  Checked<RunOutcome> exchange(const std::function<void(Answer&, const std::string& task, const std::string& nonce)>& alter,
                               const std::function<void(LineSocket&, const std::string& id)>& before = {},
                               RunnerQuorum quorum = {}, std::vector<CheckSpec> checks = {}) {
    int fds[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
    ChannelRunner runner{UniqueFd(fds[0]), test_profile(), false, quorum};
    std::thread far([&, fd = fds[1]] {
      LineSocket socket(UniqueFd(fd), size_t{64} << 20, "kernel");
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
      auto line = socket.read(deadline, {});
      if (!line) return;
      Json sent = Json::parse(*line);
      const std::string id = sent["request_id"];
      if (before) before(socket, id);
      auto request = RemoteRunRequest::from_json(sent["request"]).value();
      auto git = GitRepo::open(repo_.repo()).value();
      RunnerOptions o;
      o.cache_dir = cache_->path() / "cache";
      o.use_cache = false;
      auto local = LocalRunner::create(SandboxProfile::from_json(request.profile).value(), o).value();
      RunRequest run;
      run.base_tree = *ObjectId::parse(request.base_tree);
      run.tree = *ObjectId::parse(request.tree);
      std::optional<Diff> diff;
      if (request.diff) diff = Diff::from_json(*request.diff).value();
      run.diff = diff ? &*diff : nullptr;
      run.checks = request.checks;
      auto outcome = local.run(git, run);
      if (!outcome) {
        (void)socket.send(Json{{"type", "error"}, {"request_id", id}, {"error", outcome.error().message()}}.dump() + "\n", deadline, {});
        return;
      }
      const std::string nonce(64, '7');
      Answer answer;
      answer.run_result = outcome->result.to_json();
      answer.bodies = Json::object();
      for (const auto& [d, bytes] : outcome->bodies) answer.bodies[d.str()] = base64_encode(bytes);
      if (sent.contains("quorum")) seen_quorum_ = sent["quorum"];
      answer.attestation = sign(outcome->result, quorum.single() ? id : id + ".q1", nonce);
      alter(answer, id, nonce);
      Json attestations = Json::array({answer.attestation});
      for (const Json& a : answer.more) attestations.push_back(a);
      (void)socket.send(Json{{"type", "result"}, {"request_id", id}, {"run_result", answer.run_result},
                             {"bodies", answer.bodies}, {"attestations", attestations}}.dump() + "\n",
                        deadline, {});
    });
    RunRequest request;
    request.base_tree = base_tree_;
    request.diff = &diff_;
    request.checks = checks.empty() ? std::vector<CheckSpec>{CheckSpec::shell("ok", "cat a.txt b.txt")} : std::move(checks);
    auto out = runner.run(*git_, request);
    far.join();
    return out;
  }


 public:
  // The attestation a runner with key_ makes for `result`.
  Json sign(const RunResult& result, const std::string& task, const std::string& nonce, const std::string& agent = "runner-1",
            const std::string& owner = "r1", const Ed25519PrivateKey* key = nullptr) {
    const Ed25519PrivateKey& k = key ? *key : key_;
    auto sig = k.sign(attestation_message(agent, task, nonce, result.deterministic_digest())).value();
    return ResultAttestation{agent, owner, to_hex(std::string_view(reinterpret_cast<const char*>(k.public_key().data()), 32)), task,
                             nonce, to_hex(std::string_view(reinterpret_cast<const char*>(sig.data()), sig.size()))}
        .to_json();
  }

  // Changes the result and signs it again, as a runner that lies with its own key would.
  void resign(Answer& a, const std::string& task, const std::string& nonce, const std::function<void(RunResult&)>& change) {
    auto r = RunResult::from_json(a.run_result).value();
    change(r);
    a.run_result = r.to_json();
    a.attestation = sign(r, task, nonce);
  }

 protected:
  GitRepoFixture repo_;
  std::string base_commit_;
  Diff diff_;
  std::optional<GitRepo> git_;
  ObjectId base_tree_;
  std::optional<ScratchDir> cache_;
  Ed25519PrivateKey key_ = Ed25519PrivateKey::generate().value();
  Ed25519PrivateKey second_ = Ed25519PrivateKey::generate().value();
  Json seen_quorum_;  // the quorum the last run line asked for
};

TEST_F(ChannelRunnerTest, AResultThatIsWhatWasAskedComesBackWithItsAttestation) {
  auto out = exchange([](Answer&, const std::string&, const std::string&) {});
  ASSERT_TRUE(out) << out.error().message();
  ASSERT_EQ(out->attestations.size(), 1u);
  EXPECT_EQ(out->attestations[0].agent_id, "runner-1");
  EXPECT_TRUE(verify_attestation(out->attestations[0], out->result.deterministic_digest()));
  ASSERT_EQ(out->result.checks.size(), 1u);
  EXPECT_EQ(out->result.checks[0].verdict, "passed");
  EXPECT_EQ(out->result.base_tree, base_tree_.hex());
  EXPECT_EQ(out->result.diff_sha256, diff_.digest());
  EXPECT_EQ(out->bodies.size(), out->result.named_blobs().size());
}

TEST_F(ChannelRunnerTest, EveryAlterationTheKernelCanSeeIsRefusedWithItsReason) {
  struct Case {
    const char* what;
    std::function<void(ChannelRunnerTest&, Answer&, const std::string&, const std::string&)> alter;
    const char* reason;
  };
  const std::vector<Case> cases = {
      {"a verdict changed after signing",
       [](ChannelRunnerTest&, Answer& a, const std::string&, const std::string&) { a.run_result["checks"][0]["verdict"] = "failed"; },
       "the signature is not its key's"},
      {"signed by another key",
       [](ChannelRunnerTest&, Answer& a, const std::string&, const std::string&) {
         a.attestation["key"] = to_hex(std::string(32, '\x01'));
       },
       "signature"},
      {"a verdict changed under a key of small order, with a signature anyone can write",
       // Under the identity, R = the identity and S = 0 verify every message: an attestation
       // that would have stood for any result, this one's verdict changed included.
       [](ChannelRunnerTest&, Answer& a, const std::string&, const std::string&) {
         a.run_result["checks"][0]["verdict"] = "failed";
         a.attestation["key"] = "01" + std::string(62, '0');
         a.attestation["signature"] = "01" + std::string(126, '0');
       },
       "the signature is not its key's"},
      {"an attestation for another task",
       [](ChannelRunnerTest& t, Answer& a, const std::string&, const std::string& nonce) {
         a.attestation = t.sign(RunResult::from_json(a.run_result).value(), "another-task", nonce);
       },
       "names task another-task"},
      {"an attestation for a quorum's member when no quorum was asked",
       [](ChannelRunnerTest& t, Answer& a, const std::string& task, const std::string& nonce) {
         a.attestation = t.sign(RunResult::from_json(a.run_result).value(), task + ".q1", nonce);
       },
       "names task"},
      {"another tree",
       [](ChannelRunnerTest& t, Answer& a, const std::string& task, const std::string& nonce) {
         t.resign(a, task, nonce, [](RunResult& r) { r.tree = std::string(40, 'b'); });
       },
       "names tree bbbb"},
      {"another tree hash",
       [](ChannelRunnerTest& t, Answer& a, const std::string& task, const std::string& nonce) {
         t.resign(a, task, nonce, [](RunResult& r) { r.tree_sha256 = sha256("made up"); });
       },
       "gives tree hash"},
      {"another check",
       [](ChannelRunnerTest& t, Answer& a, const std::string& task, const std::string& nonce) {
         t.resign(a, task, nonce, [](RunResult& r) { r.checks[0].spec_sha256 = CheckSpec::shell("ok", "true").digest(); });
       },
       "is not the check ok"},
      {"another profile",
       [](ChannelRunnerTest& t, Answer& a, const std::string& task, const std::string& nonce) {
         t.resign(a, task, nonce, [](RunResult& r) { r.profile_sha256 = sha256("lax profile"); });
       },
       "was not run in the profile"},
      {"no base",
       [](ChannelRunnerTest& t, Answer& a, const std::string& task, const std::string& nonce) {
         t.resign(a, task, nonce, [](RunResult& r) { r.base_tree.reset(); });
       },
       "names base tree (none)"},
      {"a body's bytes changed",
       [](ChannelRunnerTest&, Answer& a, const std::string&, const std::string&) {
         for (auto& [k, v] : a.bodies.items()) v = base64_encode("other bytes");
       },
       "that hash to"},
      {"a body left out",
       [](ChannelRunnerTest&, Answer& a, const std::string&, const std::string&) { a.bodies = Json::object(); },
       "did not send it"},
      {"a body it does not name",
       [](ChannelRunnerTest&, Answer& a, const std::string&, const std::string&) {
         a.bodies[sha256("extra").str()] = base64_encode("extra");
       },
       "which it does not name"},
  };
  for (const Case& c : cases) {
    auto out = exchange([&](Answer& a, const std::string& task, const std::string& nonce) { c.alter(*this, a, task, nonce); });
    ASSERT_FALSE(out) << c.what << ": accepted";
    EXPECT_EQ(out.error().code, RefusalCode::runner_error) << c.what;
    EXPECT_NE(out.error().detail.find(c.reason), std::string::npos) << c.what << ": " << out.error().detail;
  }
}

TEST_F(ChannelRunnerTest, ALateAnswerIsSkippedAndAnErrorAnswerIsTheRunnersFailure) {
  // A line for another request first (a late answer to one that was cancelled): skipped.
  auto out = exchange([](Answer&, const std::string&, const std::string&) {},
                      [](LineSocket& socket, const std::string&) {
                        (void)socket.send(Json{{"type", "error"}, {"request_id", "old-1"}, {"error", "late"}}.dump() + "\n",
                                          std::chrono::steady_clock::now() + std::chrono::seconds(5), {});
                      });
  ASSERT_TRUE(out) << out.error().message();

  int fds[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
  ChannelRunner runner{UniqueFd(fds[0]), test_profile(), false};
  std::thread far([fd = fds[1]] {
    LineSocket socket(UniqueFd(fd), size_t{64} << 20, "kernel");
    auto line = socket.read(std::chrono::steady_clock::now() + std::chrono::seconds(30), {});
    if (!line) return;
    const std::string id = Json::parse(*line)["request_id"];
    (void)socket.send(Json{{"type", "error"}, {"request_id", id}, {"error", "no runner could run it"}}.dump() + "\n",
                      std::chrono::steady_clock::now() + std::chrono::seconds(5), {});
  });
  RunRequest request;
  request.base_tree = base_tree_;
  request.checks = {CheckSpec::shell("ok", "true")};
  auto failed = runner.run(*git_, request);
  far.join();
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().code, RefusalCode::runner_error);
  EXPECT_EQ(failed.error().detail, "remote runners: no runner could run it");
}

TEST_F(ChannelRunnerTest, AStopEndsTheWaitAndTellsTheServerAtOnce) {
  int fds[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
  LineSocket far{UniqueFd(fds[1]), size_t{64} << 20, "kernel"};
  ChannelRunner runner{UniqueFd(fds[0]), test_profile(), false};
  std::stop_source stop;
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    stop.request_stop();
  });
  RunRequest request;
  request.base_tree = base_tree_;
  request.checks = {CheckSpec::shell("ok", "true")};
  request.stop = stop.get_token();
  const auto began = std::chrono::steady_clock::now();
  auto out = runner.run(*git_, request);
  stopper.join();
  ASSERT_FALSE(out);
  EXPECT_LT(std::chrono::steady_clock::now() - began, std::chrono::seconds(5));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  auto run = far.read(deadline, {});
  ASSERT_TRUE(run);
  auto cancel = far.read(deadline, {});
  ASSERT_TRUE(cancel);
  EXPECT_EQ(Json::parse(*cancel)["type"], "cancel");
  EXPECT_EQ(Json::parse(*cancel)["request_id"], Json::parse(*run)["request_id"]);
}

// A tree from another machine is written out only when every name in it stays in its
// directory: "..", "/etc/x" or ".git" in a hand-made tree (git never makes one) is refused
// before a file is written.
TEST(TreeEntryNames, NamesThatWouldLeaveTheirDirectoryAreUnsafe) {
  for (std::string_view bad : {"", ".", "..", ".git", ".GIT", ".Git", "a/b", "/etc", "../x"}) {
    EXPECT_FALSE(safe_entry_name(bad)) << bad;
  }
  EXPECT_FALSE(safe_entry_name(std::string("a\0b", 3)));
  for (std::string_view good : {"a", ".gitignore", "..a", "a..", ".github", "git"}) EXPECT_TRUE(safe_entry_name(good)) << good;
}

TEST_F(ChannelRunnerTest, AHandMadeTreeNamingDotDotIsNeverWrittenOut) {
  auto blob = git_->write_object("blob", "planted\n");
  ASSERT_TRUE(blob);
  for (const std::string name : {"..", ".git"}) {
    std::string entry = "100644 " + name + std::string(1, '\0');
    entry.append(reinterpret_cast<const char*>(blob->oid.id), GIT_OID_RAWSZ);
    auto tree = git_->write_object("tree", entry);
    ASSERT_TRUE(tree) << tree.error().message();
    auto layer = ScratchDir::create("/tmp", "warden-layer-test-", 0700);
    ASSERT_TRUE(layer);
    auto written = write_full_tree(*git_, *tree, layer->path() / "tree", SandboxHost::detect());
    ASSERT_FALSE(written) << name << " was written";
    EXPECT_NE(written.error().detail.find("which no checkout may write"), std::string::npos) << written.error().detail;
    EXPECT_FALSE(fs::exists(layer->path() / "planted")) << name;
    auto diffed = write_diff_layer(*git_, base_tree_, *tree, layer->path() / "diff", SandboxHost::detect());
    EXPECT_FALSE(diffed) << name;
  }
}

TEST(RunnerQuorumRule, KOfNNeedsMoreThanHalf) {
  EXPECT_EQ(RunnerQuorum::parse("2/3").value(), (RunnerQuorum{2, 3}));
  EXPECT_EQ(RunnerQuorum::parse("1/1").value(), RunnerQuorum{});
  for (const char* bad : {"1/2", "2/4", "3/2", "0/1", "1/0", "5/10", "x", "2/", "/3", "2-3", "22/33"}) {
    EXPECT_FALSE(RunnerQuorum::parse(bad)) << bad;
  }
  EXPECT_EQ(RunnerQuorum::from_json(Json{{"k", 3}, {"n", 5}}).value(), (RunnerQuorum{3, 5}));
  EXPECT_FALSE(RunnerQuorum::from_json(Json{{"k", 1}, {"n", 3}}));
}

TEST_F(ChannelRunnerTest, AQuorumsResultCountsOnlyWithKSignaturesOfDistinctIdentities) {
  const RunnerQuorum two_of_three{2, 3};
  auto second = [&](const std::string& owner, const std::string& agent) {
    return [&, owner, agent](Answer& a, const std::string& id, const std::string& nonce) {
      a.more.push_back(sign(RunResult::from_json(a.run_result).value(), id + ".q2", nonce, agent, owner, &second_));
    };
  };
  auto agreed = exchange(second("r2", "runner-2"), {}, two_of_three);
  ASSERT_TRUE(agreed) << agreed.error().message();
  EXPECT_EQ(seen_quorum_, two_of_three.to_json()) << "the server is asked for the quorum";
  ASSERT_EQ(agreed->attestations.size(), 2u);
  EXPECT_EQ(agreed->attestations[1].owner, "r2");

  auto one = exchange([](Answer&, const std::string&, const std::string&) {}, {}, two_of_three);
  ASSERT_FALSE(one);
  EXPECT_NE(one.error().detail.find("the quorum is 2 of 3"), std::string::npos) << one.error().detail;

  auto same_owner = exchange(second("r1", "runner-2"), {}, two_of_three);
  ASSERT_FALSE(same_owner);
  EXPECT_NE(same_owner.error().detail.find("counts twice"), std::string::npos) << same_owner.error().detail;

  // A second signature over another result is no vote for this one.
  auto other_result = exchange([&](Answer& a, const std::string& id, const std::string& nonce) {
    auto r = RunResult::from_json(a.run_result).value();
    r.checks[0].verdict = "failed";
    a.more.push_back(sign(r, id + ".q2", nonce, "runner-2", "r2", &second_));
  }, {}, two_of_three);
  ASSERT_FALSE(other_result);
  EXPECT_NE(other_result.error().detail.find("signature"), std::string::npos) << other_result.error().detail;
}

// The verdicts are the runner's word only as far as its evidence goes: a runner that signs a
// check "passed" (or an invariant proven) while the runs it recorded failed would have the
// kernel accept a broken change, and replay, which judges the recorded verdicts, agree. The
// kernel re-derives each run's outcome, each check's verdict and judgement, and the
// invariants from the recorded runs and the specs it sent (check_verdict.h), and counts the
// runs against each spec.
TEST_F(ChannelRunnerTest, AVerdictTheRecordedRunsDoNotSupportIsRefused) {
  CheckSpec failing = CheckSpec::shell("tests", "echo one test failed; exit 1");
  failing.proves = {"works"};
  CheckSpec repeated = CheckSpec::shell("again", "exit 1");
  repeated.runs = 3;
  const std::vector<CheckSpec> checks = {failing, repeated};

  auto honest = exchange([](Answer&, const std::string&, const std::string&) {}, {}, {}, checks);
  ASSERT_TRUE(honest) << honest.error().message();
  ASSERT_EQ(honest->result.checks.size(), 2u);
  EXPECT_EQ(honest->result.checks[0].verdict, "failed");
  EXPECT_FALSE(honest->result.invariants.at("works").proven);

  struct Case {
    const char* what;
    std::function<void(RunResult&)> lie;
    const char* reason;
  };
  const std::vector<Case> cases = {
      {"a failed check signed as passed",
       [](RunResult& r) { r.checks[0].verdict = "passed"; }, "verdict"},
      {"a failed run signed as passed, and its check with it",
       [](RunResult& r) {
         r.checks[0].runs[0].outcome = "passed";
         r.checks[0].verdict = "passed";
       },
       "outcome"},
      {"an invariant signed as proven by a check that failed",
       [](RunResult& r) { r.invariants["works"].proven = true; }, "invariants"},
      {"one run where the spec asks for three",
       [](RunResult& r) { r.checks[1].runs.resize(1); }, "runs"},
      {"an invariant left out",
       [](RunResult& r) { r.invariants.clear(); }, "invariants"},
  };
  for (const Case& c : cases) {
    auto out = exchange([&](Answer& a, const std::string& task, const std::string& nonce) { resign(a, task, nonce, c.lie); }, {}, {},
                        checks);
    ASSERT_FALSE(out) << c.what << ": accepted";
    EXPECT_EQ(out.error().code, RefusalCode::runner_error) << c.what;
    EXPECT_NE(out.error().detail.find(c.reason), std::string::npos) << c.what << ": " << out.error().detail;
  }
}

}  // namespace
}  // namespace warden::test
