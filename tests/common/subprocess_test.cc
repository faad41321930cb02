#include "common/subprocess.h"

#include <gtest/gtest.h>

namespace warden {
namespace {

using Ending = SubprocessResult::Ending;

SubprocessSpec shell(std::string script) {
  SubprocessSpec spec;
  spec.argv = {"/bin/sh", "-c", std::move(script)};
  spec.env = {"PATH=/usr/bin:/bin"};
  return spec;
}

TEST(Subprocess, CapturesOutputAndExitStatus) {
  SubprocessSpec spec = shell("cat; echo err >&2; exit 3");
  spec.stdin_data = "hello";
  auto r = run_subprocess(spec);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->ending, Ending::exited);
  EXPECT_EQ(r->exit_code, 3);
  EXPECT_EQ(r->out, "hello");
  EXPECT_EQ(r->err, "err\n");
}

TEST(Subprocess, RunsInTheGivenDirectoryWithTheGivenEnvironment) {
  SubprocessSpec spec = shell("pwd; echo $GREETING");
  spec.cwd = "/tmp";
  spec.env.push_back("GREETING=hi");
  auto r = run_subprocess(spec);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->out, "/tmp\nhi\n");
}

TEST(Subprocess, KillsTheGroupAtTheDeadline) {
  SubprocessSpec spec = shell("sleep 30 & sleep 30");
  spec.timeout = std::chrono::milliseconds(200);
  auto r = run_subprocess(spec);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->ending, Ending::timed_out);
  EXPECT_LT(r->elapsed, std::chrono::milliseconds(10'000));
}

TEST(Subprocess, StopsAFloodOfOutput) {
  SubprocessSpec spec = shell("yes");
  spec.max_stdout = 1000;
  auto r = run_subprocess(spec);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->ending, Ending::stdout_overflow);
}

TEST(Subprocess, TruncatesStderrPastItsCap) {
  SubprocessSpec spec = shell("head -c 5000 /dev/zero >&2");
  spec.max_stderr = 100;
  auto r = run_subprocess(spec);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->ending, Ending::exited);
  EXPECT_EQ(r->err.size(), 100u);
  EXPECT_TRUE(r->err_truncated);
}

TEST(Subprocess, AStopRequestEndsItLikeATimeout) {
  std::stop_source source;
  SubprocessSpec spec = shell("sleep 30");
  spec.stop = source.get_token();
  source.request_stop();
  auto r = run_subprocess(spec);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->ending, Ending::timed_out);
}

TEST(Subprocess, AMissingProgramIsAnError) {
  SubprocessSpec spec;
  spec.argv = {"/nonexistent/program"};
  EXPECT_FALSE(run_subprocess(spec));
}

}  // namespace
}  // namespace warden
