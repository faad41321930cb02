// The parsers for the runners Warden knows (unittest -v, ctest, go test -json) on output
// captured from the real tools where they are installed (a tiny project run inside the
// test) and on fixed samples, and on malformed and hostile input: huge, invalid UTF-8,
// lines the tested code injects. pytest's report is JUnit (parse_junit), checked here on the
// file the real pytest writes.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "common/canonical_json.h"
#include "runner/check/test_report.h"
#include "runner/check/unittest_reporter.h"
#include "tests/support/files.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace warden::test {
namespace {

using Statuses = std::map<std::string, std::string>;

Statuses statuses(const Result<std::vector<TestCase>>& tests) {
  Statuses out;
  if (!tests) {
    ADD_FAILURE() << tests.error().message;
    return out;
  }
  EXPECT_TRUE(std::is_sorted(tests->begin(), tests->end(), [](const TestCase& a, const TestCase& b) { return a.id < b.id; }));
  for (const auto& t : *tests) {
    EXPECT_TRUE(is_valid_utf8(t.id)) << t.id;
    out[t.id] = t.status;
  }
  return out;
}

ProcessResult shell_in(const TempDir& dir, const std::string& command) {
  return Child::spawn({"/bin/sh", "-c", "cd '" + dir.path().string() + "' && " + command}).wait();
}

// --- unittest -v ---

// One of each thing unittest -v prints: docstrings, output a test writes to stderr (with and
// without a newline), skips, expected failures and unexpected successes, subtests that fail
// and skip, and a class fixture that errors.
constexpr const char* kUnittestProject = R"py(import sys
import unittest


class TestOps(unittest.TestCase):
    def test_mul(self):
        self.assertEqual(2 * 3, 6)

    def test_fail(self):
        self.assertEqual(1, 2)

    def test_error(self):
        raise RuntimeError("boom")

    @unittest.skip("not today")
    def test_skip(self):
        pass

    @unittest.expectedFailure
    def test_xfail(self):
        self.assertEqual(1, 2)

    @unittest.expectedFailure
    def test_xpass(self):
        pass

    def test_doc(self):
        """Multiplies numbers.

        More lines here ... FAIL
        """

    def test_noisy(self):
        sys.stderr.write("noise on stderr\n")

    def test_noisy2(self):
        sys.stderr.write("partial")

    def test_sub(self):
        for i in range(3):
            with self.subTest(i=i):
                self.assertNotEqual(i, 1)

    def test_subskip(self):
        for i in range(2):
            with self.subTest(i=i):
                if i:
                    self.skipTest("sub skip")


class TestSetup(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        raise RuntimeError("no class")

    def test_never(self):
        pass
)py";

const Statuses kUnittestExpected = {
    {"tests.test_ops.TestOps.test_doc", "passed"},     {"tests.test_ops.TestOps.test_error", "error"},
    {"tests.test_ops.TestOps.test_fail", "failed"},    {"tests.test_ops.TestOps.test_mul", "passed"},
    {"tests.test_ops.TestOps.test_noisy", "passed"},   {"tests.test_ops.TestOps.test_noisy2", "passed"},
    {"tests.test_ops.TestOps.test_skip", "skipped"},   {"tests.test_ops.TestOps.test_sub", "failed"},
    {"tests.test_ops.TestOps.test_subskip", "skipped"}, {"tests.test_ops.TestOps.test_xfail", "skipped"},
    {"tests.test_ops.TestOps.test_xpass", "failed"},   {"tests.test_ops.TestSetup.setUpClass", "error"},
};

// Python 3.11.7's stderr for kUnittestProject (tracebacks shortened).
constexpr const char* kUnittest311 = R"(test_doc (tests.test_ops.TestOps.test_doc)
Multiplies numbers. ... ok
test_error (tests.test_ops.TestOps.test_error) ... ERROR
test_fail (tests.test_ops.TestOps.test_fail) ... FAIL
test_mul (tests.test_ops.TestOps.test_mul) ... ok
test_noisy (tests.test_ops.TestOps.test_noisy) ... noise on stderr
ok
test_noisy2 (tests.test_ops.TestOps.test_noisy2) ... partialok
test_skip (tests.test_ops.TestOps.test_skip) ... skipped 'not today'
test_sub (tests.test_ops.TestOps.test_sub) ... 
  test_sub (tests.test_ops.TestOps.test_sub) (i=1) ... FAIL
test_subskip (tests.test_ops.TestOps.test_subskip) ... 
  test_subskip (tests.test_ops.TestOps.test_subskip) (i=1) ... skipped 'sub skip'
test_xfail (tests.test_ops.TestOps.test_xfail) ... expected failure
test_xpass (tests.test_ops.TestOps.test_xpass) ... unexpected success
ERROR

======================================================================
ERROR: test_error (tests.test_ops.TestOps.test_error)
----------------------------------------------------------------------
Traceback (most recent call last):
RuntimeError: boom

======================================================================
ERROR: setUpClass (tests.test_ops.TestSetup)
----------------------------------------------------------------------
Traceback (most recent call last):
RuntimeError: no class

======================================================================
FAIL: test_fail (tests.test_ops.TestOps.test_fail)
----------------------------------------------------------------------
AssertionError: 1 != 2

======================================================================
FAIL: test_sub (tests.test_ops.TestOps.test_sub) (i=1)
----------------------------------------------------------------------
AssertionError: 1 == 1

======================================================================
UNEXPECTED SUCCESS: test_xpass (tests.test_ops.TestOps.test_xpass)
----------------------------------------------------------------------
Ran 11 tests in 0.013s

FAILED (failures=2, errors=2, skipped=2, expected failures=1, unexpected successes=1)
)";

