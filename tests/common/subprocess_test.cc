#include "common/subprocess.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

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

// A /bin/sh child in its own process group without a pidfd, so drive()'s exited() polling
// path is covered too.
class ShellChild final : public ChildProcess {
 public:
  ShellChild(const char* script, ChildPipes& pipes) {
    int out[2], err[2];
    EXPECT_EQ(::pipe2(out, O_CLOEXEC), 0);
    EXPECT_EQ(::pipe2(err, O_CLOEXEC), 0);
    pid_ = ::fork();
    if (pid_ == 0) {
      ::setpgid(0, 0);
      ::dup2(out[1], 1);
      ::dup2(err[1], 2);
      ::execl("/bin/sh", "sh", "-c", script, static_cast<char*>(nullptr));
      ::_exit(127);
    }
    ::close(out[1]);
    ::close(err[1]);
    pipes.out.reset(out[0]);
    pipes.err.reset(err[0]);
  }
  ~ShellChild() override {
    if (!reaped_) {
      stop();
      reap();
    }
  }
  int pidfd() const override { return -1; }
  bool exited() override {
    siginfo_t info{};
    return ::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid_;
  }
  void stop() override {
    ++stops;
    ::kill(-pid_, SIGKILL);
  }
  int reap() override {
    int status = 0;
    ::waitpid(pid_, &status, 0);
    reaped_ = true;
    return status;
  }
  int stops = 0;

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
};

TEST(Drive, AnOverLimitSinkStopsTheChildOnceAndDrainsTheRest) {
  ChildPipes pipes;
  ShellChild child("yes", pipes);
  size_t seen = 0;
  DriveOptions options;
  options.out.take = [&seen](std::string_view bytes) {
    seen += bytes.size();
    return seen <= 1000;
  };
  auto r = drive(child, std::move(pipes), options);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->ending, DriveOutcome::Ending::overflow);
  EXPECT_TRUE(r->overflow);
  EXPECT_FALSE(r->outlived);
  ASSERT_TRUE(r->wait_status);
  EXPECT_TRUE(WIFSIGNALED(*r->wait_status));
  EXPECT_EQ(child.stops, 1);
}

TEST(Drive, AnExitIsReapedAndReportedWithItsOutput) {
  ChildPipes pipes;
  ShellChild child("echo out; echo err >&2; exit 4", pipes);
  std::string out, err;
  DriveOptions options;
  options.out.take = [&out](std::string_view b) { return out.append(b), true; };
  options.err.take = [&err](std::string_view b) { return err.append(b), true; };
  auto r = drive(child, std::move(pipes), options);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->ending, DriveOutcome::Ending::exited);
  ASSERT_TRUE(r->wait_status);
  EXPECT_EQ(WEXITSTATUS(*r->wait_status), 4);
  EXPECT_EQ(out, "out\n");
  EXPECT_EQ(err, "err\n");
  EXPECT_EQ(child.stops, 0);
}

TEST(Drive, APipeHeldPastTheGraceIsReportedAsOutlived) {
  ChildPipes pipes;
  // The sleeper leaves the process group, so stopping the child does not reach it.
  ShellChild child("setsid sleep 2 & exit 0", pipes);
  DriveOptions options;
  options.grace = std::chrono::milliseconds(200);
  auto r = drive(child, std::move(pipes), options);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->ending, DriveOutcome::Ending::exited);
  EXPECT_TRUE(r->outlived);
  EXPECT_LT(r->elapsed, std::chrono::milliseconds(1'500));
}

TEST(Drive, TheDeadlineStopsTheChild) {
  ChildPipes pipes;
  ShellChild child("sleep 30", pipes);
  DriveOptions options;
  options.timeout = std::chrono::milliseconds(100);
  auto r = drive(child, std::move(pipes), options);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->ending, DriveOutcome::Ending::timed_out);
  EXPECT_EQ(child.stops, 1);
  EXPECT_GE(r->elapsed, std::chrono::milliseconds(100));
}

}  // namespace
}  // namespace warden
