// The policy check programs of policies/checks/, run for real: python3 on small fixture
// workspaces on the host (a positive and a negative case each, exact output), two of them
// inside the real bubblewrap sandbox as the kernel runs them (/warden/checks, the workspace
// as cwd), and every program of each example's policy on the example's trees, so a broken
// checker or a broken example fails here rather than in a golden run.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "kernel/blueprint.h"
#include "runner/sandbox.h"
#include "runner/sandbox_profile.h"
#include "runner/scratch_dir.h"
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

const std::vector<Program> kPythonInvariants = {{"no_import_cycles.py", {"--lang", "python"}},
                                                {"all_functions_have_tests.py", {"--lang", "python"}},
                                                {"type_hints_required.py", {}},
                                                {"no_dangerous_operations.py", {"--lang", "python"}},
                                                {"dependencies_satisfied.py", {"--lang", "python"}}};
const std::vector<Program> kCInvariants = {{"no_import_cycles.py", {"--lang", "c"}},
                                           {"all_functions_have_tests.py", {"--lang", "c"}},
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

TEST(AllFunctionsHaveTests, PythonPublicTopLevelFunctionsNeedAReference) {
  TempDir ws;
  write_file(ws / "src/calc/__init__.py", "");
  write_file(ws / "src/calc/ops.py",
             "def add(a, b): return a + b\ndef neg(a): return -a\ndef _private(): pass\n"
             "def untested(): pass\nclass C:\n    def method(self): pass\n");
  write_file(ws / "tests/test_ops.py",
             "import calc.ops\nfrom calc.ops import neg as negate\ndef test_add(): assert calc.ops.add(1, 2) == 3\n");
  expect_findings(check(ws.path(), "all_functions_have_tests.py", {"--lang", "python"}),
                  "src/calc/ops.py:4: function untested is not referenced by any test\n");
  write_file(ws / "tests/test_more.py", "from calc import ops\ndef test_untested(): ops.untested()\n");
  expect_proven(check(ws.path(), "all_functions_have_tests.py", {"--lang", "python"}));
}

TEST(AllFunctionsHaveTests, CNonStaticDefinitionsMustBeCalledFromTests) {
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
  expect_findings(check(ws.path(), "all_functions_have_tests.py", {"--lang", "c"}),
                  "src/m.c:11: function untested is not called from any test\n");
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
  for (const Program& p : kPythonInvariants) {
    SCOPED_TRACE(p.file);
    expect_proven(check(ws.path(), p.file, p.args));
  }
  ProcessResult tests = check(ws.path(), "run_tests.py");
  EXPECT_TRUE(tests.exited_with(0)) << tests.out << tests.err;
  EXPECT_NE(tests.out.find("1..9\n"), std::string::npos) << tests.out;
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
  for (const Program& p : kCInvariants) {
    SCOPED_TRACE(p.file);
    expect_proven(check(ws.path(), p.file, p.args));
  }
  ProcessResult tests = make_test(ws.path());
  EXPECT_TRUE(tests.exited_with(0)) << tests.out << tests.err;
  EXPECT_NE(tests.out.find("1..4\nok 1 - "), std::string::npos) << tests.out;
  EXPECT_EQ(tests.out.find("not ok"), std::string::npos) << tests.out;
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
