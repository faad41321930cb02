// The command executor's pieces that need no process: which words of its shell command are
// taken as files it reads (those are what its sandbox shows it), that it asks its launcher
// with the step on stdin, its folder and its named files, and how a launcher's confinement
// reads back from a record.
#include "executor/command_proposer.h"

#include <gtest/gtest.h>

namespace warden::executor {
namespace {

TEST(CommandProposer, PlainShellWordsAreTheCandidateFiles) {
  EXPECT_EQ(plain_shell_words("python3 agent.py --mode=fast /opt/a/key.pem"),
            (std::vector<std::string>{"python3", "agent.py", "--mode=fast", "/opt/a/key.pem"}));
  // Quoted, expanded or redirected words are not taken literally by the shell: not files.
  EXPECT_EQ(plain_shell_words("sh 'x y.sh' $HOME/k \"z\" >out.txt a\tb\n./c.sh"),
            (std::vector<std::string>{"sh", "a", "b", "./c.sh"}));
  EXPECT_TRUE(plain_shell_words("  ").empty());
}

// Records what it was asked; answers a fixed text.
class RecordingLauncher final : public CommandLauncher {
 public:
  Result<SubprocessResult> launch(const LaunchRequest& request) override {
    seen = request;
    SubprocessResult r;
    r.exit_code = exit_code;
    r.ending = ending;
    r.out = "answer";
    r.err = "complaint";
    return r;
  }
  LaunchConfinement confinement() const override { return {"executor", Digest(), true}; }
  LaunchRequest seen;
  int exit_code = 0;
  SubprocessResult::Ending ending = SubprocessResult::Ending::exited;
};

TEST(CommandProposer, AsksItsLauncherWithTheStepItsFolderAndItsFiles) {
  auto launcher = std::make_shared<RecordingLauncher>();
  CommandProposer proposer("python3 agent.py fast", "/blueprints/x", launcher);
  ProposalRequest request;
  request.step = Json{{"id", "s1"}};
  request.context = Json{{"attempt", 1}};
  auto answer = proposer.propose(request);
  ASSERT_TRUE(answer) << answer.error().message();
  EXPECT_EQ(*answer, "answer");
  EXPECT_EQ(launcher->seen.argv, (std::vector<std::string>{"/bin/sh", "-c", "python3 agent.py fast"}));
  EXPECT_EQ(launcher->seen.dir, "/blueprints/x");
  EXPECT_EQ(launcher->seen.files, (std::vector<std::string>{"python3", "agent.py", "fast"}));
  EXPECT_EQ(launcher->seen.stdin_data, R"({"context":{"attempt":1},"step":{"id":"s1"}})" "\n");
  EXPECT_TRUE(launcher->seen.env.empty());  // nothing of Warden's environment is passed on
  EXPECT_EQ(launcher->seen.max_output, CommandProposer::kMaxAnswerBytes);
  ASSERT_TRUE(proposer.confinement());
  EXPECT_TRUE(proposer.confinement()->network);

  launcher->exit_code = 2;
  auto refused = proposer.propose(request);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, RefusalCode::executor_failed);
  EXPECT_EQ(refused.error().detail, "executor exited with status 2: complaint");
}

// A program that ran out of its time is an executor_timeout, whatever (nothing) it wrote:
// never a malformed diff, never a crash.
TEST(CommandProposer, AProgramPastItsTimeIsAnExecutorTimeout) {
  auto launcher = std::make_shared<RecordingLauncher>();
  launcher->ending = SubprocessResult::Ending::timed_out;
  CommandProposer proposer("python3 agent.py", "/blueprints/x", launcher);
  ProposalRequest request;
  request.step = Json{{"id", "s1"}};
  request.timeout = std::chrono::milliseconds(2000);
  auto refused = proposer.propose(request);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, RefusalCode::executor_timeout);
  EXPECT_EQ(refused.error().detail, "executor timed out after 2000 ms");
  EXPECT_EQ(launcher->seen.timeout, std::chrono::milliseconds(2000));
  // Asked for a plan, the same is an error for the build loop to report.
  auto replan = proposer.replan(Json::object(), std::chrono::milliseconds(2000));
  ASSERT_FALSE(replan);
  EXPECT_EQ(replan.error().code, Errc::limit_exceeded);
}

TEST(LaunchConfinement, RoundTripsAndRefusesWhatIsNotOne) {
  LaunchConfinement c{"executor", sha256("profile"), true};
  auto again = LaunchConfinement::from_json(c.to_json(), "x");
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(*again, c);
  Json extra = c.to_json();
  extra["more"] = 1;
  EXPECT_EQ(LaunchConfinement::from_json(extra, "x").error().message, "x.more: unknown field");
  Json unnamed = c.to_json();
  unnamed["profile"] = "";
  EXPECT_EQ(LaunchConfinement::from_json(unnamed, "x").error().message, "x.profile: must not be empty");
}

}  // namespace
}  // namespace warden::executor