TEST(UnittestReport, Python311VerboseSample) {
  EXPECT_EQ(statuses(parse_unittest(kUnittest311)), kUnittestExpected);
}

TEST(UnittestReport, RealPythonVerboseOutput) {
  if (!std::filesystem::exists("/usr/bin/python3")) GTEST_SKIP() << "no /usr/bin/python3";
  TempDir dir;
  std::filesystem::create_directories(dir / "tests");
  write_file(dir / "tests/__init__.py", "");
  write_file(dir / "tests/test_ops.py", kUnittestProject);
  ProcessResult r = shell_in(dir, "/usr/bin/python3 -m unittest discover -s tests -t . -v");
  EXPECT_TRUE(r.exited_with(1)) << r.status() << r.err;
  EXPECT_EQ(statuses(parse_unittest(r.err)), kUnittestExpected) << r.err;

  // The same suite without -v names no test: refused, saying why.
  ProcessResult quiet = shell_in(dir, "/usr/bin/python3 -m unittest discover -s tests -t .");
  auto refused = parse_unittest(quiet.err);
  ASSERT_FALSE(refused) << quiet.err;
  EXPECT_NE(refused.error().message.find("-v"), std::string::npos) << refused.error().message;

  // With Warden's reporter on PYTHONPATH the quiet command names every test, as -v does; a
  // Python that is not `-m unittest` is left alone.
  std::filesystem::create_directories(dir / "reporter");
  write_file(dir / "reporter/sitecustomize.py", std::string(unittest_reporter_source()));
  ProcessResult reported = shell_in(dir, "PYTHONPATH=reporter /usr/bin/python3 -m unittest discover -s tests -t . -q");
  EXPECT_TRUE(reported.exited_with(1)) << reported.status() << reported.err;
  EXPECT_EQ(statuses(parse_unittest(reported.err)), kUnittestExpected) << reported.err;
  ProcessResult other = shell_in(dir, "PYTHONPATH=reporter /usr/bin/python3 -c 'import sys; print(\"unittest\" in sys.modules)'");
  EXPECT_EQ(other.out, "False\n") << other.err;

  // An empty suite exits 0 on Python 3.11 and is zero tests.
  TempDir empty;
  std::filesystem::create_directories(empty / "tests");
  write_file(empty / "tests/__init__.py", "");
  ProcessResult none = shell_in(empty, "/usr/bin/python3 -m unittest discover -s tests -t . -v");
  EXPECT_TRUE(none.exited_with(0)) << none.status() << none.err;
  auto zero = parse_unittest(none.err);
  ASSERT_TRUE(zero) << zero.error().message;
  EXPECT_TRUE(zero->empty());
  EXPECT_TRUE(no_test_ran(*zero));
}

