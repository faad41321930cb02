// The oracle comes from the base, end to end: the real `warden propose` on real git
// repositories, the checks run in the real sandbox. Each cheat an agent might use to pass a
// broken change — delete the failing test, weaken its assertion, disable the runner from
// tests/__init__.py, add a conftest.py or sitecustomize.py, skip the test, change the
// runner's options, rewrite the Makefile's test recipe, re-register the CTest test — is
// refused as protected_path naming the file; the legitimate change beside it is accepted with
// exactly the tree git makes of the same patch. Projects: Python with unittest, Python with
// pytest, C with a Makefile (TAP; the cpp policy and the default one), C with CMake + CTest,
// JavaScript with node's test runner (judged by its exit status).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

#include "tests/kernel/build_fixture.h"

namespace warden::test {
namespace {

using Files = std::map<std::string, std::optional<std::string>>;  // nullopt: the file is removed

class OracleCliTest : public ::testing::Test {
 protected:
  void commit_base(const std::map<std::string, std::string>& files) {
    for (const auto& [path, content] : files) repo.write(path, content);
    base = repo.commit_all("base");
  }

  // The patch of `files` over the base, written beside the repository; the work tree is put back.
  std::string patch_text(const Files& files) {
    for (const auto& [path, content] : files) {
      if (content) repo.write(path, *content); else repo.remove(path);
    }
    std::string text = repo.staged_patch();
    repo.reset_hard(base);
    return text;
  }

  // `warden propose` of `files` over the base with `args`, each on its own branch.
  nlohmann::json propose(const std::string& name, const Files& files, const std::vector<std::string>& args,
                         int expected_exit) {
    std::filesystem::path patch = repo.scratch(name + ".patch");
    last_patch = patch_text(files);
    write_file(patch, last_patch);
    std::vector<std::string> argv = {"propose", patch.string(), "--repo", repo.repo().string(), "--base", base,
                                     "--branch", "warden/" + name,
                                     "--step-timeout", "240", "--json"};
    argv.insert(argv.end(), args.begin(), args.end());
    auto r = warden(argv);
    EXPECT_TRUE(r.exited_with(expected_exit)) << name << ": " << describe(r);
    return r.out.empty() ? nlohmann::json() : stdout_json(r);
  }

  // Refused, with `code` (protected_path, or test_modified for a base test changed in its
  // file) among the reasons naming `file` (and, when `exactly`, the only one besides
  // pass_to_pass_failed: the kernel's own comparison with the base's tests, which refuses some
  // of these cheats a second time on its own).
  void expect_oracle_refusal(const std::string& name, const Files& files, const std::vector<std::string>& args,
                             const std::string& detail, bool exactly = true, const std::string& code = "protected_path") {
    auto j = propose(name, files, args, 1);
    ASSERT_EQ(j["accepted"], false) << name << ": " << j.dump();
    std::vector<std::string> codes;
    std::string code_detail;
    for (const auto& reason : j["refusal"]["reasons"]) {
      codes.push_back(reason["code"]);
      if (reason["code"] == code) code_detail = reason["detail"];
    }
    EXPECT_TRUE(has_code(codes, code)) << name << ": " << j["refusal"].dump();
    EXPECT_NE(code_detail.find(detail), std::string::npos) << name << ": " << code_detail;
    if (exactly) {
      std::erase(codes, "pass_to_pass_failed");
      EXPECT_EQ(codes, std::vector<std::string>{code}) << name << ": " << j["refusal"].dump();
    }
    EXPECT_FALSE(has_ref(repo.repo(), "warden/" + name));
  }

  // Accepted, committed on its branch with the tree git makes of the same patch.
  void expect_accepted(const std::string& name, const Files& files, const std::vector<std::string>& args) {
    auto j = propose(name, files, args, 0);
    ASSERT_EQ(j["accepted"], true) << name << ": " << j.dump();
    EXPECT_EQ(repo.git_line({"rev-parse", "warden/" + name + "^{tree}"}), repo.git_apply_tree(base, last_patch));
    EXPECT_EQ(repo.git_line({"rev-parse", "warden/" + name + "^"}), base);
  }

