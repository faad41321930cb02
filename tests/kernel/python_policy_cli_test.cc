// `warden propose --policy python` end to end on real Python projects, as a new user would
// run it: the python policy's runner counts a unittest project's tests (never "1..0"); a
// module that prints a passing TAP stream to descriptor 1 and exits at import time cannot
// make a broken function pass (the report comes through the runner's authenticated channel),
// while the same project's legitimate change is accepted; and all_functions_have_tests counts
// only tests that ran, so a wrong function merely called from a conftest.py is not proven.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <string>

#include "tests/kernel/build_fixture.h"

namespace warden::test {
namespace {

constexpr const char* kOps =
    "def add(a: int, b: int) -> int:\n    return a + b\n\n\n"
    "def mul(a: int, b: int) -> int:\n    return a * b\n";

constexpr const char* kUnittest =
    "import unittest\n\nfrom mathlib.ops import add, mul\n\n\n"
    "class TestOps(unittest.TestCase):\n"
    "    def test_add(self) -> None:\n        self.assertEqual(add(2, 3), 5)\n\n"
    "    def test_mul(self) -> None:\n        self.assertEqual(mul(4, 2), 8)\n\n"
    "    def test_mul_table(self) -> None:\n        for i in range(3):\n"
    "            with self.subTest(i=i):\n                self.assertEqual(mul(i, 1), i)\n";

class PythonPolicyCliTest : public ::testing::Test {
 protected:
  void seed(const std::map<std::string, std::string>& files) {
    for (const auto& [path, content] : files) repo.write(path, content);
    base = repo.commit_all("base");
  }

  std::filesystem::path patch(const std::string& name, const std::map<std::string, std::string>& files) {
    for (const auto& [path, content] : files) repo.write(path, content);
    std::filesystem::path out = repo.scratch(name);
    write_file(out, repo.staged_patch());
    repo.reset_hard(base);
    return out;
  }

  ProcessResult propose(const std::filesystem::path& proposal) {
    return warden({"propose", proposal.string(), "--repo", repo.repo().string(), "--base", base, "--policy", "python", "--json"});
  }

  std::filesystem::path ledger() const { return repo.repo() / ".git" / "warden-ledger"; }

  // The last run result's check named `name`.
  json check_result(const std::string& name) {
    auto results = payloads(ledger_records(ledger()), "run_result");
    EXPECT_FALSE(results.empty());
    if (results.empty()) return {};
    for (const auto& c : results.back()["run_result"]["checks"]) {
      if (c["name"] == name) return c;
    }
    ADD_FAILURE() << "no check " << name << " in " << results.back().dump();
    return {};
  }