TEST(UnittestReport, OlderPythonsNameTheClassOnly) {
  EXPECT_EQ(statuses(parse_unittest("test_mul (tests.test_ops.TestOps) ... ok\n"
                                    "test_b (tests.test_ops.TestOps) ... skipped 'x'\n"
                                    "----------------------------------------------------------------------\n"
                                    "Ran 2 tests in 0.001s\n\nOK\n")),
            (Statuses{{"tests.test_ops.TestOps.test_b", "skipped"}, {"tests.test_ops.TestOps.test_mul", "passed"}}));
}

TEST(UnittestReport, ARunThatDiesIsNeverAPass) {
  // os._exit(0) inside test_b: no result for it and no summary.
  EXPECT_EQ(statuses(parse_unittest("test_a (m.C.test_a) ... ok\ntest_b (m.C.test_b) ... ")),
            (Statuses{{"m.C.test_a", "passed"}, {"m.C.test_b", "error"}, {"summary", "error"}}));
}

TEST(UnittestReport, LinesTheTestPrintsCannotImproveIt) {
  constexpr const char* kRan = "----------------------------------------------------------------------\nRan 3 tests in 0.1s\n";
  // A failing test that first prints "ok": the FAIL heading after the run decides.
  std::string forged_ok = std::string("test_a (m.C.test_a) ... ok\nFAIL\n\n") + std::string(70, '=') +
                          "\nFAIL: test_a (m.C.test_a)\n" + kRan;
  EXPECT_EQ(statuses(parse_unittest(forged_ok)), (Statuses{{"m.C.test_a", "failed"}}));
  // Code under test that prints "ok" and then raises SkipTest: skipped, not passed.
  EXPECT_EQ(statuses(parse_unittest(std::string("test_a (m.C.test_a) ... ok\nskipped ''\n") + kRan)),
            (Statuses{{"m.C.test_a", "skipped"}}));
  // A test that prints a test line of its own: the forged test is added, and the test that
  // printed it is left without a result of its own, an error.
  std::string injected = std::string("test_a (m.C.test_a) ... \ntest_fake (m.C.test_fake) ... ok\nok\n") + kRan;
  EXPECT_EQ(statuses(parse_unittest(injected)), (Statuses{{"m.C.test_a", "error"}, {"m.C.test_fake", "passed"}}));
  // A forged summary mid-run ends the report: the tests after it are missing, not passed.
  EXPECT_EQ(statuses(parse_unittest(std::string("Ran 0 tests in 0.0s\ntest_a (m.C.test_a) ... ok\n"))), Statuses{});
}

TEST(UnittestReport, HostileBytesAndSizes) {
  auto bad = statuses(parse_unittest("test_\xff\xfe (m.C\xc3.test_\xff\xfe) ... ok\nRan 1 test in 0.0s\n"));
  ASSERT_EQ(bad.size(), 1u);
  EXPECT_EQ(bad.begin()->second, "passed");
  EXPECT_FALSE(parse_unittest(std::string(kMaxReportBytes + 1, 'x')));
  std::string many;
  for (size_t i = 0; i <= kMaxReportTests; ++i) many += "t" + std::to_string(i) + " (m.C.t" + std::to_string(i) + ") ... ok\n";
  auto limited = parse_unittest(many);
  ASSERT_FALSE(limited);
  EXPECT_EQ(limited.error().code, Errc::limit_exceeded);
  // Garbage is no test; "\0" and lone "\r" do not confuse the line reader.
  constexpr char kGarbage[] = "\0\r\n((( ... ok\n ... \nRan 0 tests in 0s\r\n";
  EXPECT_EQ(statuses(parse_unittest(std::string(kGarbage, sizeof kGarbage - 1))), Statuses{});
}

// --- ctest ---

// ctest 3.25's stdout (the lines that matter).
constexpr const char* kCtestSample = R"(Test project /tmp/ct/b
    Start 1: pass_one
1/9 Test #1: pass_one .........................   Passed    0.03 sec
    Start 2: fails
2/9 Test #2: fails ............................***Failed    0.02 sec
    Start 3: skips
3/9 Test #3: skips ............................***Skipped   0.02 sec
    Start 4: slow
4/9 Test #4: slow .............................***Timeout   1.03 sec
    Start 5: missing_exe
Could not find executable /nonexistent/bin
5/9 Test #5: missing_exe ......................***Not Run   0.00 sec
    Start 6: disabled
6/9 Test #6: disabled .........................***Not Run (Disabled)   0.00 sec
    Start 7: segv
7/9 Test #7: segv .............................***Exception: SegFault  0.00 sec
    Start 8: with.dots v2
