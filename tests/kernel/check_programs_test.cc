// The policy check programs of policies/checks/, run for real: python3 on small fixture
// workspaces on the host (a positive and a negative case each, exact output), two of them
// inside the real bubblewrap sandbox as the kernel runs them (/warden/checks, the workspace
// as cwd), and every program of each example's policy on the example's trees, so a broken
// checker or a broken example fails here rather than in a golden run.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "kernel/plan/blueprint.h"
#include "runner/check/report_channel.h"
#include "runner/sandbox/sandbox.h"
#include "runner/model/sandbox_profile.h"
#include "runner/sandbox/scratch_dir.h"
#include "tests/support/files.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace warden {
namespace {

namespace fs = std::filesystem;
using test::ProcessResult;
using test::TempDir;

const fs::path kSource = WARDEN_SOURCE_DIR;
const fs::path kChecks = kSource / "policies" / "checks";

// A fixture file, its folders made first.
void write_file(const fs::path& path, std::string_view bytes) {
  fs::create_directories(path.parent_path());
  test::write_file(path, bytes);
}

// Runs `program` with the workspace `dir` as the current directory, as the sandbox does; -B
// keeps the host run from leaving __pycache__ in the source tree.
ProcessResult check(const fs::path& dir, const std::string& program, const std::vector<std::string>& args = {}) {
  std::vector<std::string> argv = {"/usr/bin/env", "-C", dir.string(), "python3", "-B", (kChecks / program).string()};
  argv.insert(argv.end(), args.begin(), args.end());
  return test::run(argv);
}

void expect_proven(const ProcessResult& r) {
  EXPECT_TRUE(r.exited_with(0)) << r.status() << "\n" << r.out << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "");
}

void expect_findings(const ProcessResult& r, const std::string& findings) {
  EXPECT_TRUE(r.exited_with(1)) << r.status() << "\n" << r.out << r.err;
  EXPECT_EQ(r.out, findings);
  EXPECT_EQ(r.err, "");  // a finding, never a traceback
}

struct Program {
  std::string file;
  std::vector<std::string> args;
};

// The runner's passed-tests file (runner/check/passed_tests_input.h) for `ids`, as the "tests"
// check's, in a file that lives as long as the test program.
std::string tests_ran(const std::vector<std::string>& ids) {
  static TempDir dir;
  static int counter = 0;
  nlohmann::json list = ids;
  fs::path file = dir / ("ran-" + std::to_string(++counter) + ".json");
  test::write_file(file, nlohmann::json{{"checks", {{"tests", list}}}}.dump());
  return file.string();
}

// The ids a TAP stream reports as passed ("ok N - id", no directive).
std::vector<std::string> passed_ids(const std::string& tap) {
  std::vector<std::string> ids;
  for (const std::string& line : test::complete_lines(tap)) {
    if (!line.starts_with("ok ") || line.find(" # ") != std::string::npos) continue;
    auto dash = line.find(" - ");
    if (dash != std::string::npos) ids.push_back(line.substr(dash + 3));
  }
  return ids;
}

const std::string kNoTestsRan = tests_ran({});

// `args` with the tests-ran file replaced by `file`.
std::vector<std::string> with_tests_ran(std::vector<std::string> args, const std::string& file) {
  std::replace(args.begin(), args.end(), kNoTestsRan, file);
  return args;
}

const std::vector<Program> kPythonInvariants = {{"no_import_cycles.py", {"--lang", "python"}},
                                                {"all_functions_have_tests.py", {"--lang", "python", "--tests-ran", kNoTestsRan}},
                                                {"type_hints_required.py", {}},
                                                {"no_dangerous_operations.py", {"--lang", "python"}},
                                                {"dependencies_satisfied.py", {"--lang", "python"}}};
const std::vector<Program> kCInvariants = {{"no_import_cycles.py", {"--lang", "c"}},
                                           {"all_functions_have_tests.py", {"--lang", "c", "--tests-ran", kNoTestsRan}},
                                           {"no_dangerous_operations.py", {"--lang", "c"}},
                                           {"dependencies_satisfied.py", {"--lang", "c"}}};