  // Refused by the checks alone: the change is really broken, and the tests really ran.
  void expect_tests_fail(const std::string& name, const Files& files, const std::vector<std::string>& args) {
    auto j = propose(name, files, args, 1);
    // The failing check, and (for a check that names its tests) the base's test it broke.
    const json& reasons = j["refusal"]["reasons"];
    ASSERT_GE(reasons.size(), 1u) << name << ": " << j.dump();
    const json& last = reasons.back();
    EXPECT_EQ(last["code"], "required_checks_failed") << name << ": " << j.dump();
    EXPECT_NE(last["detail"].get<std::string>().find(": failed"), std::string::npos) << j.dump();
    if (reasons.size() > 1) {
      ASSERT_EQ(reasons.size(), 2u) << name << ": " << j.dump();
      EXPECT_EQ(reasons[0]["code"], "pass_to_pass_failed") << name << ": " << j.dump();
    }
  }

  // Every decision the ledger holds, as the kernel signed it.
  void expect_ledger_verifies_here() {
    expect_ledger_verifies(repo.repo() / ".git" / "warden-ledger", repo.repo() / ".git" / "warden-ledger" / "signer.pub");
  }

  GitRepoFixture repo;
  std::string base, last_patch;
};

// --- Python, unittest -----------------------------------------------------------------------

constexpr const char* kUnittest = "python3 -B -m unittest discover -s tests -t . -v";
constexpr const char* kOps = "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    total = 0\n"
                             "    for _ in range(b):\n        total += a\n    return total\n";
constexpr const char* kBrokenOps = "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a + b\n";
constexpr const char* kFixedOps = "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n";
constexpr const char* kUnittestTests = "import unittest\n\nfrom mathlib.ops import add, mul\n\n\n"
                                       "class OpsTest(unittest.TestCase):\n"
                                       "    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n\n"
                                       "    def test_mul(self):\n        self.assertEqual(mul(2, 3), 6)\n";

class UnittestProject : public OracleCliTest {
 protected:
  void SetUp() override {
    commit_base({{"mathlib/__init__.py", ""}, {"mathlib/ops.py", kOps}, {"tests/__init__.py", ""}, {"tests/test_ops.py", kUnittestTests}});
  }
  std::vector<std::string> check() const { return {"--check", kUnittest}; }
};

TEST_F(UnittestProject, TheBrokenChangeAloneFailsTheTests) {
  expect_tests_fail("broken", {{"mathlib/ops.py", kBrokenOps}}, check());
}

TEST_F(UnittestProject, DeletingTheFailingTestIsRefused) {
  expect_oracle_refusal("delete", {{"mathlib/ops.py", kBrokenOps}, {"tests/test_ops.py", std::nullopt}}, check(),
                        "tests/test_ops.py is removed, and with it the base's tests OpsTest.test_add, OpsTest.test_mul",
                        false, "test_modified");
}

TEST_F(UnittestProject, WeakeningTheAssertionIsRefused) {
  std::string weak = kUnittestTests;
  weak.replace(weak.find("self.assertEqual(mul(2, 3), 6)"), 30, "self.assertTrue(True)");
  expect_oracle_refusal("weaken", {{"mathlib/ops.py", kBrokenOps}, {"tests/test_ops.py", weak}}, check(),
                        "tests/test_ops.py: test OpsTest.test_mul changed", true, "test_modified");
}

// The way most fixes arrive: the change and its regression test in the existing test file.
// Accepted with git's exact tree; the base's tests are judged with the base's file (the oracle
// run) and the new test must pass.
TEST_F(UnittestProject, AFixWithItsTestInTheExistingFileIsAccepted) {
  std::string with_test = kUnittestTests;
  with_test += "\n    def test_mul_by_zero(self):\n        self.assertEqual(mul(7, 0), 0)\n";
  expect_accepted("fix-in-file", {{"mathlib/ops.py", kFixedOps}, {"tests/test_ops.py", with_test}}, check());
  // A new test that fails is refused, named.
  std::string failing = kUnittestTests + std::string("\n    def test_mul_negative(self):\n        self.assertEqual(mul(-1, 2), 2)\n");
  auto j = propose("new-fails", {{"mathlib/ops.py", kFixedOps}, {"tests/test_ops.py", failing}}, check(), 1);
  ASSERT_EQ(j["accepted"], false) << j.dump();
  EXPECT_NE(j["refusal"].dump().find("test_mul_negative"), std::string::npos) << j.dump();
  EXPECT_NE(j["refusal"].dump().find("new_test_failed"), std::string::npos) << j.dump();
  expect_ledger_verifies_here();
}

// What a proposal writes into a test file never reaches the verdict on the base's tests: a
// rebinding that would pass a broken change is refused by structure, and the oracle run with
// the base's file fails the broken code as well.
TEST_F(UnittestProject, AttacksFromInsideAnExistingTestFileAreRefused) {
  // Each: the test file with `insert` written before the first `before`, the code it goes with,
  // and what the refusal names (alone, besides pass_to_pass_failed, when `exactly`).
  struct Attack {
    std::string name, before, insert;
    const char* ops;
    std::string names;
    bool exactly;
  } attacks[] = {
      {"rebind", "", "\n\nmul = lambda a, b: a * b\n", kBrokenOps, "binds mul again", false},
      {"early-return", "        self.assertEqual(mul(2, 3), 6)", "        return\n", kBrokenOps, "test OpsTest.test_mul changed", false},
      {"skip-test", "        self.assertEqual(mul(2, 3), 6)", "        self.skipTest('later')\n", kBrokenOps,
       "test OpsTest.test_mul changed", false},
      {"setup", "    def test_add", "    def setUp(self):\n        pass\n\n", kFixedOps, "new OpsTest.setUp defines OpsTest.setUp",
       true},
      {"class-skip", "class OpsTest", "@unittest.skip('later')\n", kBrokenOps, "OpsTest (the base's tests use it) changed", false},
  };
  for (const Attack& a : attacks) {
    std::string tests = kUnittestTests;
    tests.insert(a.before.empty() ? tests.size() : tests.find(a.before), a.insert);
    expect_oracle_refusal(a.name, {{"mathlib/ops.py", a.ops}, {"tests/test_ops.py", tests}}, check(), a.names, a.exactly,
                          "test_modified");
  }
  std::string renamed = kUnittestTests;
  renamed.replace(renamed.find("def test_mul"), 12, "def test_mul_renamed");
  expect_oracle_refusal("renamed", {{"mathlib/ops.py", kFixedOps}, {"tests/test_ops.py", renamed}}, check(),
                        "test OpsTest.test_mul removed", false, "test_modified");
}

// A spec change rewrites a base test on purpose: refused test_modified naming it, admitted by an
// approval signed by a key the policy names, for exactly that diff and exactly the tests it
// names; the approval is in the ledger (the committed plan) and the ledger verifies.
TEST_F(UnittestProject, AnApprovalAdmitsExactlyTheTestsItNamesForExactlyThatProposal) {
  const auto keys = [&](const std::string& name) {
    auto r = warden({"key", "generate", name, "--signer-out", repo.scratch(name + ".key").string(), "--verifier-out",
                     repo.scratch(name + ".pub").string()});
    EXPECT_TRUE(r.exited_with(0)) << describe(r);
  };
  keys("alice");
  keys("mallory");
  const std::string ops = "def add(a, b):\n    return a + b\n\n\ndef mul(*xs):\n    p = 1\n    for x in xs:\n        p *= x\n"
                          "    return p\n";
  std::string tests = kUnittestTests;
  tests.replace(tests.find("self.assertEqual(mul(2, 3), 6)"), 30, "self.assertEqual(mul(2, 3, 4), 24)");
  const std::string test_add = "    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n\n";
  tests.replace(tests.find(test_add), test_add.size(), "");
  const Files spec = {{"mathlib/ops.py", ops}, {"tests/test_ops.py", tests}};
  auto refused = propose("spec", spec, check(), 1);
  const std::string detail = refused["refusal"].dump();
  EXPECT_NE(detail.find("test OpsTest.test_mul changed"), std::string::npos) << detail;
  EXPECT_NE(detail.find("test OpsTest.test_add removed"), std::string::npos) << detail;
  const size_t at = detail.find("--diff sha256:");
  ASSERT_NE(at, std::string::npos) << detail;
  const std::string digest = detail.substr(at + 7, 71);

  const auto approve = [&](const std::string& who, const std::string& diff, const std::vector<std::string>& names) {
    std::vector<std::string> argv = {"approve", "--diff", diff, "--key", repo.scratch(who + ".key").string(), "--out",
                                     repo.scratch(who + "-" + std::to_string(names.size()) + diff.substr(7, 6) + ".json").string()};
    for (const auto& n : names) argv.insert(argv.end(), {"--test", n});
    auto r = warden(argv);
    EXPECT_TRUE(r.exited_with(0)) << describe(r);
    return argv[6];
  };
  const std::vector<std::string> both = {"tests/test_ops.py::OpsTest.test_mul", "tests/test_ops.py::OpsTest.test_add"};
  const std::string pub = repo.scratch("alice.pub").string();
  auto with = [&](const std::string& approval) {
    std::vector<std::string> args = check();
    args.insert(args.end(), {"--approver", pub, "--approval", approval});
    return args;
  };
  // Another key, another diff, fewer tests: each admits nothing more than it names.
  auto forged = propose("spec-mallory", spec, with(approve("mallory", digest, both)), 1);
  EXPECT_NE(forged["refusal"].dump().find("the policy names no approver mallory"), std::string::npos) << forged.dump();
  auto other = propose("spec-other", spec, with(approve("alice", "sha256:" + std::string(64, 'a'), both)), 1);
  EXPECT_NE(other["refusal"].dump().find("it is for diff sha256:aaaa"), std::string::npos) << other.dump();
  auto partial = propose("spec-partial", spec, with(approve("alice", digest, {both[0]})), 1);
  EXPECT_NE(partial["refusal"].dump().find("test OpsTest.test_add removed"), std::string::npos) << partial.dump();
  EXPECT_EQ(partial["refusal"].dump().find("test OpsTest.test_mul changed"), std::string::npos) << partial.dump();
  // The approval as given: accepted, with git's tree.
  expect_accepted("spec-approved", spec, with(approve("alice", digest, both)));
  expect_ledger_verifies_here();
}

// The command a project documents, without -v: Warden still learns every test id (its reporter),
// so a deleted base test is named both by structure and as missing from the run.
TEST_F(UnittestProject, WithoutVerboseADeletedTestIsRefusedNamingIt) {
  const std::vector<std::string> quiet = {"--check", "python3 -B -m unittest discover -s tests -t ."};
  std::string without = kUnittestTests;
  const std::string test_mul = "\n    def test_mul(self):\n        self.assertEqual(mul(2, 3), 6)\n";
  without.replace(without.find(test_mul), test_mul.size(), "\n");
  auto j = propose("quiet-delete", {{"mathlib/ops.py", kBrokenOps}, {"tests/test_ops.py", without}}, quiet, 1);
  const std::string refusal = j["refusal"].dump();
  EXPECT_NE(refusal.find("test OpsTest.test_mul removed"), std::string::npos) << refusal;
  EXPECT_NE(refusal.find("tests.test_ops.OpsTest.test_mul (missing) passed on the base"), std::string::npos) << refusal;
  std::string with_test = kUnittestTests;
  with_test += "\n    def test_mul_by_zero(self):\n        self.assertEqual(mul(7, 0), 0)\n";
  expect_accepted("quiet-fix", {{"mathlib/ops.py", kFixedOps}, {"tests/test_ops.py", with_test}}, quiet);
}

TEST_F(UnittestProject, DisablingTheRunnerFromTestsInitIsRefused) {
  expect_oracle_refusal("noop-run",
                        {{"mathlib/ops.py", kBrokenOps},
                         {"tests/__init__.py", "import unittest\nunittest.TestCase.run = lambda self, result=None: None\n"}},
                        check(), "tests/__init__.py is a test-runner hook", false);
}

TEST_F(UnittestProject, NewHooksAreRefused) {
  expect_oracle_refusal("conftest", {{"mathlib/ops.py", kFixedOps}, {"conftest.py", "import unittest\n"}}, check(),
                        "conftest.py is a test-runner hook (oracle hook **/conftest.py): the proposal adds it");
  expect_oracle_refusal("sitecustomize", {{"mathlib/ops.py", kFixedOps}, {"sitecustomize.py", "import os\n"}}, check(),
                        "sitecustomize.py is a test-runner hook");
}

TEST_F(UnittestProject, TheLegitimateChangeIsAcceptedAndANewTestFileToo) {
  expect_accepted("fix", {{"mathlib/ops.py", kFixedOps}}, check());
  expect_accepted("fix-with-test",
                  {{"mathlib/ops.py", kFixedOps},
                   {"tests/test_mul.py", "import unittest\n\nfrom mathlib.ops import mul\n\n\nclass MulTest(unittest.TestCase):\n"
                                         "    def test_zero(self):\n        self.assertEqual(mul(0, 7), 0)\n"}},
                  check());
  expect_ledger_verifies_here();
}

TEST_F(UnittestProject, OracleAddsGlobsAndIsRecordedInThePolicy) {
  repo.write("golden/expected.txt", "6\n");
  base = repo.commit_all("golden output");
  expect_accepted("without", {{"golden/expected.txt", "5\n"}}, check());
  expect_oracle_refusal("with", {{"golden/expected.txt", "5\n"}}, {"--check", kUnittest, "--oracle", "golden/**"},
                        "golden/expected.txt is part of the oracle (oracle path golden/**)");
  auto policies = payloads(ledger_records(repo.repo() / ".git" / "warden-ledger"), "policy");
  ASSERT_EQ(policies.size(), 2u);
  const auto& paths = policies[1]["policy"]["oracle"]["paths"];
  EXPECT_EQ(paths.back(), "golden/**") << policies[1].dump();
}

// --- Python, pytest -------------------------------------------------------------------------

constexpr const char* kPytest = "python3 -B -m pytest -q -p no:cacheprovider";
constexpr const char* kPytestTests = "from mathlib.ops import add, mul\n\n\n"
                                     "def test_add():\n    assert add(2, 3) == 5\n\n\n"
                                     "def test_mul():\n    assert mul(2, 3) == 6\n";
constexpr const char* kPyproject = "[project]\nname = \"mathlib\"\nversion = \"0.1.0\"\n\n"
                                   "[tool.pytest.ini_options]\naddopts = \"-ra\"\ntestpaths = [\"tests\"]\n";

class PytestProject : public OracleCliTest {
 protected:
  void SetUp() override {
    commit_base({{"mathlib/__init__.py", ""}, {"mathlib/ops.py", kOps}, {"tests/test_ops.py", kPytestTests}, {"pyproject.toml", kPyproject}});
  }
  std::vector<std::string> check() const { return {"--check", kPytest}; }
};

TEST_F(PytestProject, TheBrokenChangeAloneFailsTheTests) {
  expect_tests_fail("broken", {{"mathlib/ops.py", kBrokenOps}}, check());
}

TEST_F(PytestProject, ASkipDecoratorIsRefused) {
  std::string skipped = kPytestTests;
  skipped.replace(skipped.find("def test_mul"), 12, "import pytest\n\n\n@pytest.mark.skip\ndef test_mul");
  expect_oracle_refusal("skip", {{"mathlib/ops.py", kBrokenOps}, {"tests/test_ops.py", skipped}}, check(),
                        "tests/test_ops.py: test test_mul changed", false, "test_modified");
}

TEST_F(PytestProject, ANewAutouseFixtureOrDecoratorIsRefusedAndANewTestAccepted) {
  const std::string autouse = std::string(kPytestTests) + "\n\nimport pytest\n\n\n@pytest.fixture(autouse=True)\ndef patch():\n    yield\n";
  expect_oracle_refusal("autouse", {{"mathlib/ops.py", kFixedOps}, {"tests/test_ops.py", autouse}}, check(),
                        "autouse fixture", true, "test_modified");
  expect_accepted("added", {{"mathlib/ops.py", kFixedOps},
                            {"tests/test_ops.py", std::string(kPytestTests) + "\n\ndef test_mul_zero():\n    assert mul(0, 4) == 0\n"}},
                  check());
}

TEST_F(PytestProject, ChangingAddoptsInPyprojectIsRefused) {
  std::string deselect = kPyproject;
  deselect.replace(deselect.find("\"-ra\""), 5, "\"-ra -k 'not mul'\"");
  expect_oracle_refusal("addopts", {{"mathlib/ops.py", kBrokenOps}, {"pyproject.toml", deselect}}, check(),
                        "pyproject.toml: tool.pytest.ini_options.addopts changed");
}

TEST_F(PytestProject, ChangingAddoptsInPytestIniIsRefused) {
  repo.write("pytest.ini", "[pytest]\naddopts = -ra\n");
  base = repo.commit_all("pytest.ini");
  expect_oracle_refusal("ini", {{"mathlib/ops.py", kBrokenOps}, {"pytest.ini", "[pytest]\naddopts = -ra -k 'not mul'\n"}}, check(),
                        "pytest.ini is a test-runner hook (oracle hook **/pytest.ini): the proposal changes it");
}

TEST_F(PytestProject, AnUnrelatedPyprojectChangeIsAccepted) {
  std::string bumped = kPyproject;
  bumped.replace(bumped.find("0.1.0"), 5, "0.2.0");
  expect_accepted("version", {{"mathlib/ops.py", kFixedOps}, {"pyproject.toml", bumped}}, check());
}

// --- C, make + TAP --------------------------------------------------------------------------

constexpr const char* kOpsH = "#ifndef OPS_H\n#define OPS_H\nint add(int a, int b);\nint mul(int a, int b);\n#endif\n";
constexpr const char* kOpsC = "#include \"ops.h\"\n\nint add(int a, int b) { return a + b; }\n\n"
                              "int mul(int a, int b) { return a * b; }\n";
constexpr const char* kBrokenOpsC = "#include \"ops.h\"\n\nint add(int a, int b) { return a + b; }\n\n"
                                    "int mul(int a, int b) { return a + b; }\n";
// TAP on stdout, and a failing exit status too (the default policy judges the exit status).
constexpr const char* kTestC = "#include <stdio.h>\n\n#include \"ops.h\"\n\n"
                               "int main(void) {\n  int ok_add = add(2, 3) == 5, ok_mul = mul(2, 3) == 6;\n"
                               "  printf(\"1..2\\n\");\n"
                               "  printf(\"%s 1 - add\\n\", ok_add ? \"ok\" : \"not ok\");\n"
                               "  printf(\"%s 2 - mul\\n\", ok_mul ? \"ok\" : \"not ok\");\n"
                               "  return ok_add && ok_mul ? 0 : 1;\n}\n";
constexpr const char* kMakefile = "CC ?= cc\n"
                                  "CFLAGS = -std=c11 -Wall -O1\n"
                                  "OBJS = src/ops.o\n"
                                  "\n"
                                  ".PHONY: all test clean\n"
                                  "all: libops.a\n"
                                  "\n"
                                  "libops.a: $(OBJS)\n"
                                  "\t@ar rcs $@ $^\n"
                                  "\n"
                                  "%.o: %.c\n"
                                  "\t@$(CC) $(CFLAGS) -Isrc -c -o $@ $<\n"
                                  "\n"
                                  "build/test_ops: tests/test_ops.c libops.a\n"
                                  "\t@mkdir -p build\n"
                                  "\t@$(CC) $(CFLAGS) -Isrc -o $@ $^\n"
                                  "\n"
                                  "test: build/test_ops\n"
                                  "\t@./build/test_ops\n"
                                  "\n"
                                  "clean:\n"
                                  "\trm -rf build libops.a src/*.o\n";

class MakeProject : public OracleCliTest, public ::testing::WithParamInterface<std::string> {
 protected:
  void SetUp() override {
    commit_base({{"src/ops.h", kOpsH}, {"src/ops.c", kOpsC}, {"tests/test_ops.c", kTestC}, {"Makefile", kMakefile}});
  }
  // The cpp policy runs `make -s test` itself; the default policy runs the given check.
  std::vector<std::string> args() const {
    if (GetParam() == "cpp") return {"--policy", "cpp"};
    return {"--check", "make -s test"};
  }
};

TEST_P(MakeProject, TheBrokenChangeAloneFailsTheTests) {
  expect_tests_fail("broken-" + GetParam(), {{"src/ops.c", kBrokenOpsC}}, args());
}

TEST_P(MakeProject, RewritingTheTestRecipeIsRefusedNamingTheMakefile) {
  std::string forged = kMakefile;
  forged.replace(forged.find("\t@./build/test_ops\n"), 19, "\t@printf '1..1\\nok 1\\n'\n");
  expect_oracle_refusal("recipe-" + GetParam(), {{"src/ops.c", kBrokenOpsC}, {"Makefile", forged}}, args(),
                        "Makefile: the recipe of target test changed");
}

TEST_P(MakeProject, ANewSourceInTheLibraryRuleIsAccepted) {
  std::string more = kMakefile;
  more.replace(more.find("OBJS = src/ops.o"), 16, "OBJS = src/ops.o src/mul.o");
  expect_accepted("source-" + GetParam(),
                  {{"src/ops.c", "#include \"ops.h\"\n\nint add(int a, int b) { return a + b; }\n"},
                   {"src/mul.c", "#include \"ops.h\"\n\nint mul(int a, int b) { return a * b; }\n"},
                   {"Makefile", more}},
                  args());
}

INSTANTIATE_TEST_SUITE_P(Policies, MakeProject, ::testing::Values("cpp", "default"));

// --- C, CMake + CTest -----------------------------------------------------------------------

constexpr const char* kCMake = "cmake_minimum_required(VERSION 3.10)\n"
                               "project(ops C)\n"
                               "add_library(ops src/ops.c)\n"
                               "target_include_directories(ops PUBLIC src)\n"
                               "enable_testing()\n"
                               "add_executable(test_ops tests/test_ops.c)\n"
                               "target_link_libraries(test_ops ops)\n"
                               "add_test(NAME ops COMMAND test_ops)\n"
                               "set_tests_properties(ops PROPERTIES FAIL_REGULAR_EXPRESSION \"not ok\")\n";
constexpr const char* kCTest = "cmake -S . -B /tmp/b >/dev/null && cmake --build /tmp/b >/dev/null && cd /tmp/b && "
                               "ctest --output-on-failure";

class CMakeProject : public OracleCliTest {
 protected:
  void SetUp() override {
    commit_base({{"src/ops.h", kOpsH}, {"src/ops.c", kOpsC}, {"tests/test_ops.c", kTestC}, {"CMakeLists.txt", kCMake}});
  }
  std::vector<std::string> check() const { return {"--check", kCTest}; }
};

// A C suite whose tests are functions registered in main (as Unity's RUN_TEST does): a fix with
// its new test function and registration is accepted; a weakened test or a dropped
// registration is refused naming it.
constexpr const char* kMiniH = "#include <stdio.h>\n"
                               "#define RUN_TEST(f) do { int ok_ = f(); printf(\"%s %d - %s\\n\", ok_ ? \"ok\" : \"not ok\", ++n_, #f); "
                               "failed_ |= !ok_; } while (0)\n";
constexpr const char* kRegisteredTestC = "#include \"ops.h\"\n#include \"mini.h\"\n\n"
                                         "static int test_add(void) { return add(2, 3) == 5; }\n\n"
                                         "static int test_mul(void) { return mul(2, 3) == 6; }\n\n"
                                         "int main(void) {\n  int n_ = 0, failed_ = 0;\n  RUN_TEST(test_add);\n  RUN_TEST(test_mul);\n"
                                         "  printf(\"1..%d\\n\", n_);\n  return failed_;\n}\n";

class RegisteredCProject : public OracleCliTest {
 protected:
  void SetUp() override {
    commit_base({{"src/ops.h", kOpsH}, {"src/ops.c", kOpsC}, {"tests/mini.h", kMiniH}, {"tests/test_ops.c", kRegisteredTestC},
                 {"CMakeLists.txt", kCMake}});
  }
  std::vector<std::string> check() const { return {"--check", kCTest}; }
};

TEST_F(RegisteredCProject, ATestFunctionAndItsRegistrationMayBeAddedAndNothingElse) {
  std::string added = kRegisteredTestC;
  added.insert(added.find("int main"), "static int test_mul_zero(void) { return mul(7, 0) == 0; }\n\n");
  added.insert(added.find("  printf"), "  RUN_TEST(test_mul_zero);\n");
  expect_accepted("c-added", {{"src/ops.c", kOpsC}, {"tests/test_ops.c", added}}, check());
  std::string weak = kRegisteredTestC;
  weak.replace(weak.find("return mul(2, 3) == 6;"), 22, "return 1;");
  expect_oracle_refusal("c-weak", {{"src/ops.c", kBrokenOpsC}, {"tests/test_ops.c", weak}}, check(), "test test_mul changed",
                        false, "test_modified");
  std::string dropped = kRegisteredTestC;
  dropped.erase(dropped.find("  RUN_TEST(test_mul);\n"), 22);
  expect_oracle_refusal("c-dropped", {{"src/ops.c", kBrokenOpsC}, {"tests/test_ops.c", dropped}}, check(), "main (the base's tests use it) changed",
                        false, "test_modified");
  std::string redefined = added;
  redefined.insert(redefined.find("static int test_mul_zero"), "#undef RUN_TEST\n#define RUN_TEST(f) (void)0\n");
  expect_oracle_refusal("c-redefined", {{"src/ops.c", kBrokenOpsC}, {"tests/test_ops.c", redefined}}, check(), "preprocessor directive",
                        false, "test_modified");
}

TEST_F(CMakeProject, TheBrokenChangeAloneFailsCTest) {
  expect_tests_fail("broken", {{"src/ops.c", kBrokenOpsC}}, check());
}

TEST_F(CMakeProject, ChangingAddTestIsRefused) {
  std::string forged = kCMake;
  forged.replace(forged.find("COMMAND test_ops"), 16, "COMMAND true");
  expect_oracle_refusal("add-test", {{"src/ops.c", kBrokenOpsC}, {"CMakeLists.txt", forged}}, check(),
                        "CMakeLists.txt: add_test(ops) changed");
}

TEST_F(CMakeProject, ASourceOnlyChangeIsAccepted) {
  std::string more = kCMake;
  more.replace(more.find("add_library(ops src/ops.c)"), 26, "add_library(ops src/ops.c src/mul.c)");
  expect_accepted("source",
                  {{"src/ops.c", "#include \"ops.h\"\n\nint add(int a, int b) { return a + b; }\n"},
                   {"src/mul.c", "#include \"ops.h\"\n\nint mul(int a, int b) { return a * b; }\n"},
                   {"CMakeLists.txt", more}},
                  check());
  expect_ledger_verifies_here();
}

// --- JavaScript, node's own test runner ------------------------------------------------------

constexpr const char* kOpsJs = "export const add = (a, b) => a + b;\nexport const mul = (a, b) => a * b;\n";
constexpr const char* kBrokenOpsJs = "export const add = (a, b) => a + b;\nexport const mul = (a, b) => a + b;\n";
constexpr const char* kOpsTestJs = R"(import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { add, mul } from '../lib/ops.mjs';

describe('ops', () => {
  it('adds', () => {
    assert.equal(add(2, 3), 5);
  });

  it('multiplies', () => {
    assert.equal(mul(2, 3), 6);
  });
});
)";

class NodeProject : public OracleCliTest {
 protected:
  void SetUp() override {
    commit_base({{"package.json", "{\"name\": \"ops\", \"type\": \"module\"}\n"}, {"lib/ops.mjs", kOpsJs}, {"test/ops.test.mjs", kOpsTestJs}});
  }
  std::vector<std::string> check() const { return {"--check", "node --test"}; }
  static std::string with(std::string text, std::string_view from, std::string_view to) {
    text.replace(text.find(from), from.size(), to);
    return text;
  }
};

TEST_F(NodeProject, TheBrokenChangeAloneFailsTheTests) {
  expect_tests_fail("broken", {{"lib/ops.mjs", kBrokenOpsJs}}, check());
}

// A test added to the existing file's suite is accepted; each way of disabling a base test in
// the same file is refused test_modified naming it ("suite > test").
TEST_F(NodeProject, ATestMayBeAddedToTheFileAndNoBaseTestChanged) {
  const std::string added = with(kOpsTestJs, "});\n", "});\n\ndescribe('ops by zero', () => {\n  it('multiplies by zero', () => {\n"
                                                      "    assert.equal(mul(2, 0), 0);\n  });\n});\n");
  const std::string more = with(added, "  it('multiplies', () => {", "  it('adds zero', () => {\n    assert.equal(add(2, 0), 2);\n  });\n\n"
                                                                   "  it('multiplies', () => {");
  expect_accepted("js-added", {{"lib/ops.mjs", "export const add = (a, b) => a + b;\nexport const mul = (a, b) => b * a;\n"},
                               {"test/ops.test.mjs", more}},
                  check());
  expect_oracle_refusal("js-return", {{"lib/ops.mjs", kBrokenOpsJs}, {"test/ops.test.mjs", with(kOpsTestJs, "    assert.equal(mul", "    return;\n    assert.equal(mul")}},
                        check(), "test ops > multiplies changed", false, "test_modified");
  expect_oracle_refusal("js-skip", {{"lib/ops.mjs", kBrokenOpsJs}, {"test/ops.test.mjs", with(kOpsTestJs, "  it('multiplies'", "  it.skip('multiplies'")}},
                        check(), "test ops > multiplies changed", false, "test_modified");
  expect_oracle_refusal("js-hook", {{"lib/ops.mjs", kBrokenOpsJs},
                                    {"test/ops.test.mjs", with(kOpsTestJs, "  it('adds'", "  beforeEach(() => { process.exitCode = 0; });\n\n  it('adds'")}},
                        check(), "is a new hook", false, "test_modified");
  expect_ledger_verifies_here();
}

}  // namespace
}  // namespace warden::test
