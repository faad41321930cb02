// Tested bytes are the committed bytes: `warden propose` refuses a .gitattributes entry that
// would make a checkout differ from what the sandbox tested (ident, eol/text, filter), and a
// branch accepted with harmless attributes, cloned with real `git clone`, holds exactly the
// bytes of the tree that was tested. A base whose own attributes already transform is noted.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <string>

#include "tests/kernel/build_fixture.h"

namespace warden::test {
namespace {

constexpr const char* kCheck = "python3 -B -m unittest -q";

class GitAttributesCli : public ::testing::Test {
 protected:
  void SetUp() override {
    repo.write("calc.py", "# $Id$\ndef add(a, b):\n    return a + b\n");
    repo.write("test_calc.py",
               "import unittest\n\nfrom calc import add\n\n\nclass CalcTest(unittest.TestCase):\n"
               "    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n");
    base = repo.commit_all("base");
  }

  std::filesystem::path patch(const std::string& name, const std::map<std::string, std::string>& files) {
    return repo.patch_file(base, name, files);
  }

  ProcessResult propose(const std::filesystem::path& proposal) {
    return warden({"propose", proposal.string(), "--repo", repo.repo().string(), "--base", base, "--check", kCheck, "--cache",
                   repo.scratch("cache").string(), "--branch", "warden/propose"});
  }

  GitRepoFixture repo;
  std::string base;
};

TEST_F(GitAttributesCli, TransformingAttributesAreRefused) {
  for (const char* line : {"*.py ident", "*.py text eol=crlf", "*.py filter=tidy"}) {
    auto r = propose(patch("attributes.patch", {{".gitattributes", std::string(line) + "\n"}}));
    ASSERT_TRUE(r.exited_with(1)) << line << "\n" << describe(r);
    EXPECT_NE(r.out.find("checkout_transform"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(std::string(".gitattributes:1 `") + line + "`"), std::string::npos) << r.out;
    EXPECT_FALSE(has_ref(repo.repo(), "warden/propose"));
  }
}

TEST_F(GitAttributesCli, AnAcceptedBranchClonesToTheTestedBytes) {
  auto good = patch("good.patch", {{".gitattributes", "*.png binary\n*.py -diff linguist-language=Python\n"},
                                   {"logo.png", std::string("\x89PNG\r\n\x1a\n\0\r\n$Id$\n", 16)},
                                   {"notes.txt", "line one\r\nline two\n$Id$\n"}});
  auto r = propose(good);
  ASSERT_TRUE(r.exited_with(0)) << describe(r);
  auto records = ledger_records(repo.repo() / ".git" / "warden-ledger");
  auto runs = payloads(records, "run_result");
  ASSERT_FALSE(runs.empty());
  const std::string tested = runs.back()["run_result"]["tree"];
  EXPECT_EQ(repo.git_line({"rev-parse", "warden/propose^{tree}"}), tested);

  const std::filesystem::path clone = repo.scratch("clone");
  git_in(repo.dir(), {"clone", "-q", "--branch", "warden/propose", repo.repo().string(), clone.string()});
  std::vector<std::string> expected;
  for (const auto& line : complete_lines(repo.git({"ls-tree", "-r", "--name-only", tested}))) expected.push_back(line);
  std::vector<std::string> seen;
  for (auto it = std::filesystem::recursive_directory_iterator(clone); it != std::filesystem::recursive_directory_iterator(); ++it) {
    if (it->path().filename() == ".git") {
      it.disable_recursion_pending();
      continue;
    }
    if (!it->is_regular_file()) continue;
    const std::string path = std::filesystem::relative(it->path(), clone).string();
    seen.push_back(path);
    EXPECT_EQ(read_file(it->path()), repo.git({"cat-file", "blob", tested + ":" + path})) << path;
  }
  std::sort(seen.begin(), seen.end());
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(seen, expected);
}

TEST_F(GitAttributesCli, ABaseThatAlreadyTransformsIsNotedInTheLedger) {
  repo.write("src/.gitattributes", "# kept by the owners\n*.py ident\n");
  base = repo.commit_all("owners' attributes");
  auto r = propose(patch("good.patch", {{"README", "hello\n"}}));
  ASSERT_TRUE(r.exited_with(0)) << describe(r);
  EXPECT_NE(r.err.find("note: the base's src/.gitattributes:2 `*.py ident` sets ident"), std::string::npos) << r.err;
  std::vector<json> noted;
  for (const json& ev : payloads(ledger_records(repo.repo() / ".git" / "warden-ledger"), "run_event")) {
    if (ev["data"].contains("base_checkout_attributes")) noted.push_back(ev["data"]["base_checkout_attributes"]);
  }
  ASSERT_EQ(noted.size(), 1u);
  EXPECT_EQ(noted[0], json::parse(R"([{"path": "src/.gitattributes", "line": 2, "text": "*.py ident", "attribute": "ident"}])"));
}

}  // namespace
}  // namespace warden::test