TEST(CheckPrograms, EmptyWorkspaceIsProvenAndGitIsSkipped) {
  TempDir ws;
  write_file(ws / ".git/hooks/bad.py", "def broken(:\n");
  write_file(ws / ".git/x.c", "int f(void) { system(\"x\"); }\n");
  for (const auto& programs : {kPythonInvariants, kCInvariants}) {
    for (const Program& p : programs) {
      SCOPED_TRACE(p.file);
      expect_proven(check(ws.path(), p.file, p.args));
    }
  }
}

TEST(CheckPrograms, SourceThatDoesNotParseIsAFindingNotACrash) {
  TempDir ws;
  write_file(ws / "src/pkg/__init__.py", "");
  write_file(ws / "src/pkg/broken.py", "x = 1\ndef f(:\n    pass\n");
  for (const Program& p : kPythonInvariants) {
    SCOPED_TRACE(p.file);
    expect_findings(check(ws.path(), p.file, p.args), "src/pkg/broken.py:2: does not parse: invalid syntax\n");
  }
}

TEST(CheckPrograms, UsageErrorsExitTwo) {
  TempDir ws;
  EXPECT_TRUE(check(ws.path(), "no_import_cycles.py").exited_with(2));
  EXPECT_TRUE(check(ws.path(), "dependencies_satisfied.py", {"--lang", "cobol"}).exited_with(2));
  EXPECT_TRUE(check(ws.path(), "run_tests.py", {"--verbose"}).exited_with(2));
}

TEST(NoImportCycles, PythonCycleThroughAbsoluteFromAndRelativeImports) {
  TempDir ws;
  write_file(ws / "src/pkg/__init__.py", "");
  write_file(ws / "src/pkg/a.py", "import json\nfrom . import b\n");
  write_file(ws / "src/pkg/b.py", "from pkg.c import value\n");
  write_file(ws / "src/pkg/c.py", "import pkg.a\nvalue = 1\n");
  write_file(ws / "src/pkg/d.py", "from pkg import a\n");  // into the cycle, not part of it
  expect_findings(check(ws.path(), "no_import_cycles.py", {"--lang", "python"}),
                  "src/pkg/a.py:2: import cycle: pkg.a -> pkg.b -> pkg.c -> pkg.a\n");
}

TEST(NoImportCycles, PythonTypeCheckingImportsAndLayeredPackagesAreProven) {
  TempDir ws;
  write_file(ws / "src/pkg/__init__.py", "from pkg.core import run\n");
  write_file(ws / "src/pkg/core.py",
             "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.cli import main\ndef run(): pass\n");
  write_file(ws / "src/pkg/cli.py", "from pkg.core import run\n");
  write_file(ws / "tool.py", "import pkg.cli\n");
  expect_proven(check(ws.path(), "no_import_cycles.py", {"--lang", "python"}));
}

TEST(NoImportCycles, CQuotedIncludeCycleIgnoringCommentsAndAngleIncludes) {
  TempDir ws;
  write_file(ws / "include/a.h", "#include <stdio.h>\n#include \"b.h\"\n");
  write_file(ws / "include/b.h", "// #include \"c.h\"\n#include \"../src/c.h\"\n");
  write_file(ws / "src/c.h", "#include \"a.h\"\n");  // found through include/
  write_file(ws / "src/main.c", "#include \"c.h\"\n");
  expect_findings(check(ws.path(), "no_import_cycles.py", {"--lang", "c"}),
                  "include/a.h:2: import cycle: include/a.h -> include/b.h -> src/c.h -> include/a.h\n");
  write_file(ws / "src/c.h", "/* #include \"a.h\" */\n");
  expect_proven(check(ws.path(), "no_import_cycles.py", {"--lang", "c"}));
}

