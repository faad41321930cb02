// The base-checkout cache poisoned under `warden propose`: someone who got into the cache
// rewrites the cached test to pass; the next propose finds the checkout no longer matches
// its seal, rebuilds it, records the event in the ledger, prints it, and refuses the broken
// change the poisoned test would have let through.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <string>

#include "tests/kernel/build_fixture.h"

namespace warden::test {
namespace {

constexpr const char* kCheck = "python3 -B -m unittest -q";

TEST(BaseCacheCli, APoisonedCheckoutIsRebuiltRecordedAndTheBrokenChangeRefused) {
  GitRepoFixture repo;
  repo.write("calc.py", "def add(a, b):\n    return a + b\n");
  const std::string test =
      "import unittest\n\nfrom calc import add\n\n\nclass CalcTest(unittest.TestCase):\n"
      "    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n";
  repo.write("test_calc.py", test);
  const std::string base = repo.commit_all("base");
  // Two broken changes: each a tree of its own, so neither comes from the result cache.
  auto patch = [&](const std::string& name, const std::string& calc) {
    repo.write("calc.py", calc);
    const std::filesystem::path out = repo.scratch(name);
    write_file(out, repo.staged_patch());
    repo.reset_hard(base);
    return out;
  };
  const auto bad1 = patch("bad1.patch", "def add(a, b):\n    return a - b\n");
  const auto bad2 = patch("bad2.patch", "def add(a, b):\n    return a * b\n");
  const std::filesystem::path cache = repo.scratch("cache");
  const std::filesystem::path ledger = repo.repo() / ".git" / "warden-ledger";
  auto propose = [&](const std::filesystem::path& bad) {
    return warden({"propose", bad.string(), "--repo", repo.repo().string(), "--base", base, "--check", kCheck, "--cache",
                   cache.string()});
  };

  auto first = propose(bad1);
  ASSERT_TRUE(first.exited_with(1)) << describe(first);
  const std::string tree = repo.git_line({"rev-parse", base + "^{tree}"});
  const std::filesystem::path cached = cache / "checkouts" / tree / "checkout" / "test_calc.py";
  ASSERT_EQ(read_file(cached), test);

  // The poisoner's test passes whatever calc.py does.
  write_file(cached, "import unittest\n\n\nclass CalcTest(unittest.TestCase):\n    def test_add(self):\n        pass\n");
  auto second = propose(bad2);
  ASSERT_TRUE(second.exited_with(1)) << "the poisoned cache let the broken change through\n" << describe(second);
  EXPECT_NE(second.err.find("the cached base checkout of tree " + tree + " was discarded and rebuilt"), std::string::npos)
      << second.err;
  EXPECT_NE(second.out.find("required_checks_failed"), std::string::npos) << second.out;
  EXPECT_EQ(read_file(cached), test);

  auto records = ledger_records(ledger);
  std::vector<json> discarded;
  for (const json& ev : payloads(records, "run_event")) {
    if (ev["data"].contains("base_checkout_discarded")) discarded.push_back(ev["data"]["base_checkout_discarded"]);
  }
  ASSERT_EQ(discarded.size(), 1u);
  EXPECT_EQ(discarded[0]["tree"], tree);
  EXPECT_NE(discarded[0]["reason"].get<std::string>().find("no longer matches its seal"), std::string::npos) << discarded[0];
  auto decisions = payloads(records, "decision");
  ASSERT_EQ(decisions.size(), 2u);
  EXPECT_EQ(decisions[1]["verdict"]["accepted"], false);
  expect_ledger_verifies(ledger, repo.repo() / ".git" / "warden-ledger" / "signer.pub");
}

}  // namespace
}  // namespace warden::test
