// Held-out bundles (kernel/plan/held_out.h), their vault and their reveal: the digest commits to
// every file and a salt; the vault is Warden's alone; a reveal is held to the commitment, file
// by file, salt and sealed run, and any difference is named.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include "kernel/plan/held_out.h"
#include "kernel/record/held_out_reveal.h"
#include "kernel/judge/held_out_vault.h"
#include "ledger/ledger.h"
#include "tests/support/files.h"
#include "tests/support/temp_dir.h"

namespace warden::kernel {
namespace {

namespace fs = std::filesystem;

HeldOutBundle bundle_of(const fs::path& dir, uint64_t seed = 7) {
  SeededRandomSource random(seed);
  auto b = read_held_out_dir(dir, "held_out/", random);
  EXPECT_TRUE(b) << (b ? "" : b.error().message);
  return b.value_or(HeldOutBundle{});
}

class HeldOut : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(tmp / "bundle" / "data");
    test::write_file(tmp / "bundle" / "test_held.py", "def test_x():\n    assert True\n");
    test::write_file(tmp / "bundle" / "data" / "cases.txt", "1 2\n");
  }
  test::TempDir tmp;
};

TEST_F(HeldOut, TheDigestCommitsToEveryFileItsPlaceAndASalt) {
  const HeldOutBundle a = bundle_of(tmp / "bundle");
  EXPECT_EQ(a.at, "held_out");
  ASSERT_EQ(a.files.size(), 2u);
  EXPECT_EQ(a.files[0].path, "data/cases.txt");
  EXPECT_EQ(a.digest(), bundle_of(tmp / "bundle").digest()) << "the same seed, the same salt, the same digest";
  EXPECT_NE(a.digest(), bundle_of(tmp / "bundle", 8).digest()) << "another salt";
  HeldOutBundle changed = a;
  changed.files[0].content = "1 3\n";
  EXPECT_NE(changed.digest(), a.digest());
  changed = a;
  changed.at = "elsewhere";
  EXPECT_NE(changed.digest(), a.digest());
  auto round = HeldOutBundle::from_json(a.to_json());
  ASSERT_TRUE(round) << round.error().message;
  EXPECT_EQ(round->digest(), a.digest());
  EXPECT_EQ(a.listing().dump().find("1 2"), std::string::npos) << "the listing names files by digest only";
}

TEST_F(HeldOut, WhatCannotBeABundleIsRefused) {
  SeededRandomSource random(1);
  EXPECT_FALSE(read_held_out_dir(tmp / "none", "held_out", random));
  EXPECT_FALSE(read_held_out_dir(tmp / "bundle", "../out", random));
  EXPECT_FALSE(read_held_out_dir(tmp / "bundle", ".git/x", random));
  EXPECT_FALSE(read_held_out_dir(tmp / "bundle", "x/.GIT/y", random));
  fs::create_symlink("/etc/passwd", tmp / "bundle" / "link");
  auto linked = read_held_out_dir(tmp / "bundle", "held_out", random);
  ASSERT_FALSE(linked);
  EXPECT_NE(linked.error().message.find("not a regular file"), std::string::npos) << linked.error().message;
  fs::remove(tmp / "bundle" / "link");
  // A test marked as an expected failure (or skipped) would refuse every proposal, the honest
  // one too: the owner hears it when sealing, with the line.
  test::write_file(tmp / "bundle" / "test_xfail.py", "import unittest\n\nclass T(unittest.TestCase):\n    @unittest.expectedFailure\n"
                                                      "    def test_known_bug(self):\n        self.fail()\n");
  auto marked = read_held_out_dir(tmp / "bundle", "held_out", random);
  ASSERT_FALSE(marked);
  EXPECT_NE(marked.error().message.find("test_xfail.py line 4: "), std::string::npos) << marked.error().message;
}