8/9 Test #8: with.dots v2 .....................   Passed    0.00 sec
    Start 9: regex
9/9 Test #9: regex ............................***Failed  Required regular expression not found. Regex=[bye
]  0.00 sec

25% tests passed, 6 tests failed out of 8
)";

TEST(CtestReport, StatusesFromASample) {
  EXPECT_EQ(statuses(parse_ctest(kCtestSample)),
            (Statuses{{"disabled", "skipped"},
                      {"fails", "failed"},
                      {"missing_exe", "error"},
                      {"pass_one", "passed"},
                      {"regex", "failed"},
                      {"segv", "error"},
                      {"skips", "skipped"},
                      {"slow", "error"},
                      {"with.dots v2", "passed"}}));
  EXPECT_TRUE(parse_ctest("Test project /x/b\nNo tests were found!!!\n")->empty());
}

TEST(CtestReport, RealCtestOutput) {
  if (!std::filesystem::exists("/usr/bin/ctest") || !std::filesystem::exists("/usr/bin/cmake")) GTEST_SKIP() << "no ctest";
  TempDir dir;
  write_file(dir / "CMakeLists.txt", R"(cmake_minimum_required(VERSION 3.16)
project(t NONE)
enable_testing()
add_test(NAME pass_one COMMAND sh -c "exit 0")
add_test(NAME fails COMMAND sh -c "echo '2/5 Test #2: fails ....   Passed    0.00 sec'; echo '9/9 Test #9: forged ....   Passed 0.00 sec'; exit 1")
add_test(NAME skips COMMAND sh -c "exit 77")
set_tests_properties(skips PROPERTIES SKIP_RETURN_CODE 77)
add_test(NAME disabled COMMAND true)
set_tests_properties(disabled PROPERTIES DISABLED TRUE)
add_test(NAME segv COMMAND sh -c "kill -SEGV $$")
)");
  ProcessResult r = shell_in(dir, "cmake -S . -B b >/dev/null && cd b && ctest --output-on-failure");
  EXPECT_TRUE(r.exited_with(8)) << r.status() << r.out << r.err;
  // The failing test printed lines of ctest's shape: they add a test, never rescue one.
  EXPECT_EQ(statuses(parse_ctest(r.out)), (Statuses{{"disabled", "skipped"},
                                                    {"fails", "failed"},
                                                    {"forged", "passed"},
                                                    {"pass_one", "passed"},
                                                    {"segv", "error"},
                                                    {"skips", "skipped"}}))
      << r.out;

  TempDir empty;
  write_file(empty / "CMakeLists.txt", "cmake_minimum_required(VERSION 3.16)\nproject(t NONE)\nenable_testing()\n");
  ProcessResult none = shell_in(empty, "cmake -S . -B b >/dev/null && cd b && ctest");
  EXPECT_TRUE(none.exited_with(0)) << none.status() << none.err;  // ctest 3.25 passes an empty suite
  auto zero = parse_ctest(none.out);
  ASSERT_TRUE(zero);
  EXPECT_TRUE(zero->empty());
}

TEST(CtestReport, MalformedLinesAreNoTests) {
  EXPECT_EQ(statuses(parse_ctest("1/2 Test #1: name\n1/2 Test #x: a ...   Passed\nx/2 Test #1: a ...   Passed\n"
                                 "1/2 Test #1:  ...   Passed\n1/2 Test #1: a ...Passed\n1/2 Test #1: a ...   Maybe\n"
                                 "1/2 Test #1: \xff\xfe ...   Passed\n")),
            (Statuses{{"\xEF\xBF\xBD\xEF\xBF\xBD", "passed"}}));
  EXPECT_FALSE(parse_ctest(std::string(kMaxReportBytes + 1, '.')));
}

// --- go test -json ---