TEST(AllFunctionsHaveTests, PythonPublicTopLevelFunctionsNeedAReferenceFromATestThatRan) {
  TempDir ws;
  write_file(ws / "src/calc/__init__.py", "");
  write_file(ws / "src/calc/ops.py",
             "def add(a, b): return a + b\ndef neg(a): return -a\ndef _private(): pass\n"
             "def untested(): pass\ndef triple(a): return a * 4\nclass C:\n    def method(self): pass\n");
  // Merely called from files that look like tests: none of it counts.
  write_file(ws / "src/calc/conftest.py", "from calc.ops import triple\ntriple(1)\n");
  write_file(ws / "tests/test_ops.py",
             "import unittest\nimport calc.ops\nfrom calc.ops import neg as negate\nfrom calc.ops import untested\n"
             "def test_add(): assert calc.ops.add(1, 2) == 3\n"
             "class TestNeg(unittest.TestCase):\n    def test_neg(self): self.assertEqual(negate(1), -1)\n"
             "class TestMore(TestNeg):\n    pass\n"
             "def helper(): calc.ops.triple(2)\n");
  auto all = [&](const std::vector<std::string>& ids) {
    return check(ws.path(), "all_functions_have_tests.py", {"--lang", "python", "--tests-ran", tests_ran(ids)});
  };
  expect_findings(all({"tests/test_ops.py::test_add", "tests/test_ops.py::TestMore::test_neg"}),
                  "src/calc/ops.py:4: function untested is not referenced by any test that ran\n"
                  "src/calc/ops.py:5: function triple is not referenced by any test that ran\n");
  // Imported by a file whose tests did not run (or failed): not referenced.
  expect_findings(all({"tests/test_ops.py::test_add", "tests/test_other.py::test_neg"}),
                  "src/calc/ops.py:2: function neg is not referenced by any test that ran\n"
                  "src/calc/ops.py:4: function untested is not referenced by any test that ran\n"
                  "src/calc/ops.py:5: function triple is not referenced by any test that ran\n");
  write_file(ws / "tests/test_more.py",
             "from calc import ops\nclass TestTriple:\n    def test_triple(self): assert ops.triple(1) == 3\n"
             "def test_untested(): ops.untested()\n");
  expect_proven(all({"tests/test_ops.py::test_add", "tests/test_ops.py::TestNeg::test_neg",
                     "tests/test_more.py::TestTriple::test_triple", "tests/test_more.py::test_untested"}));
}

TEST(AllFunctionsHaveTests, WithoutTheTestsThatRanItIsAUsageError) {
  TempDir ws;
  write_file(ws / "src/m.py", "def f(): pass\n");
  ProcessResult r = check(ws.path(), "all_functions_have_tests.py", {"--lang", "python"});
  EXPECT_TRUE(r.exited_with(2)) << r.status();
  EXPECT_NE(r.err.find("needs the ids of the tests that ran"), std::string::npos) << r.err;
  write_file(ws / "ran.json", "{\"checks\": 3}");
  ProcessResult bad = check(ws.path(), "all_functions_have_tests.py", {"--lang", "python", "--tests-ran", (ws / "ran.json").string()});
  EXPECT_TRUE(bad.exited_with(2)) << bad.status();
  EXPECT_NE(bad.err.find("unreadable list of tests that ran"), std::string::npos) << bad.err;
}

TEST(AllFunctionsHaveTests, CNonStaticDefinitionsMustBeCalledFromTestsOnceATestPassed) {
  TempDir ws;
  write_file(ws / "src/m.c",
             "#include <stdio.h>\n"
             "#define MACRO(a) \\\n  fake(a) {\n"
             "static int helper(int a) { return a; }\n"
             "int add(int a, int b) { return helper(a) + b; } /* int commented(void) { } */\n"
             "const char *name(void)\n{\n  return \"int in_string(void) {\";\n}\n"
             "int declared_only(int);\n"
             "void untested(void) {}\n");
  write_file(ws / "tests/t.c", "int main(void) { add(1, 2); name(); /* untested(); */ return 0; }\n");
  expect_findings(check(ws.path(), "all_functions_have_tests.py", {"--lang", "c", "--tests-ran", tests_ran({"empty_after_init"})}),
                  "src/m.c:11: function untested is not called from any test that ran\n");
  // No test passed: no call counts.
  expect_findings(check(ws.path(), "all_functions_have_tests.py", {"--lang", "c", "--tests-ran", kNoTestsRan}),
                  "src/m.c:5: function add is not called from any test that ran\n"
                  "src/m.c:6: function name is not called from any test that ran\n"
                  "src/m.c:11: function untested is not called from any test that ran\n");
}

