// Cheats that leave every oracle file as it was and still try to make the base's tests pass
// on broken code, through the real `warden propose`: a new test file that replaces the
// function under test at import, a new test folder that shadows the package under test, the
// code under test patching unittest, a C library constructor printing a passing TAP stream,
// and a Makefile include that redefines the test target. Each is refused; the ledger replays.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <string>

#include "tests/kernel/build_fixture.h"

namespace warden::test {
namespace {

constexpr const char* kUnittest = "python3 -B -m unittest discover -s tests -t . -v";
constexpr const char* kOps = "def add(a: int, b: int) -> int:\n    return a + b\n\n\ndef mul(a: int, b: int) -> int:\n    return a * b\n";
constexpr const char* kBrokenOps = "def add(a: int, b: int) -> int:\n    return a + b\n\n\ndef mul(a: int, b: int) -> int:\n    return a + b\n";

class OracleAttack : public ::testing::Test {
 protected:
  void python_project() {
    repo.write("mathlib/__init__.py", "");
    repo.write("mathlib/ops.py", kOps);
    repo.write("tests/__init__.py", "");
    repo.write("tests/test_ops.py",
               "import unittest\n\nfrom mathlib.ops import add, mul\n\n\nclass TestOps(unittest.TestCase):\n"
               "    def test_add(self) -> None:\n        self.assertEqual(add(2, 3), 5)\n\n"
               "    def test_mul(self) -> None:\n        self.assertEqual(mul(3, 4), 12)\n");
    base = repo.commit_all("base");
  }

  // Proposes `files` over the base; the verdict's reason codes (empty when accepted).
  std::vector<std::string> propose(const std::string& name, const std::map<std::string, std::string>& files,
                                   std::vector<std::string> args) {
    for (const auto& [path, content] : files) repo.write(path, content);
    std::filesystem::path patch = repo.scratch(name + ".patch");
    write_file(patch, repo.staged_patch());
    repo.reset_hard(base);
    std::vector<std::string> argv = {"propose", patch.string(), "--repo", repo.repo().string(), "--base", base, "--branch",
                                     "attack/" + name, "--json"};
    argv.insert(argv.end(), args.begin(), args.end());
    auto r = warden(argv);
    EXPECT_TRUE(r.exited_with(0) || r.exited_with(1)) << describe(r);
    std::vector<std::string> codes;
    if (r.out.empty()) return codes;
    json j = stdout_json(r);
    for (const auto& reason : j["refusal"]["reasons"]) codes.push_back(reason["code"]);
    last = j["refusal"].dump();
    return codes;
  }

  void expect_replays() {
    auto r = warden({"replay", (repo.repo() / ".git" / "warden-ledger").string()});
    EXPECT_TRUE(r.exited_with(0)) << describe(r);
  }