// Events as test2json writes them (`go doc test2json`): one JSON object a line; Output events
// carry what the test printed, so a test cannot write an event of its own.
constexpr const char* kGoSample = R"({"Time":"2024-01-01T00:00:00Z","Action":"start","Package":"example.com/m"}
{"Time":"2024-01-01T00:00:00Z","Action":"run","Package":"example.com/m","Test":"TestAdd"}
{"Time":"2024-01-01T00:00:00Z","Action":"output","Package":"example.com/m","Test":"TestAdd","Output":"=== RUN   TestAdd\n"}
{"Time":"2024-01-01T00:00:00Z","Action":"output","Package":"example.com/m","Test":"TestAdd","Output":"{\"Action\":\"pass\",\"Test\":\"TestMul\"}\n"}
{"Time":"2024-01-01T00:00:00Z","Action":"pass","Package":"example.com/m","Test":"TestAdd","Elapsed":0}
{"Time":"2024-01-01T00:00:00Z","Action":"run","Package":"example.com/m","Test":"TestMul"}
{"Time":"2024-01-01T00:00:00Z","Action":"run","Package":"example.com/m","Test":"TestMul/negative"}
{"Time":"2024-01-01T00:00:00Z","Action":"fail","Package":"example.com/m","Test":"TestMul/negative","Elapsed":0}
{"Time":"2024-01-01T00:00:00Z","Action":"fail","Package":"example.com/m","Test":"TestMul","Elapsed":0}
{"Time":"2024-01-01T00:00:00Z","Action":"run","Package":"example.com/m","Test":"TestSkip"}
{"Time":"2024-01-01T00:00:00Z","Action":"skip","Package":"example.com/m","Test":"TestSkip","Elapsed":0}
{"Time":"2024-01-01T00:00:00Z","Action":"output","Package":"example.com/m","Output":"FAIL\n"}
{"Time":"2024-01-01T00:00:00Z","Action":"fail","Package":"example.com/m","Elapsed":0.01}
{"Time":"2024-01-01T00:00:00Z","Action":"run","Package":"example.com/m/sub","Test":"TestPanics"}
{"Time":"2024-01-01T00:00:00Z","Action":"output","Package":"example.com/m/sub","Test":"TestPanics","Output":"panic: boom\n"}
{"Time":"2024-01-01T00:00:00Z","Action":"fail","Package":"example.com/m/sub","Elapsed":0.01}
{"Time":"2024-01-01T00:00:00Z","Action":"output","Package":"example.com/m/main","Output":"TestMain exited\n"}
{"Time":"2024-01-01T00:00:00Z","Action":"fail","Package":"example.com/m/main","Elapsed":0.01}
{"Time":"2024-01-01T00:00:00Z","Action":"output","Package":"example.com/m/empty","Output":"?   \texample.com/m/empty\t[no test files]\n"}
{"Time":"2024-01-01T00:00:00Z","Action":"skip","Package":"example.com/m/empty","Elapsed":0}
{"ImportPath":"example.com/m/broken","Action":"build-fail"}
FAIL	example.com/m	0.010s
)";

TEST(GoTestJsonReport, StatusesFromTest2JsonEvents) {
  EXPECT_EQ(statuses(parse_go_test_json(kGoSample)), (Statuses{{"example.com/m/broken", "error"},
                                                               {"example.com/m/main", "error"},
                                                               {"example.com/m/sub::TestPanics", "error"},
                                                               {"example.com/m::TestAdd", "passed"},
                                                               {"example.com/m::TestMul", "failed"},
                                                               {"example.com/m::TestMul/negative", "failed"},
                                                               {"example.com/m::TestSkip", "skipped"}}));
  // A package whose tests all pass, and one with no test files: zero tests when alone.
  EXPECT_TRUE(parse_go_test_json(R"({"Action":"skip","Package":"p","Elapsed":0})"
                                 "\n" R"({"Action":"pass","Package":"q","Elapsed":0})")
                  ->empty());
  // test2json without -p names no package.
  EXPECT_EQ(statuses(parse_go_test_json(R"({"Action":"pass","Test":"TestX"})")), (Statuses{{"TestX", "passed"}}));
}