TEST_F(HeldOut, TheVaultIsWardensAloneAndHoldsItsBundlesToTheirDigests) {
  const HeldOutBundle b = bundle_of(tmp / "bundle");
  HeldOutVault vault(tmp / "ledger");
  ASSERT_TRUE(vault.seal(b));
  struct stat st {};
  ASSERT_EQ(::stat((tmp / "ledger" / "held-out").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  auto opened = vault.open(b.digest());
  ASSERT_TRUE(opened) << opened.error().message;
  EXPECT_EQ(opened->digest(), b.digest());
  EXPECT_EQ(vault.open(Digest::parse("sha256:" + std::string(64, 'a')).value()).error().code, Errc::not_found);
  // Bytes changed under the vault are not the committed bundle.
  const fs::path file = tmp / "ledger" / "held-out" / b.digest().str().substr(7) / "bundle.json";
  std::string text = test::read_file(file);
  const std::string from = "\"at\":\"held_out\"";
  text.replace(text.find(from), from.size(), "\"at\":\"held_in_\"");
  test::write_file(file, text);
  auto tampered = vault.open(b.digest());
  ASSERT_FALSE(tampered);
  EXPECT_EQ(tampered.error().code, Errc::corrupt);
}

TEST_F(HeldOut, TheSameTestsSealedAgainKeepTheirDigestUntilRevealed) {
  const HeldOutBundle b = bundle_of(tmp / "bundle");
  HeldOutVault vault(tmp / "ledger");
  EXPECT_FALSE(vault.sealed_like(b));
  ASSERT_TRUE(vault.seal(b));
  const HeldOutBundle again = bundle_of(tmp / "bundle", 99);  // another salt
  ASSERT_NE(again.digest(), b.digest());
  auto like = vault.sealed_like(again);
  ASSERT_TRUE(like);
  EXPECT_EQ(like->digest(), b.digest());
  HeldOutBundle other = again;
  other.files[1].content += "\n";
  EXPECT_FALSE(vault.sealed_like(other)) << "other tests are another bundle";
  ASSERT_TRUE(vault.mark_revealed(b.digest()));
  EXPECT_FALSE(vault.sealed_like(again)) << "revealed tests are public: a new salt, a new bundle";
}

TEST_F(HeldOut, ARevealIsHeldToItsCommitmentFileBySaltAndRun) {
  const HeldOutBundle b = bundle_of(tmp / "bundle");
  HeldOutVault vault(tmp / "ledger");
  ASSERT_TRUE(vault.seal(b));
  RunResult run;
  run.tree = std::string(40, 'a');
  SealedRun sealed{run.deterministic_digest(), run.deterministic_json(), {}};
  ASSERT_TRUE(vault.seal_run(b.digest(), sealed));
  LogicalClock clock;
  auto signer = NoteSigner::generate("test.local/held-out").value();
  ASSERT_TRUE(Ledger::create(tmp / "ledger", LedgerCreateOptions{signer.name(), signer.verifier().encoded()}));
  auto ledger = Ledger::open(tmp / "ledger", Ledger::Mode::read_write, clock);
  ASSERT_TRUE(ledger) << ledger.error().message;
  auto revealed = reveal_held_out(*ledger, vault, b.digest());
  ASSERT_TRUE(revealed) << revealed.error().message;
  auto snap = ledger->snapshot().value();
  auto blob = [&](const Digest& d) { return snap.blob(d); };
  auto read = read_reveal(revealed->revealed, blob);
  ASSERT_TRUE(read) << read.error().message;
  EXPECT_EQ(read->bundle.digest(), b.digest());
  EXPECT_EQ(read->runs.size(), 1u);

  HeldOutRevealRecord salted = revealed->revealed;
  salted.salt = std::string(64, '0');
  EXPECT_NE(read_reveal(salted, blob).error().message.find("not to the committed"), std::string::npos);
  HeldOutRevealRecord swapped = revealed->revealed;
  swapped.files[0].blob = swapped.files[1].blob;
  EXPECT_FALSE(read_reveal(swapped, blob));
  HeldOutRevealRecord lost = revealed->revealed;
  lost.runs[0].blob = sha256("another result");
  EXPECT_NE(read_reveal(lost, blob).error().message.find("missing"), std::string::npos);
  HeldOutRevealRecord other = revealed->revealed;
  other.runs[0].run_result_sha256 = sha256("x");
  EXPECT_NE(read_reveal(other, blob).error().message.find("hashes to"), std::string::npos);
}

TEST(HeldOutFailures, CountsFailingTestsElseFailingChecks) {
  HeldOutBundle bundle;
  bundle.files = {{"test_secret.py", 0100644, "x"}, {"data/cases.json", 0100644, "{}"}};
  RunResult run;
  CheckResult with_tests;
  with_tests.verdict = kFailed;
  with_tests.tests = {{"test_secret.T.a", "passed"}, {"b", "failed"}, {"c", "error"}, {"d", "skipped"}};
  CheckResult without;
  without.verdict = kFailed;
  CheckResult passing;
  passing.verdict = kPassed;
  run.checks = {with_tests, without, passing};
  EXPECT_EQ(held_out_failures(run, bundle), 4) << "a skipped held-out test (SkipTest for inputs the code does not handle) proves nothing";
  run.checks = {passing};
  EXPECT_EQ(held_out_failures(run, bundle), 0) << "a check judged by its exit status is taken at its word";
  CheckResult found_none = passing;
  found_none.runs = {CheckRun{}};
  found_none.runs[0].report = "parsed";
  run.checks = {found_none};
  EXPECT_EQ(held_out_failures(run, bundle), 1) << "a check that reports tests and reported none ran nothing of the bundle";
  // A check that reports only tests of other files never reached the bundle.
  CheckResult elsewhere = found_none;
  elsewhere.tests = {{"tests.test_visible.T.test_one", "passed"}};
  run.checks = {elsewhere};
  EXPECT_EQ(held_out_failures(run, bundle), 1) << "passing visible tests is not passing the held-out ones";
  for (const char* id : {"held_out/test_secret.py::test_one", "test_secret.T.test_one", "data.cases::case_1", "data/cases::2"}) {
    CheckResult ran = found_none;
    ran.tests = {{id, "passed"}};
    run.checks = {ran};
    EXPECT_EQ(held_out_failures(run, bundle), 0) << id << " names a bundle file";
  }
}

}  // namespace
}  // namespace warden::kernel