TEST(TypeHintsRequired, EveryParameterAndReturnOutsideTests) {
  TempDir ws;
  write_file(ws / "src/m.py",
             "def ok(a: int, *args: str, k: int = 1, **kw: object) -> None: pass\n"
             "def bad(a, b: int):\n    def inner(x: int): pass\n"
             "class C:\n    def __init__(self, v: int) -> None: pass\n"
             "    @classmethod\n    def make(cls) -> 'C': pass\n"
             "    async def run(self, *rest) -> None: pass\n");
  write_file(ws / "tests/test_m.py", "def test_x(fixture): pass\n");
  expect_findings(check(ws.path(), "type_hints_required.py"),
                  "src/m.py:2: function bad: no return type hint\n"
                  "src/m.py:2: function bad: parameter(s) without a type hint: a\n"
                  "src/m.py:3: function inner: no return type hint\n"
                  "src/m.py:8: function run: parameter(s) without a type hint: *rest\n");
}

TEST(NoDangerousOperations, PythonCallsThroughAliasesShellAndUnsafeLoaders) {
  TempDir ws;
  write_file(ws / "src/m.py",
             "import os as o, subprocess, yaml\nfrom pickle import loads as L\n"
             "def f(x: str) -> None:\n"
             "    eval(x)\n"
             "    o.execvp('a', [])\n"
             "    subprocess.run('ls', shell=True)\n"
             "    subprocess.run(['ls'], shell=False)\n"
             "    L(b'')\n"
             "    yaml.load(x)\n"
             "    yaml.load(x, Loader=yaml.SafeLoader)\n"
             "    print('eval(x) in a string is fine')\n");
  expect_findings(check(ws.path(), "no_dangerous_operations.py", {"--lang", "python"}),
                  "src/m.py:4: dangerous operation: eval()\n"
                  "src/m.py:5: dangerous operation: os.execvp()\n"
                  "src/m.py:6: dangerous operation: subprocess.run() with shell=True\n"
                  "src/m.py:8: dangerous operation: pickle.loads()\n"
                  "src/m.py:9: dangerous operation: yaml.load() without Loader=SafeLoader\n");
}

TEST(NoDangerousOperations, CSkipsCommentsLiteralsAndMemberCalls) {
  TempDir ws;
  write_file(ws / "src/d.c",
             "int f(char *d, const char *s) {\n"
             "  strcpy(d, s); /* system(\"x\") */\n"
             "  puts(\"gets(x)\"); p->gets(); c = '\\''; // popen(\n"
             "  __asm__(\"nop\");\n"
             "  return sprintf (d, \"%s\", s);\n}\n");
  write_file(ws / "src/safe.c", "int g(char *d) { return snprintf(d, 4, \"system(x)\"); }\n");
  expect_findings(check(ws.path(), "no_dangerous_operations.py", {"--lang", "c"}),
                  "src/d.c:2: dangerous operation: strcpy()\n"
                  "src/d.c:4: dangerous operation: __asm__ block\n"
                  "src/d.c:5: dangerous operation: sprintf()\n");
}

TEST(DependenciesSatisfied, PythonStdlibWorkspaceAndDeclaredDistributions) {
  TempDir ws;
  write_file(ws / "requirements.txt", "requests>=2.0  # http\n-r requirements-dev.txt\n");
  write_file(ws / "requirements-dev.txt", "PyYAML==6.0\n");
  write_file(ws / "pyproject.toml", "[project]\nname = \"x\"\ndependencies = [\"Typing_Extensions>=4\"]\n");
  write_file(ws / "src/app/__init__.py", "");
  write_file(ws / "tests/helper.py", "");
  write_file(ws / "tests/test_app.py",
             "import json, app, helper, requests, yaml, typing_extensions\n"
             "from os import path\nfrom . import sibling\n"
             "try:\n    import ujson\nexcept ImportError:\n    ujson = None\n"
             "import numpy.linalg\n");
  expect_findings(check(ws.path(), "dependencies_satisfied.py", {"--lang", "python"}),
                  "tests/test_app.py:8: import numpy.linalg: not in the standard library, the workspace or the "
                  "declared dependencies\n");
}