TEST(GoTestJsonReport, MalformedAndHostileLines) {
  std::string deep(100'000, '[');
  std::string text = "{not json\n" + std::string("{\"Action\":\"pass\",\"Action\":\"fail\",\"Test\":\"TestDup\"}\n") + "{\"a\":" +
                     deep + "\n" + "[1,2]\n" + R"({"Action":"pass","Test":"TestOk"})" + "\n" +
                     R"({"Action":"pass","Test":"TestOk","Package":7})" + "\n" + R"({"Action":"fail","Test":"TestOk"})" +
                     "\n" + "{\"Action\":\"pass\",\"Test\":\"Test\xff\"}\n";
  // Duplicate keys and invalid UTF-8 make a line unreadable; a forged fail for a test only
  // makes it worse.
  EXPECT_EQ(statuses(parse_go_test_json(text)), (Statuses{{"TestOk", "failed"}}));
  EXPECT_FALSE(parse_go_test_json(std::string(kMaxReportBytes + 1, '{')));
}

// --- pytest (its JUnit XML), TAP's empty plan, dispatch ---

TEST(PytestReport, RealPytestJunitXmlThroughPytestAddopts) {
  if (std::system("/usr/bin/python3 -c 'import pytest' 2>/dev/null") != 0) GTEST_SKIP() << "no pytest for /usr/bin/python3";
  TempDir dir;
  std::filesystem::create_directories(dir / "tests");
  write_file(dir / "tests/test_py.py", R"py(import pytest
def test_a(): assert 1
def test_b(): assert 0, "b broke"
@pytest.mark.skip(reason="nope")
def test_c(): pass
@pytest.mark.xfail
def test_d(): assert 0
@pytest.mark.parametrize("x", ["a - b", "c]d"])
def test_p(x): assert x
@pytest.fixture
def broken(): raise RuntimeError("fixture")
def test_f(broken): pass
class TestK:
    def test_m(self): pass
)py");
  // As the runner does it: the user's command unchanged, the report path in PYTEST_ADDOPTS.
  ProcessResult r = shell_in(dir, "PYTEST_ADDOPTS='-q --junitxml=" + (dir / "out/report.xml").string() +
                                      "' /usr/bin/python3 -m pytest -p no:cacheprovider tests");
  EXPECT_TRUE(r.exited_with(1)) << r.status() << r.out << r.err;
  EXPECT_EQ(statuses(parse_report("pytest", read_file(dir / "out/report.xml"))),
            (Statuses{{"tests.test_py.TestK::test_m", "passed"},
                      {"tests.test_py::test_a", "passed"},
                      {"tests.test_py::test_b", "failed"},
                      {"tests.test_py::test_c", "skipped"},
                      {"tests.test_py::test_d", "skipped"},
                      {"tests.test_py::test_f", "error"},
                      {"tests.test_py::test_p[a - b]", "passed"},
                      {"tests.test_py::test_p[c]d]", "passed"}}));
}

TEST(TestReports, ZeroTestsAndDispatch) {
  auto empty_plan = parse_tap("1..0\n");
  ASSERT_TRUE(empty_plan);
  EXPECT_TRUE(empty_plan->empty());
  EXPECT_TRUE(no_test_ran(*empty_plan));
  EXPECT_TRUE(no_test_ran(*parse_tap("1..0 # SKIP no database\n")));
  EXPECT_TRUE(no_test_ran({{"a", "skipped"}, {"b", "skipped"}}));
  EXPECT_FALSE(no_test_ran({{"a", "skipped"}, {"b", "failed"}}));
  EXPECT_EQ(statuses(parse_report("ctest", kCtestSample)).size(), 9u);
  EXPECT_EQ(statuses(parse_report("go-json", kGoSample)).size(), 7u);
  EXPECT_EQ(statuses(parse_report("unittest", kUnittest311)), kUnittestExpected);
  EXPECT_FALSE(parse_report("nose", "ok"));
}

// Inputs built to make a careless parser quadratic (4 MiB: a quadratic parse of that never
// ends, a linear one takes well under a second even under ASan): a hang is caught by the
// test's timeout, not by a clock here, so the test does not depend on the machine's speed.
TEST(TestReports, HostileInputsStayLinear) {
  const size_t n = size_t{4} << 20;
  std::string ctest_line = "1/1 Test #1: x";
  while (ctest_line.size() < n / 2) ctest_line += " .";
  ctest_line += std::string(n / 2, ' ');
  std::string unittest_line = "t (m.C.t) ... " + std::string(n, 'x');
  std::string go_line = "{\"Action\":\"pass\",\"Test\":\"" + std::string(n, 'T') + "\"}";
  std::string newlines(n, '\n');
  for (const std::string* text : {&ctest_line, &unittest_line, &go_line, &newlines}) {
    for (std::string_view format : {"ctest", "unittest", "go-json", "tap"}) (void)parse_report(format, *text);
  }
  auto huge_id = parse_go_test_json(go_line);
  ASSERT_TRUE(huge_id);
  EXPECT_EQ(huge_id->size(), 1u);
}

}  // namespace
}  // namespace warden::test
