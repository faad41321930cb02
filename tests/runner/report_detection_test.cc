// Which report a `--check` command leaves, read from the command's text: the runners Warden
// knows through the shell's syntax (chains, subshells, wrappers, quotes, redirections), the
// commands it cannot see through, and --report's FORMAT[:PATH] judged like a checks file.
#include <gtest/gtest.h>

#include "runner/check/report_detection.h"

namespace warden::test {
namespace {

std::string format_of(std::string_view command) { return detect_report(command).format; }

TEST(ReportDetection, TheRunnersWardenKnows) {
  EXPECT_EQ(format_of("python3 -m unittest discover -s tests -t . -v"), "unittest");
  EXPECT_EQ(format_of("python3 -B -m unittest --verbose tests.test_ops"), "unittest");
  EXPECT_EQ(format_of("/usr/bin/python3.11 -W error -munittest -bv"), "unittest");
  EXPECT_EQ(format_of("pytest"), "pytest");
  EXPECT_EQ(format_of("cd src && python3 -m pytest -q tests"), "pytest");
  EXPECT_EQ(format_of("PYTHONPATH=. timeout -s KILL 60 env -i A=1 pytest-3 -x"), "pytest");
  EXPECT_EQ(format_of("cmake --build build && ctest --test-dir build --output-on-failure"), "ctest");
  EXPECT_EQ(format_of("(cd build && ctest -j2)"), "ctest");
  EXPECT_EQ(format_of("ctest --test-dir a; ctest --test-dir b"), "ctest");
  EXPECT_EQ(format_of("ctest 2>&1 | tee ctest.log"), "ctest");
  EXPECT_EQ(format_of("go vet ./... && go test -json ./..."), "go-json");
  EXPECT_EQ(format_of("sh -c 'cd t && exec python3 -m unittest -v'"), "unittest");
  EXPECT_EQ(format_of("python3 -m unittest -v >unittest.out"), "unittest");  // stdout is not its report
}

TEST(ReportDetection, PytestsOwnJunitXml) {
  DetectedReport own = detect_report("pytest --junitxml=reports/junit.xml tests");
  EXPECT_EQ(own.format, "junit");
  EXPECT_EQ(own.path, "reports/junit.xml");
  EXPECT_EQ(detect_report("python3 -m pytest --junit-xml /workspace/out/j.xml").path, "out/j.xml");
  DetectedReport moved = detect_report("cd tests && pytest --junitxml=j.xml");
  EXPECT_EQ(moved.format, "none");
  EXPECT_NE(moved.note.find("--report junit:PATH"), std::string::npos);
  EXPECT_EQ(detect_report("pytest --junitxml=../j.xml").format, "none");
}

// unittest below -v names no test: the runner's reporter makes it, whatever the user typed.
TEST(ReportDetection, UnittestWithoutVerboseGetsTheReporter) {
  for (const char* quiet : {"python3 -B -m unittest -q", "python3 -m unittest discover -s tests -t .", "python3 -m unittest -v -q"}) {
    DetectedReport d = detect_report(quiet);
    EXPECT_EQ(d.format, "unittest") << quiet;
    EXPECT_TRUE(d.unittest_reporter) << quiet;
    EXPECT_TRUE(d.note.empty()) << quiet << ": " << d.note;
  }
  EXPECT_FALSE(detect_report("python3 -m unittest -v").unittest_reporter);
  auto check = command_check("check1", "python3 -m unittest discover", "auto");
  ASSERT_TRUE(check) << check.error().message;
  EXPECT_TRUE(check->spec.unittest_reporter);
  EXPECT_TRUE(check->spec.to_json().contains("unittest_reporter"));
  EXPECT_FALSE(command_check("check1", "python3 -m unittest -v", "auto")->spec.to_json().contains("unittest_reporter"))
      << "a spec without the reporter keeps its digest";
  // A command that sets PYTHONPATH itself would hide the reporter: judged by its exit status.
  DetectedReport own = detect_report("PYTHONPATH=src python3 -m unittest");
  EXPECT_EQ(own.format, "none");
  EXPECT_NE(own.note.find("PYTHONPATH"), std::string::npos) << own.note;
}

TEST(ReportDetection, NoneWithAReasonWhenTheReportCannotBeRead) {
  for (const char* away : {"python3 -m unittest -v 2>&1 | tail -5", "python3 -m unittest -v 2>err.txt",
                           "python3 -m unittest -v &>all.txt", "ctest > ctest.log", "ctest | grep -v Start",
                           "ctest >&2", "go test -json ./... 1>/dev/null", "ctest -Q", "go test ./...",
                           "pytest && ctest", "pytest; pytest tests/other"}) {
    DetectedReport d = detect_report(away);
    EXPECT_EQ(d.format, "none") << away;
    EXPECT_FALSE(d.note.empty()) << away;
  }
}

TEST(ReportDetection, CommandsItCannotSeeThroughAreNone) {
  for (const char* other : {"make test", "make check", "./run_tests.sh", "python3 run_tests.py", "bash test.sh",
                            "echo pytest", "echo 'ctest' && true", "python3 -c 'import pytest'", "npm test",
                            "cargo test", "", "   ", "'unterminated", "\"also", "a \\", "((((", ")|&;<>",
                            "sh -c 'sh -c \"sh -c \\\"sh -c \\\\\\\"sh -c pytest\\\\\\\"\\\"\"'"}) {
    DetectedReport d = detect_report(other);
    EXPECT_EQ(d.format, "none") << other;
    EXPECT_TRUE(d.note.empty()) << other;
  }
}

TEST(ReportDetection, ReportOverridesAreJudgedLikeACheckSpec) {
  auto detected = command_check("check1", "python3 -m unittest -v", "auto");
  ASSERT_TRUE(detected);
  EXPECT_EQ(detected->spec.report_format, "unittest");
  EXPECT_EQ(detected->spec.argv, (std::vector<std::string>{"/bin/sh", "-c", "python3 -m unittest -v"}));
  auto wrapped = command_check("check1", "./test.sh", "pytest");
  ASSERT_TRUE(wrapped);
  EXPECT_EQ(wrapped->spec.report_format, "pytest");
  auto junit = command_check("check1", "./test.sh", "junit:out/junit.xml");
  ASSERT_TRUE(junit);
  EXPECT_EQ(junit->spec.report_path, "out/junit.xml");
  auto tap = command_check("check1", "make test", "tap");
  ASSERT_TRUE(tap);
  EXPECT_EQ(tap->spec.report_source(), ReportSource::stdout_stream);
  auto none = command_check("check1", "pytest", "none");
  ASSERT_TRUE(none);
  EXPECT_EQ(none->spec.report_format, "none");
  for (const char* bad : {"junit", "bogus", "pytest:x.xml", "tap:../x", "unittest:/abs", ""}) {
    auto refused = command_check("check1", "true", bad);
    EXPECT_FALSE(refused) << bad;
    if (!refused) {
      EXPECT_EQ(refused.error().code, Errc::invalid_argument);
    }
  }
}

}  // namespace
}  // namespace warden::test
