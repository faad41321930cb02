// `warden receipt` end to end: a real git repository with a real commit, a real ledger
// holding its commit record, a receipt made by the CLI and verified by the CLI with only
// the verifier key, and tampered or mismatched receipts refused with exit 1.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <string>

#include "tests/support/files.h"
#include "tests/support/warden_cli.h"
#include "tests/support/git_fixture.h"

namespace warden::test {
namespace {

constexpr const char* kDigest = "sha256:0000000000000000000000000000000000000000000000000000000000000000";

class ReceiptCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    repo.write("calc.py", "def add(a, b):\n    return a + b\n");
    parent = repo.commit_all("base");
    repo.write("test_calc.py", "from calc import add\n\ndef test_add():\n    assert add(1, 2) == 3\n");
    commit = repo.commit_all("s2: tests for add");
    tree = repo.git_line({"rev-parse", "HEAD^{tree}"});
    verifier_key = init_ledger(ledger);
    append_commit_record(ledger, tree);
  }

  // Returns the ledger's verifier key.
  std::string init_ledger(const std::filesystem::path& dir) {
    auto init = warden({"ledger", "init", dir.string(), "--origin", "warden.test/" + dir.filename().string(), "--json"});
    EXPECT_TRUE(init.exited_with(0)) << describe(init);
    return stdout_json(init).at("verifier_key");
  }

  // Appends a decision record at seq 0 (accepting the commit's step unless `accepted` is
  // false), then the commit record naming it.
  void append_commit_record(const std::filesystem::path& dir, const std::string& record_tree, bool accepted = true) {
    nlohmann::json decision = {{"run_id", "run-000001"},  {"step_id", "s2"},       {"attempt", 2},
                               {"plan_sha256", kDigest},  {"policy_sha256", kDigest},
                               {"verdict", {{"accepted", accepted}, {"reasons", nlohmann::json::array()}}}};
    nlohmann::json payload = {{"run_id", "run-000001"},   {"step_id", "s2"},         {"attempt", 2},
                              {"commit", commit},         {"tree", record_tree},     {"parent", parent},
                              {"branch", "refs/heads/warden/calculator"},             {"plan_sha256", kDigest},
                              {"proposal_sha256", kDigest}, {"run_result_sha256", kDigest},
                              {"policy_sha256", kDigest}, {"decision_seq", 0}};
    write_file(repo.scratch("decision.json"), decision.dump());
    write_file(repo.scratch("record.json"), payload.dump());
    auto decided = warden({"ledger", "append", dir.string(), "--kind", "decision", "--payload",
                           repo.scratch("decision.json").string()});
    auto appended = warden({"ledger", "append", dir.string(), "--kind", "commit", "--payload",
                            repo.scratch("record.json").string()});
    ASSERT_TRUE(decided.exited_with(0)) << describe(decided);
    ASSERT_TRUE(appended.exited_with(0)) << describe(appended);
  }

  ProcessResult verify(const std::filesystem::path& receipt, const std::string& key) {
    return warden({"receipt", "verify", receipt.string(), "--key", key});
  }

  GitRepoFixture repo;
  std::filesystem::path ledger = repo.scratch("ledger");
  std::filesystem::path receipt = repo.scratch("receipt.json");
  std::string parent, commit, tree, verifier_key;
};

TEST_F(ReceiptCliTest, MadeForARevisionAndVerifiedOffline) {
  auto made = warden({"receipt", "HEAD", "--repo", repo.repo().string(), "--ledger", ledger.string(), "-o",
                      receipt.string()});
  ASSERT_TRUE(made.exited_with(0)) << describe(made);
  EXPECT_NE(made.out.find(commit), std::string::npos) << made.out;

  auto ok = verify(receipt, verifier_key);
  ASSERT_TRUE(ok.exited_with(0)) << describe(ok);
  EXPECT_NE(ok.out.find("OK: commit " + commit + " (tree " + tree + ")"), std::string::npos) << ok.out;

  auto as_json = warden({"receipt", "verify", receipt.string(), "--key", verifier_key, "--json"});
  ASSERT_TRUE(as_json.exited_with(0)) << describe(as_json);
  auto j = stdout_json(as_json);
  EXPECT_EQ(j["commit"], commit);
  EXPECT_EQ(j["tree"], tree);
  EXPECT_EQ(j["step_id"], "s2");
  EXPECT_EQ(j["seq"], 1);
  EXPECT_EQ(j["tree_size"], 2);

  // The same receipt on standard output, for a full commit id and no repository.
  auto printed = warden({"receipt", commit, "--ledger", ledger.string()});
  ASSERT_TRUE(printed.exited_with(0)) << describe(printed);
  EXPECT_EQ(nlohmann::json::parse(printed.out), nlohmann::json::parse(read_file(receipt)));
}