TEST(DependenciesSatisfied, CQuotedInWorkspaceAngleInSystemHeaders) {
  TempDir ws;
  write_file(ws / "src/m.h", "");
  write_file(ws / "include/lib/api.h", "");
  write_file(ws / "src/m.c",
             "#include <stdio.h>\n#include \"m.h\"\n#include <lib/api.h>\n#include \"stdlib.h\"\n"
             "#include <no_such_header_anywhere.h>\n#include \"missing.h\"\n// #include \"commented.h\"\n");
  expect_findings(check(ws.path(), "dependencies_satisfied.py", {"--lang", "c"}),
                  "src/m.c:5: #include <no_such_header_anywhere.h>: not found in the workspace or the system headers\n"
                  "src/m.c:6: #include \"missing.h\": not found in the workspace or the system headers\n");
}

TEST(RunTests, TapWithDiagnosticsAndNoHostPaths) {
  TempDir ws;
  write_file(ws / "src/lib.py", "def two() -> int:\n    return 2\n");
  write_file(ws / "tests/test_b.py",
             "from lib import two\nimport helper\n"
             "def test_z(): assert two() == 2\n"
             "def test_a(): print('noise'); assert two() == 3, 'two is not three'\n"
             "def helper_fn(): raise RuntimeError\n");
  write_file(ws / "tests/helper.py", "");
  write_file(ws / "tests/test_a.py", "import not_there\n");
  ProcessResult r = check(ws.path(), "run_tests.py");
  EXPECT_TRUE(r.exited_with(1)) << r.status() << r.err;
  EXPECT_EQ(r.out,
            "TAP version 13\n1..3\n"
            "not ok 1 - tests/test_a.py::<import>\n"
            "  ---\n  exception: ModuleNotFoundError\n  message: \"No module named 'not_there'\"\n"
            "  at: \"tests/test_a.py:1\"\n  ...\n"
            "ok 2 - tests/test_b.py::test_z\n"
            "not ok 3 - tests/test_b.py::test_a\n"
            "  ---\n  exception: AssertionError\n  message: \"two is not three\"\n"
            "  at: \"tests/test_b.py:4\"\n  ...\n");
  EXPECT_EQ(r.err, "noise\n");
  EXPECT_FALSE(fs::exists(ws / "tests/__pycache__"));  // the tree under judgement is left as found

  TempDir empty;
  ProcessResult none = check(empty.path(), "run_tests.py");
  EXPECT_TRUE(none.exited_with(0)) << none.status() << none.err;
  EXPECT_EQ(none.out, "TAP version 13\n1..0\n");
}