  GitRepoFixture repo;
  std::string base;
};

std::vector<std::string> ids_of(const json& check) {
  std::vector<std::string> ids;
  for (const auto& t : check["tests"]) ids.push_back(t["id"]);
  return ids;
}

TEST_F(PythonPolicyCliTest, AUnittestProjectsTestsAreCountedAndAReportForgedAtImportIsRefused) {
  seed({{"mathlib/__init__.py", ""}, {"mathlib/ops.py", kOps}, {"tests/__init__.py", ""}, {"tests/test_ops.py", kUnittest}});

  // A module that prints a passing stream on descriptor 1 and ends the process at import time.
  auto forged = patch("forged.patch", {{"mathlib/ops.py",
                                        "import os\n\nos.write(1, b\"TAP version 13\\n1..3\\n"
                                        "ok 1 - tests/test_ops.py::TestOps::test_add\\n"
                                        "ok 2 - tests/test_ops.py::TestOps::test_mul\\n"
                                        "ok 3 - tests/test_ops.py::TestOps::test_mul_table\\n\")\nos._exit(0)\n\n\n"
                                        "def add(a: int, b: int) -> int:\n    return a - b\n\n\n"
                                        "def mul(a: int, b: int) -> int:\n    return a * b\n"}});
  auto r = propose(forged);
  ASSERT_TRUE(r.exited_with(1)) << describe(r);
  json j = stdout_json(r);
  EXPECT_EQ(j["accepted"], false);
  json tests = check_result("tests");
  EXPECT_EQ(tests["verdict"], "failed") << tests.dump();
  EXPECT_EQ(tests["runs"][0]["exit_code"], 0) << "the forger exited 0";
  EXPECT_NE(tests["runs"][0]["stdout"]["head"].get<std::string>().find("ok 1 - "), std::string::npos)
      << "its stream was on stdout, and stdout is not the report";
  EXPECT_EQ(tests["runs"][0]["report"], "missing");
  EXPECT_NE(tests["runs"][0]["report_detail"].get<std::string>().find("report channel"), std::string::npos);
  auto decisions = payloads(ledger_records(ledger()), "decision");
  ASSERT_EQ(decisions.size(), 1u);
  EXPECT_TRUE(has_code(reason_codes(decisions[0]), "required_checks_failed")) << decisions[0].dump();

  // The legitimate change: every unittest test found, run and passed.
  auto good = patch("good.patch", {{"mathlib/ops.py",
                                    "def add(a: int, b: int) -> int:\n    return b + a\n\n\n"
                                    "def mul(a: int, b: int) -> int:\n    return sum(a for _ in range(b))\n"}});
  auto accepted = propose(good);
  ASSERT_TRUE(accepted.exited_with(0)) << describe(accepted);
  json passed = check_result("tests");
  EXPECT_EQ(passed["verdict"], "passed");
  EXPECT_EQ(passed["runs"][0]["report"], "parsed");
  EXPECT_EQ(ids_of(passed), (std::vector<std::string>{"tests/test_ops.py::TestOps::test_add", "tests/test_ops.py::TestOps::test_mul",
                                                      "tests/test_ops.py::TestOps::test_mul_table"}));
  for (const auto& t : passed["tests"]) EXPECT_EQ(t["status"], "passed") << t.dump();
  EXPECT_EQ(check_result("invariant:all_functions_have_tests")["verdict"], "passed");
}

TEST_F(PythonPolicyCliTest, AWrongFunctionCalledOnlyFromAConftestIsNotProvenTested) {
  seed({{"src/calculator/__init__.py", ""},
        {"src/calculator/ops.py", "def add(a: int, b: int) -> int:\n    return a + b\n"},
        {"tests/test_ops.py", "from calculator.ops import add\n\n\ndef test_add() -> None:\n    assert add(2, 3) == 5\n"}});
  const std::string with_triple =
      "def add(a: int, b: int) -> int:\n    return a + b\n\n\ndef triple(a: int) -> int:\n    return a * 4\n";
  auto cheat = patch("cheat.patch", {{"src/calculator/ops.py", with_triple},
                                     {"src/calculator/conftest.py", "from calculator.ops import triple\n\ntriple(1)\n"}});
  auto r = propose(cheat);
  ASSERT_TRUE(r.exited_with(1)) << describe(r);
  json invariant = check_result("invariant:all_functions_have_tests");
  EXPECT_EQ(invariant["verdict"], "failed") << invariant.dump();
  EXPECT_NE(invariant["runs"][0]["stdout"]["head"].get<std::string>().find(
                "src/calculator/ops.py:5: function triple is not referenced by any test that ran"),
            std::string::npos)
      << invariant.dump();
  auto decisions = payloads(ledger_records(ledger()), "decision");
  ASSERT_EQ(decisions.size(), 1u);
  EXPECT_TRUE(has_code(reason_codes(decisions[0]), "invariant_not_proven:all_functions_have_tests")) << decisions[0].dump();

  // A right triple() with a test that runs is accepted.
  auto good = patch("good.patch", {{"src/calculator/ops.py",
                                    "def add(a: int, b: int) -> int:\n    return a + b\n\n\ndef triple(a: int) -> int:\n    return a * 3\n"},
                                   {"tests/test_triple.py",
                                    "from calculator.ops import triple\n\n\ndef test_triple() -> None:\n    assert triple(2) == 6\n"}});
  auto accepted = propose(good);
  ASSERT_TRUE(accepted.exited_with(0)) << describe(accepted);
  EXPECT_EQ(check_result("invariant:all_functions_have_tests")["verdict"], "passed");
}

}  // namespace
}  // namespace warden::test