  GitRepoFixture repo;
  std::string base;
  std::string last;
};

TEST_F(OracleAttack, ANewTestFileThatReplacesTheFunctionAtImportIsRefused) {
  python_project();
  auto codes = propose("patch-at-import",
                       {{"mathlib/ops.py", kBrokenOps},
                        {"tests/test_aaa_setup.py",
                         "import mathlib.ops as _m\n\n_m.mul = lambda a, b: a * b\n\n\ndef test_nothing() -> None:\n    pass\n"}},
                       {"--check", kUnittest});
  EXPECT_TRUE(has_code(codes, "pass_to_pass_failed")) << last;
  EXPECT_NE(last.find("run with the base's test files"), std::string::npos) << last;
  // A real fix with a real new test is accepted: the base's tests pass without it too.
  EXPECT_TRUE(propose("fix-with-test", {{"mathlib/ops.py", kOps + std::string("\n\ndef neg(a: int) -> int:\n    return -a\n")},
                                        {"tests/test_neg.py",
                                         "import unittest\n\nfrom mathlib.ops import neg\n\n\nclass TestNeg(unittest.TestCase):\n"
                                         "    def test_neg(self) -> None:\n        self.assertEqual(neg(2), -2)\n"}},
                      {"--check", kUnittest})
                  .empty())
      << last;
  expect_replays();
}

TEST_F(OracleAttack, ANewTestFolderShadowingThePackageIsRefused) {
  python_project();
  auto codes = propose("shadow", {{"mathlib/ops.py", kBrokenOps}, {"tests/mathlib/__init__.py", ""}, {"tests/mathlib/ops.py", kOps}},
                       {"--policy", "python"});
  EXPECT_TRUE(has_code(codes, "pass_to_pass_failed")) << last;
  expect_replays();
}

TEST_F(OracleAttack, CodeUnderTestPatchingUnittestIsRefused) {
  python_project();
  auto codes = propose("patch-unittest",
                       {{"mathlib/ops.py", kBrokenOps},
                        {"mathlib/__init__.py",
                         "import unittest as _u\n\n_u.TestCase.assertEqual = lambda self, first, second, msg=None: None\n"}},
                       {"--check", kUnittest});
  EXPECT_TRUE(has_code(codes, "dangerous_operation_detected")) << last;
  EXPECT_NE(last.find("py.patch_test_framework"), std::string::npos) << last;
}

TEST_F(OracleAttack, AModuleShadowingTheTestRunnerIsRefused) {
  python_project();
  // `python -m unittest` puts the working directory first on sys.path.
  auto codes = propose("shadow-unittest",
                       {{"mathlib/ops.py", kBrokenOps},
                        {"unittest.py", "import sys\nsys.path.pop(0)\ndel sys.modules['unittest']\nfrom unittest import *\n"}},
                       {"--check", kUnittest});
  EXPECT_TRUE(has_code(codes, "protected_path")) << last;
  EXPECT_NE(last.find("unittest.py is a test-runner hook"), std::string::npos) << last;
}

TEST_F(OracleAttack, ATestRenamedInIsRefused) {
  python_project();
  std::string notes;
  for (int i = 0; i < 12; ++i) notes += "note_" + std::to_string(i) + " = " + std::to_string(i) + "\n";
  repo.write("NOTES.py", notes);
  base = repo.commit_all("notes");
  repo.git({"mv", "NOTES.py", "tests/test_zz.py"});
  repo.write("tests/test_zz.py", notes + "import unittest\nunittest.TestCase.run = lambda self, result=None: None\n");
  repo.write("mathlib/ops.py", kBrokenOps);
  auto codes = propose("rename-in", {}, {"--check", kUnittest});
  EXPECT_TRUE(has_code(codes, "protected_path")) << last;
  EXPECT_NE(last.find("renamed from NOTES.py"), std::string::npos) << last;
}

TEST_F(OracleAttack, ACLibraryConstructorPrintingAPassingReportIsRefused) {
  repo.write("Makefile",
             "test: test_ops\n\t./test_ops\n\ntest_ops: tests/test_ops.c src/ops.c\n\tcc -Isrc -o $@ $^\n\n.PHONY: test\n");
  repo.write("src/ops.h", "int mul(int a, int b);\n");
  repo.write("src/ops.c", "#include \"ops.h\"\nint mul(int a, int b) { return a * b; }\n");
  repo.write("tests/test_ops.c",
             "#include <stdio.h>\n#include \"ops.h\"\nint main(void) {\n  int ok = mul(3, 4) == 12;\n"
             "  printf(\"1..1\\n%s 1 - mul\\n\", ok ? \"ok\" : \"not ok\");\n  return ok ? 0 : 1;\n}\n");
  base = repo.commit_all("base");
  auto codes = propose("constructor",
                       {{"src/ops.c",
                         "#include <stdio.h>\n#include <unistd.h>\n#include \"ops.h\"\nint mul(int a, int b) { return a + b; }\n"
                         "__attribute__((constructor)) static void report(void) {\n  fputs(\"1..1\\nok 1 - mul\\n\", stdout);\n"
                         "  fflush(stdout);\n  _exit(0);\n}\n"}},
                       {"--policy", "cpp"});
  EXPECT_TRUE(has_code(codes, "dangerous_operation_detected")) << last;
  EXPECT_NE(last.find("c.constructor"), std::string::npos) << last;

  // A C++ static object's constructor does the same without any attribute: ending the process
  // from library code is refused where a change introduces it.
  codes = propose("static-object",
                  {{"src/ops.c",
                    "#include <stdio.h>\n#include <stdlib.h>\n#include \"ops.h\"\nint mul(int a, int b) { return a + b; }\n"
                    "static void report(void) { fputs(\"1..1\\nok 1 - mul\\n\", stdout); exit(0); }\n"}},
                  {"--policy", "cpp"});
  EXPECT_TRUE(has_code(codes, "dangerous_operation_detected")) << last;
  EXPECT_NE(last.find("c.exit_process"), std::string::npos) << last;

  // An include line that brings in another test target is a change to the test section.
  codes = propose("include", {{"Makefile", "-include local.mk\n" + repo.read("Makefile")}, {"local.mk", "test:\n\t@echo ok 1\n"}},
                  {"--policy", "cpp"});
  EXPECT_TRUE(has_code(codes, "protected_path")) << last;
  EXPECT_NE(last.find("included makefiles"), std::string::npos) << last;
}

}  // namespace
}  // namespace warden::test