TEST(RunTests, UnittestAndPytestStyleTestsAlikeDeterministically) {
  TempDir ws;
  write_file(ws / "mathlib/__init__.py", "");
  write_file(ws / "mathlib/ops.py", "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n");
  write_file(ws / "tests/__init__.py", "");
  write_file(ws / "tests/test_ops.py",
             "import unittest\nfrom mathlib.ops import add, mul\n\n"
             "class TestOps(unittest.TestCase):\n"
             "    @classmethod\n    def setUpClass(cls):\n        cls.two = 2\n"
             "    def setUp(self):\n        self.three = 3\n"
             "    def test_mul(self):\n        self.assertEqual(mul(self.three, self.two), 6)\n"
             "    def test_add(self):\n        self.assertEqual(add(1, 2), 3)\n"
             "    @unittest.skip('not yet')\n    def test_later(self):\n        self.fail()\n"
             "    @unittest.expectedFailure\n    def test_known_bug(self):\n        self.assertEqual(mul(2, 2), 5)\n"
             "    def test_each(self):\n        for i in range(3):\n            with self.subTest(i=i):\n"
             "                self.assertLess(i, 2)\n\n"
             "class TestNoDb(unittest.TestCase):\n"
             "    @classmethod\n    def setUpClass(cls):\n        raise RuntimeError('no database')\n"
             "    def test_query(self):\n        pass\n\n"
             "def test_plain():\n    assert add(2, 2) == 4\n\n"
             "def test_needs_fixture(tmp_path):\n    pass\n\n"
             "class TestPytestStyle:\n"
             "    def setup_method(self, method):\n        self.value = 1\n"
             "    def test_one(self):\n        assert self.value == 1\n"
             "    def test_two(self):\n        assert self.value == 2, 'value is not two'\n");
  ProcessResult r = check(ws.path(), "run_tests.py");
  EXPECT_TRUE(r.exited_with(1)) << r.status() << r.err;
  EXPECT_EQ(r.out,
            "TAP version 13\n1..11\n"
            "ok 1 - tests/test_ops.py::TestOps::test_add\n"
            "not ok 2 - tests/test_ops.py::TestOps::test_each\n"
            "  ---\n  exception: AssertionError\n  message: \"2 not less than 2\"\n"
            "  at: \"tests/test_ops.py:23\"\n  subtest: \"(i=2)\"\n  ...\n"
            "not ok 3 - tests/test_ops.py::TestOps::test_known_bug # TODO expected failure\n"
            "ok 4 - tests/test_ops.py::TestOps::test_later # SKIP not yet\n"
            "ok 5 - tests/test_ops.py::TestOps::test_mul\n"
            "not ok 6 - tests/test_ops.py::TestNoDb::test_query\n"
            "  ---\n  exception: NotRun\n  message: \"did not run\"\n  ...\n"
            "ok 7 - tests/test_ops.py::test_plain\n"
            "not ok 8 - tests/test_ops.py::test_needs_fixture\n"
            "  ---\n  exception: NotImplementedError\n"
            "  message: \"pytest fixtures are not supported (needs tmp_path)\"\n  ...\n"
            "ok 9 - tests/test_ops.py::TestPytestStyle::test_one\n"
            "not ok 10 - tests/test_ops.py::TestPytestStyle::test_two\n"
            "  ---\n  exception: AssertionError\n  message: \"value is not two\"\n"
            "  at: \"tests/test_ops.py:44\"\n  ...\n"
            "not ok 11 - tests/test_ops.py::TestNoDb::<setUpClass>\n"
            "  ---\n  exception: RuntimeError\n  message: \"no database\"\n"
            "  at: \"tests/test_ops.py:28\"\n  ...\n");
  EXPECT_EQ(check(ws.path(), "run_tests.py").out, r.out) << "same tree, same bytes";
}

TEST(RunTests, APatchedFrameworkLeavesItsTestsFailedAsNotRun) {
  TempDir ws;
  write_file(ws / "tests/__init__.py", "");
  write_file(ws / "tests/test_a.py",
             "import unittest\nunittest.TestCase.run = lambda self, result=None: None\n"
             "class TestA(unittest.TestCase):\n    def test_broken(self):\n        self.fail('broken')\n");
  ProcessResult r = check(ws.path(), "run_tests.py");
  EXPECT_TRUE(r.exited_with(1)) << r.status() << r.err;
  EXPECT_EQ(r.out, "TAP version 13\n1..1\nnot ok 1 - tests/test_a.py::TestA::test_broken\n"
                   "  ---\n  exception: NotRun\n  message: \"did not run\"\n  ...\n");
}

// run_tests.py on the report channel as the runner hands it over: the nonce on a pipe, the
// report on a memfd. Its MAC verifies with the runner's own verify_report(); a module that
// prints a passing stream and exits at import time leaves nothing the runner accepts.
ProcessResult run_tests_on_channel(const fs::path& ws) {
  const std::string driver =
      "import os, subprocess, sys\n"
      "r, w = os.pipe()\nos.write(w, bytes(range(32)))\nos.close(w)\n"
      "report = os.memfd_create('report', 0)\n"
      "env = {'PATH': '/usr/bin:/bin', 'WARDEN_NONCE_FD': str(r), 'WARDEN_REPORT_FD': str(report)}\n"
      "subprocess.run([sys.executable, '-B', sys.argv[1]], env=env, pass_fds=(r, report), stdout=subprocess.DEVNULL)\n"
      "os.lseek(report, 0, 0)\n"
      "sys.stdout.buffer.write(os.read(report, 1 << 20))\n";
  return test::run({"/usr/bin/env", "-C", ws.string(), "python3", "-B", "-c", driver, (kChecks / "run_tests.py").string()});
}