TEST_F(ReceiptCliTest, TamperedReceiptOrOtherKeyRefused) {
  ASSERT_TRUE(warden({"receipt", commit, "--ledger", ledger.string(), "-o", receipt.string()}).exited_with(0));
  auto bundle = nlohmann::json::parse(read_file(receipt));

  auto tampered = bundle;
  tampered["ledger"]["record"]["payload"]["step_id"] = "s3";
  write_file(repo.scratch("tampered.json"), tampered.dump(2));
  auto refused = verify(repo.scratch("tampered.json"), verifier_key);
  EXPECT_TRUE(refused.exited_with(1)) << describe(refused);
  EXPECT_NE(refused.out.find("FAILED: receipt ledger record"), std::string::npos) << refused.out;

  write_file(repo.scratch("truncated.json"), read_file(receipt).substr(0, 100));
  // A file that is not JSON at all is malformed input, not a receipt that failed.
  EXPECT_TRUE(verify(repo.scratch("truncated.json"), verifier_key).exited_with(kExitInvalidInput));
  write_file(repo.scratch("empty.json"), "");
  EXPECT_TRUE(verify(repo.scratch("empty.json"), verifier_key).exited_with(kExitInvalidInput));

  std::string other_key = init_ledger(repo.scratch("other"));
  auto wrong_key = verify(receipt, other_key);
  EXPECT_TRUE(wrong_key.exited_with(1)) << describe(wrong_key);
  EXPECT_NE(wrong_key.out.find("DSSE signature"), std::string::npos) << wrong_key.out;
}

TEST_F(ReceiptCliTest, RefusesWhatTheLedgerDoesNotHold) {
  auto unknown = warden({"receipt", "HEAD~1", "--repo", repo.repo().string(), "--ledger", ledger.string()});
  EXPECT_TRUE(unknown.exited_with(kExitNotFound)) << describe(unknown);
  auto short_id = warden({"receipt", commit.substr(0, 8), "--ledger", ledger.string()});
  EXPECT_TRUE(short_id.exited_with(kExitInvalidInput)) << describe(short_id);
  auto no_ledger = warden({"receipt", commit});
  EXPECT_TRUE(no_ledger.exited_with(2)) << describe(no_ledger);

  // A ledger whose record names another tree does not speak for this repository.
  std::filesystem::path lying = repo.scratch("lying");
  init_ledger(lying);
  append_commit_record(lying, repo.git_line({"rev-parse", "HEAD~1^{tree}"}));
  auto mismatch = warden({"receipt", "HEAD", "--repo", repo.repo().string(), "--ledger", lying.string()});
  EXPECT_TRUE(mismatch.exited_with(1)) << describe(mismatch);
  EXPECT_NE(mismatch.err.find("has tree " + tree), std::string::npos) << mismatch.err;
}

// A commit record appended by hand, whose decision refused the step, is no acceptance.
TEST_F(ReceiptCliTest, RefusesACommitRecordItsDecisionDidNotAccept) {
  std::filesystem::path forged = repo.scratch("forged");
  init_ledger(forged);
  append_commit_record(forged, tree, /*accepted=*/false);
  auto refused = warden({"receipt", "HEAD", "--repo", repo.repo().string(), "--ledger", forged.string(), "-o",
                         receipt.string()});
  EXPECT_TRUE(refused.exited_with(1)) << describe(refused);
  EXPECT_NE(refused.err.find("commit record 1 names decision_seq 0, a decision that did not accept the proposal"),
            std::string::npos)
      << refused.err;
  EXPECT_FALSE(std::filesystem::exists(receipt));
}

}  // namespace
}  // namespace warden::test