TEST(RunTests, ReportsOnTheAuthenticatedChannelAndAForgerAtImportLeavesNoReport) {
  ReportNonce nonce{};
  for (size_t i = 0; i < nonce.size(); ++i) nonce[i] = static_cast<uint8_t>(i);
  TempDir ws;
  write_file(ws / "src/ops.py", "def add(a, b):\n    return a + b\n");
  write_file(ws / "tests/test_ops.py", "import ops\n\ndef test_add():\n    assert ops.add(2, 3) == 5\n");
  ProcessResult honest = run_tests_on_channel(ws.path());
  ASSERT_TRUE(honest.exited_with(0)) << honest.status() << honest.err;
  ChannelReport verified = verify_report(honest.out, nonce);
  EXPECT_EQ(verified.status, ChannelReport::Status::authenticated) << verified.detail << honest.out;
  EXPECT_EQ(verified.body, "TAP version 13\n1..1\nok 1 - tests/test_ops.py::test_add\n");

  write_file(ws / "src/ops.py",
             "import os\nos.write(1, b'TAP version 13\\n1..1\\nok 1 - tests/test_ops.py::test_add\\n')\nos._exit(0)\n"
             "def add(a, b):\n    return a - b\n");
  ProcessResult forged = run_tests_on_channel(ws.path());
  ASSERT_TRUE(forged.exited_with(0)) << forged.status() << forged.err;
  EXPECT_EQ(forged.out, "");
  EXPECT_EQ(verify_report(forged.out, nonce).status, ChannelReport::Status::missing);
}

// The programs as the kernel runs them: files under /warden/checks in the default profile,
// the workspace bound read-write as the current directory, python3 from the host's /usr.
TEST(CheckProgramsInSandbox, RunFromWardenChecksWithTheWorkspaceAsCwd) {
  SandboxHost host = SandboxHost::detect();
  auto scratch = ScratchDir::create("/tmp", "warden-checks-test-", 0711);
  ASSERT_TRUE(scratch) << scratch.error().message;
  fs::path ws = scratch->path() / "ws";
  ASSERT_TRUE(make_owned_dir(ws, host.uid, host.gid));
  write_file(ws / "src/m.py", "import subprocess\n\ndef f(cmd: str) -> None:\n    subprocess.call(cmd, shell=True)\n");
  write_file(ws / "tests/test_m.py", "import m\n\ndef test_f():\n    assert m.f\n");

  auto profile = SandboxProfile::load("default");
  ASSERT_TRUE(profile) << profile.error().message;
  for (const char* name : {"checklib.py", "no_dangerous_operations.py", "run_tests.py"}) {
    profile->files.push_back({"/warden/checks/" + std::string(name), test::read_file(kChecks / name)});
  }
  auto sandbox = Sandbox::create(*profile, host);
  ASSERT_TRUE(sandbox) << sandbox.error().message;

  SandboxRequest scan;
  scan.argv = {"python3", "/warden/checks/no_dangerous_operations.py", "--lang", "python"};
  scan.workspace_dir = ws;
  auto found = sandbox->run(scan);
  ASSERT_TRUE(found) << found.error().message;
  EXPECT_EQ(found->exit_code, 1) << found->err.kept;
  EXPECT_EQ(found->out.kept, "src/m.py:4: dangerous operation: subprocess.call() with shell=True\n");

  SandboxRequest tests = scan;
  tests.argv = {"python3", "/warden/checks/run_tests.py"};
  auto ran = sandbox->run(tests);
  ASSERT_TRUE(ran) << ran.error().message;
  EXPECT_EQ(ran->exit_code, 0) << ran->err.kept;
  EXPECT_EQ(ran->out.kept, "TAP version 13\n1..1\nok 1 - tests/test_m.py::test_f\n");
  EXPECT_FALSE(fs::exists(ws / "tests/__pycache__"));
}

// An example's tree after its blueprint's steps: the seed with every entry's final content
// (or, for `draft_of`, that entry's first draft instead) on top.
void write_example_tree(const std::string& example, const fs::path& to, const std::string& draft_of = {}) {
  fs::path dir = kSource / "examples" / example;
  auto spec = kernel::BlueprintSpec::load((dir / "blueprint.json").string());
  ASSERT_TRUE(spec) << spec.error().message;
  ASSERT_TRUE(spec->seed);
  test::copy_tree(dir / *spec->seed, to);
  bool drafted = draft_of.empty();
  auto put = [&](const std::string& path, const std::string& content, const std::vector<std::string>& drafts) {
    bool use_draft = path == draft_of && !drafts.empty();
    drafted |= use_draft;
    write_file(to / path, use_draft ? drafts.front() : content);
  };
  for (const auto& m : spec->modules) put(m.path, m.content, m.drafts);
  for (const auto& f : spec->functions) put(f.path, f.content, f.drafts);
  for (const auto& t : spec->tests) put(t.path, t.content, t.drafts);
  for (const auto& c : spec->changes) put(c.path, c.content, c.drafts);
  ASSERT_TRUE(drafted) << draft_of << " has no draft in " << example;
}

TEST(ExampleTrees, CalculatorProvesEveryPythonInvariantAndPassesItsTests) {
  TempDir ws;
  ASSERT_NO_FATAL_FAILURE(write_example_tree("calculator", ws.path()));
  ProcessResult tests = check(ws.path(), "run_tests.py");
  EXPECT_TRUE(tests.exited_with(0)) << tests.out << tests.err;
  EXPECT_NE(tests.out.find("1..9\n"), std::string::npos) << tests.out;
  const std::string ran = tests_ran(passed_ids(tests.out));
  for (const Program& p : kPythonInvariants) {
    SCOPED_TRACE(p.file);
    expect_proven(check(ws.path(), p.file, with_tests_ran(p.args, ran)));
  }
}

TEST(ExampleTrees, CalculatorFirstDraftOfParseIsRefusedAsDangerous) {
  TempDir ws;
  ASSERT_NO_FATAL_FAILURE(write_example_tree("calculator", ws.path(), "src/calculator/parse.py"));
  expect_findings(check(ws.path(), "no_dangerous_operations.py", {"--lang", "python"}),
                  "src/calculator/parse.py:5: dangerous operation: eval()\n");
}

ProcessResult make_test(const fs::path& dir) { return test::run({"/usr/bin/make", "-s", "-C", dir.string(), "test"}); }

TEST(ExampleTrees, RingbufProvesEveryCInvariantAndPassesItsTests) {
  TempDir ws;
  ASSERT_NO_FATAL_FAILURE(write_example_tree("ringbuf", ws.path()));
  ProcessResult tests = make_test(ws.path());
  EXPECT_TRUE(tests.exited_with(0)) << tests.out << tests.err;
  EXPECT_NE(tests.out.find("1..4\nok 1 - "), std::string::npos) << tests.out;
  EXPECT_EQ(tests.out.find("not ok"), std::string::npos) << tests.out;
  const std::string ran = tests_ran(passed_ids(tests.out));
  for (const Program& p : kCInvariants) {
    SCOPED_TRACE(p.file);
    expect_proven(check(ws.path(), p.file, with_tests_ran(p.args, ran)));
  }
}

TEST(ExampleTrees, RingbufFirstDraftOfTheTestFails) {
  TempDir ws;
  ASSERT_NO_FATAL_FAILURE(write_example_tree("ringbuf", ws.path(), "tests/test_ringbuf.c"));
  ProcessResult tests = make_test(ws.path());
  EXPECT_FALSE(tests.exited_with(0)) << tests.out;
  EXPECT_NE(tests.out.find("not ok 2 - holds_capacity_bytes\n"), std::string::npos) << tests.out;
}

}  // namespace
}  // namespace warden
