// Held-out checks end to end: the real `warden propose --held-out` on a real git repository,
// the checks in the real sandbox. A change that memorizes the visible tests' answers is refused
// held_out_failed and hears only that held-out tests failed; the honest change is accepted.
// Nothing of the bundle (a marker in its test file, its test names) reaches the refusal, the
// events, the plan, the ledger or its blob store before the reveal, nor a later proposal's
// sandbox; replay says NOT VERIFIED until the reveal and re-derives every decision after it.
#include <gtest/gtest.h>
#include <signal.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>
#include <fstream>
#include <sstream>
#include <chrono>
#include <string>

#include "kernel/plan/held_out.h"
#include "tests/kernel/build_fixture.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace warden::test {
namespace {

namespace fs = std::filesystem;

constexpr const char* kMarker = "HELDOUT_7f3a9c_MARKER";
constexpr const char* kVisible =
    "import unittest\n\nfrom textnum import to_int\n\n\nclass ToIntTest(unittest.TestCase):\n"
    "    def test_twelve(self):\n        self.assertEqual(to_int('12'), 12)\n\n"
    "    def test_seven(self):\n        self.assertEqual(to_int('7'), 7)\n";
constexpr const char* kBase = "def to_int(text):\n    return 0\n";
constexpr const char* kHonest = "def to_int(text):\n    return int(text)\n";
constexpr const char* kMemorizing = "def to_int(text):\n    return {'12': 12, '7': 7}.get(text, 0)\n";

// Every byte under `dir` but the vault's: what an executor, an auditor or an export could read.
std::string everything_but_the_vault(const fs::path& dir) {
  std::string all;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file() || e.path().string().find("/held-out/") != std::string::npos) continue;
    std::ifstream in(e.path(), std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    all += s.str();
  }
  return all;
}

class HeldOutCli : public ::testing::Test {
 protected:
  void SetUp() override {
    repo.write("textnum.py", kBase);
    repo.write("tests/__init__.py", "");
    repo.write("tests/test_textnum.py", kVisible);
    // The visible tests fail on the base; the change under test fixes them.
    base = repo.commit_all("base");
    held = repo.scratch("held");
    fs::create_directories(held);
    write_file(held / "test_held.py", std::string("# ") + kMarker + "\nimport unittest\n\nfrom textnum import to_int\n\n\n"
                                      "class HeldOutTest(unittest.TestCase):\n"
                                      "    def test_secret_large(self):\n        self.assertEqual(to_int('345'), 345)\n\n"
                                      "    def test_secret_negative(self):\n        self.assertEqual(to_int('-2'), -2)\n");
    ledger = repo.scratch("ledger");
  }

  ProcessResult propose(const std::string& name, const std::string& code, std::vector<std::string> extra = {}) {
    extra.insert(extra.begin(), {"--held-out-check", "python3 -B -m unittest discover -s held_out -v"});
    return propose_files(name, {{"textnum.py", code}}, extra);
  }

  // `files` as one patch on the base, judged by the visible tests and the bundle with `held_out_args`.
  ProcessResult propose_files(const std::string& name, const std::map<std::string, std::string>& files,
                              const std::vector<std::string>& held_out_args) {
    auto patch = repo.patch_file(base, name + ".patch", files);
    std::vector<std::string> argv = {"propose", patch.string(), "--repo", repo.repo().string(), "--base", base, "--branch",
                                     "warden/" + name, "--ledger", ledger.string(), "--step-timeout", "240", "--json",
                                     "--check", "python3 -B -m unittest discover -s tests -t . -v", "--held-out", held.string()};
    argv.insert(argv.end(), held_out_args.begin(), held_out_args.end());
    return warden(argv);
  }

  // The bundle laid in the visible test directory, run by the visible test command.
  const std::vector<std::string> beside_the_tests = {"--held-out-at", "tests/held_out", "--held-out-check",
                                                     "python3 -B -m unittest discover -s tests -t . -v"};

  GitRepoFixture repo;
  std::string base;
  fs::path held, ledger;
};

TEST_F(HeldOutCli, AMemorizingChangeIsRefusedHearingOnlyACountAndTheHonestOneAccepted) {
  auto cheat = propose("cheat", kMemorizing);
  ASSERT_TRUE(cheat.exited_with(1)) << describe(cheat);
  json refusal = stdout_json(cheat);
  ASSERT_EQ(refusal["decision"], "refused") << refusal.dump();
  EXPECT_EQ(refusal["refusal"]["codes"], json::array({"held_out_failed"})) << refusal.dump();
  EXPECT_NE(refusal.dump().find("the held-out tests do not all pass"), std::string::npos) << refusal.dump();
  const std::string digest = refusal["held_out"];
  // What the executor and anyone reading the ledger hear: no name, no output, no file.
  for (const std::string& secret : {std::string(kMarker), std::string("test_secret_large")}) {
    EXPECT_EQ(cheat.out.find(secret), std::string::npos) << secret << " in the output";
    EXPECT_EQ(cheat.err.find(secret), std::string::npos) << secret << " in stderr";
    EXPECT_EQ(everything_but_the_vault(ledger).find(secret), std::string::npos) << secret << " in the ledger";
  }
  // The vault is Warden's alone.
  EXPECT_EQ(fs::status(ledger / "held-out").permissions() & fs::perms::all, fs::perms::owner_all);

  auto honest = propose("honest", kHonest);
  ASSERT_TRUE(honest.exited_with(0)) << describe(honest);
  EXPECT_EQ(stdout_json(honest)["held_out"], digest) << "one bundle, one digest, whatever proposal it judges";

  // Replay re-derives both decisions from the recorded counts, but cannot vouch for them yet.
  auto before = warden({"replay", ledger.string(), "--json"});
  EXPECT_TRUE(before.exited_with(1)) << describe(before);
  EXPECT_EQ(stdout_json(before)["pending_reveal"], 2) << before.out;
  EXPECT_EQ(stdout_json(before)["ok"], true) << before.out;
  EXPECT_EQ(stdout_json(before)["verified"], false) << before.out;

  auto reveal = warden({"held-out", "reveal", digest, "--ledger", ledger.string(), "--json"});
  ASSERT_TRUE(reveal.exited_with(0)) << describe(reveal);
  EXPECT_EQ(stdout_json(reveal)["record"]["runs"].size(), 2u) << reveal.out;
  auto after = warden({"replay", ledger.string(), "--json", "--repo", repo.repo().string()});
  EXPECT_TRUE(after.exited_with(0)) << describe(after);
  EXPECT_EQ(stdout_json(after)["revealed"], 2) << after.out;
  EXPECT_EQ(stdout_json(after)["pending_reveal"], 0) << after.out;
  EXPECT_NE(everything_but_the_vault(ledger).find(kMarker), std::string::npos) << "revealed: the bundle is in the ledger now";
}

// A crash between the reveal record and the vault's "revealed" marker: the next proposal with
// the same tests must not be judged by the bundle everyone can now read. It gets a fresh salt,
// so a fresh digest, and replay verifies the first bundle's decision and waits on the second.
TEST_F(HeldOutCli, ABundleRevealedInTheLedgerIsNotReusedThoughTheVaultMissedIt) {
  auto cheat = propose("cheat", kMemorizing);
  ASSERT_TRUE(cheat.exited_with(1)) << describe(cheat);
  const std::string first = stdout_json(cheat)["held_out"];
  ASSERT_TRUE(warden({"held-out", "reveal", first, "--ledger", ledger.string()}).exited_with(0));
  const fs::path marker = ledger / "held-out" / first.substr(7) / "revealed";
  ASSERT_TRUE(fs::exists(marker));
  fs::remove(marker);

  auto honest = propose("honest", kHonest);
  ASSERT_TRUE(honest.exited_with(0)) << describe(honest);
  EXPECT_NE(stdout_json(honest)["held_out"], first) << "a revealed bundle judged another proposal";
  auto replayed = warden({"replay", ledger.string(), "--json"});
  EXPECT_TRUE(replayed.exited_with(1)) << describe(replayed);
  EXPECT_EQ(stdout_json(replayed)["ok"], true) << replayed.out;
  EXPECT_EQ(stdout_json(replayed)["revealed"], 1) << replayed.out;
  EXPECT_EQ(stdout_json(replayed)["pending_reveal"], 1) << replayed.out;
}

// The vault is evidence until the reveal: a refused proposal's sealed run that goes missing
// (lost, or removed so no one sees the failure) leaves replay unable to agree with the ledger,
// and a sealed run swapped for another proposal's (a pass passed off for a failure) is refused
// at the reveal, since its bytes no longer hash to its name.
TEST_F(HeldOutCli, ASealedRunLostOrSwappedBeforeTheRevealIsCaught) {
  auto cheat = propose("cheat", kMemorizing);
  ASSERT_TRUE(cheat.exited_with(1)) << describe(cheat);
  const std::string digest = stdout_json(cheat)["held_out"];
  auto honest = propose("honest", kHonest);
  ASSERT_TRUE(honest.exited_with(0)) << describe(honest);
  const fs::path runs = ledger / "held-out" / digest.substr(7) / "runs";
  std::vector<fs::path> sealed;
  for (const auto& e : fs::directory_iterator(runs)) sealed.push_back(e.path());
  ASSERT_EQ(sealed.size(), 2u);
  // Which one is the cheat's: the run whose result does not pass.
  const fs::path failing = read_file(sealed[0]).find("\"failed\"") != std::string::npos ? sealed[0] : sealed[1];
  const fs::path passing = failing == sealed[0] ? sealed[1] : sealed[0];

  const fs::path kept = repo.scratch("kept.json");
  fs::copy_file(failing, kept);
  fs::copy_file(passing, failing, fs::copy_options::overwrite_existing);
  auto swapped = warden({"held-out", "reveal", digest, "--ledger", ledger.string()});
  EXPECT_FALSE(swapped.exited_with(0)) << describe(swapped);

  fs::remove(failing);
  auto reveal = warden({"held-out", "reveal", digest, "--ledger", ledger.string()});
  ASSERT_TRUE(reveal.exited_with(0)) << describe(reveal);
  auto replayed = warden({"replay", ledger.string(), "--json"});
  EXPECT_TRUE(replayed.exited_with(1)) << describe(replayed);
  const json report = stdout_json(replayed);
  EXPECT_EQ(report["ok"], false) << replayed.out;
  EXPECT_NE(report["problem"]["message"].get<std::string>().find("holds no run"), std::string::npos) << replayed.out;
}

// The tested program reads the bundle in its held-out run and writes it everywhere it can: to its
// output (sealed with the run), the workspace, /tmp and /dev/shm. The next proposal's program looks
// in all of them and finds nothing.
TEST_F(HeldOutCli, WhatTheTestedProgramLeaksStaysSealedAndOutOfTheNextProposalsReach) {
  const std::string leaker =
      "import glob, os\n"
      "for p in glob.glob('held_out/*.py'):\n"
      "    data = open(p).read()\n"
      "    print(data)\n"
      "    for d in ('/tmp', '/dev/shm', '.'):\n"
      "        try:\n"
      "            open(os.path.join(d, 'leak.txt'), 'w').write(data)\n"
      "        except OSError:\n"
      "            pass\n" +
      std::string(kMemorizing);
  auto leak = propose("leak", leaker);
  ASSERT_TRUE(leak.exited_with(1)) << describe(leak);
  EXPECT_EQ(leak.out.find(kMarker), std::string::npos);
  EXPECT_EQ(everything_but_the_vault(ledger).find(kMarker), std::string::npos) << "the leaked output is sealed";

  const std::string looker =
      "import sys\n"
      "for p in ('/tmp/leak.txt', '/dev/shm/leak.txt', 'leak.txt'):\n"
      "    try:\n"
      "        sys.stdout.write(open(p).read())\n"
      "    except OSError:\n"
      "        pass\n"
      "def to_int(text):\n    return int(text) if text != '7' else 8\n";
  // Without the bundle: its visible run fails, and the refusal shows that run's output.
  auto patch = repo.patch_file(base, "look.patch", {{"textnum.py", looker}});
  auto look = warden({"propose", patch.string(), "--repo", repo.repo().string(), "--base", base, "--branch", "warden/look",
                      "--ledger", ledger.string(), "--step-timeout", "240", "--json", "--check",
                      "python3 -B -m unittest discover -s tests -t . -v"});
  ASSERT_TRUE(look.exited_with(1)) << describe(look);
  EXPECT_EQ(look.out.find(kMarker), std::string::npos) << look.out;
}

// A new test package that rebinds the function under test when discovery imports it, before
// the held-out tests laid in tests/held_out (unittest walks the directory in name order): the
// held-out run tests the proposal without its test changes, so the memorizing code faces the
// held-out tests alone.
TEST_F(HeldOutCli, ANewTestPackageCannotRebindWhatTheHeldOutTestsCall) {
  write_file(held / "__init__.py", "");
  auto r = propose_files("rebind",
                         {{"textnum.py", kMemorizing},
                          {"tests/a_helpers/__init__.py", "import textnum\ntextnum.to_int = lambda text: int(text)\n"},
                          {"tests/a_helpers/test_more.py", "import unittest\n\n\nclass More(unittest.TestCase):\n"
                                                           "    def test_seven(self):\n        self.assertTrue(True)\n"}},
                         beside_the_tests);
  ASSERT_TRUE(r.exited_with(1)) << describe(r);
  EXPECT_EQ(stdout_json(r)["refusal"]["codes"], json::array({"held_out_failed"})) << r.out;
}

// A held-out check that never reaches the bundle (unittest does not enter a directory without
// __init__.py) reports the visible tests only: that is no pass, and the owner reads why in the
// vault. What the ledger commits to for the run is salted: its result's digest is not in it.
TEST_F(HeldOutCli, ACheckThatNeverRunsTheBundlePassesNothingAndTheRunsDigestIsSalted) {
  auto r = propose_files("vacuous", {{"textnum.py", kHonest}}, beside_the_tests);
  ASSERT_TRUE(r.exited_with(1)) << describe(r);
  EXPECT_EQ(stdout_json(r)["refusal"]["codes"], json::array({"held_out_failed"})) << r.out;
  const std::string digest = stdout_json(r)["held_out"];
  const fs::path vault = ledger / "held-out" / digest.substr(7);
  EXPECT_NE(read_file(vault / "errors.log").find("reported no test of the bundle"), std::string::npos);

  auto reveal = warden({"held-out", "reveal", digest, "--ledger", ledger.string(), "--json"});
  ASSERT_TRUE(reveal.exited_with(0)) << describe(reveal);
  const json revealed = stdout_json(reveal)["record"];
  const auto runs = payloads(ledger_records(ledger), "held_out_run");
  ASSERT_EQ(runs.size(), 1u);
  ASSERT_EQ(revealed["runs"].size(), 1u);
  const auto result = Digest::parse(revealed["runs"][0]["run_result_sha256"].get<std::string>());
  ASSERT_TRUE(result);
  EXPECT_NE(runs[0]["result_commitment"], revealed["runs"][0]["run_result_sha256"]);
  EXPECT_EQ(runs[0]["result_commitment"], kernel::sealed_result_commitment(revealed["salt"].get<std::string>(), *result).str());
  auto replayed = warden({"replay", ledger.string(), "--json"});
  EXPECT_TRUE(replayed.exited_with(0)) << describe(replayed);
}

// Code that skips the held-out tests it cannot answer is refused: a skip proves nothing.
TEST_F(HeldOutCli, SkippingWhatItCannotAnswerIsNoPass) {
  auto skip = propose("skip", "import unittest\n_KNOWN = {'12': 12, '7': 7}\n\n\ndef to_int(text):\n"
                              "    if text not in _KNOWN:\n        raise unittest.SkipTest('not yet')\n    return _KNOWN[text]\n");
  ASSERT_TRUE(skip.exited_with(1)) << describe(skip);
  EXPECT_EQ(stdout_json(skip)["refusal"]["codes"], json::array({"held_out_failed"})) << skip.out;
}

// A proposal may not write where the bundle is laid; what it puts there (a directory named as
// a held-out file would be) gives way to the bundle, and no error names a held-out file.
TEST_F(HeldOutCli, AProposalMayNotTouchWhereTheBundleIsLaid) {
  auto dirs = repo.patch_file(base, "dirs.patch", {{"textnum.py", kHonest}, {"held_out/test_held.py/x", "1\n"}, {"held_out/test_other.py/x", "1\n"}});
  auto probe = warden({"propose", dirs.string(), "--repo", repo.repo().string(), "--base", base, "--branch", "warden/dirs", "--ledger",
                       ledger.string(), "--step-timeout", "240", "--json", "--check", "python3 -B -m unittest discover -s tests -t . -v",
                       "--held-out", held.string(), "--held-out-check", "python3 -B -m unittest discover -s held_out -v"});
  ASSERT_TRUE(probe.exited_with(1)) << describe(probe);
  EXPECT_EQ(stdout_json(probe)["decision"], "refused") << probe.out;
  auto patch = repo.patch_file(base, "shadow.patch", {{"textnum.py", kHonest}, {"held_out/test_held.py", "import unittest\n"}});
  auto r = warden({"propose", patch.string(), "--repo", repo.repo().string(), "--base", base, "--branch", "warden/shadow",
                   "--ledger", ledger.string(), "--step-timeout", "240", "--json", "--check",
                   "python3 -B -m unittest discover -s tests -t . -v", "--held-out", held.string(), "--held-out-check",
                   "python3 -B -m unittest discover -s held_out -v"});
  ASSERT_TRUE(r.exited_with(1)) << describe(r);
  EXPECT_NE(stdout_json(r)["refusal"].dump().find("where the held-out checks' files are laid"), std::string::npos) << r.out;
}

TEST_F(HeldOutCli, ABundleNeedsItsChecksAndAReadableDirectory) {
  auto patch = repo.patch_file(base, "x.patch", {{"textnum.py", kHonest}});
  auto no_check = warden({"propose", patch.string(), "--repo", repo.repo().string(), "--base", base, "--ledger", ledger.string(),
                          "--check", "true", "--held-out", held.string()});
  EXPECT_TRUE(no_check.exited_with(2)) << describe(no_check) << "a missing flag is a usage error";
  EXPECT_NE(no_check.err.find("--held-out needs --held-out-check"), std::string::npos) << no_check.err;
  auto missing = warden({"propose", patch.string(), "--repo", repo.repo().string(), "--base", base, "--ledger", ledger.string(),
                         "--check", "true", "--held-out", (held / "nope").string(), "--held-out-check", "true"});
  EXPECT_FALSE(missing.exited_with(0)) << describe(missing);
  EXPECT_NE(missing.err.find("not a directory"), std::string::npos) << missing.err;
  fs::create_symlink("/etc/passwd", held / "link.py");
  auto link = warden({"propose", patch.string(), "--repo", repo.repo().string(), "--base", base, "--ledger", ledger.string(),
                      "--check", "true", "--held-out", held.string(), "--held-out-check", "true"});
  EXPECT_FALSE(link.exited_with(0)) << describe(link);
  EXPECT_NE(link.err.find("not a regular file"), std::string::npos) << link.err;
}

// A blueprint's held-out tests (examples/calculator/blueprint-held-out.json): sealed when the
// build starts, judging evaluate()'s step and every step after it, revealed when the run ends.
class HeldOutBuild : public ::testing::Test {
 protected:
  void SetUp() override {
    example = dir.path() / "calculator";
    fs::copy(fs::path(WARDEN_SOURCE_DIR) / "examples" / "calculator", example, fs::copy_options::recursive);
    blueprint = example / "blueprint-held-out.json";
  }

  // The blueprint with the arithmetic test step replaced by one whose check never ends.
  fs::path hanging_blueprint() {
    json b = json::parse(read_file(blueprint));
    for (json& t : b["tests"]) {
      if (t["name"] == "test_arithmetic") {
        t.erase("content_file");
        t["content"] = "import time\n\nfrom calculator.arithmetic import add\n\n\ndef test_waits():\n    time.sleep(600)\n    assert add(1, 1) == 2\n";
      }
    }
    b["constraints"]["step_timeout_ms"] = 900000;
    const fs::path out = example / "blueprint-hangs.json";
    write_file(out, b.dump(2));
    return out;
  }

  size_t count(const fs::path& ledger, std::string_view kind) {
    auto r = warden({"ledger", "show", ledger.string(), "--kind", std::string(kind), "--json"});
    if (!r.exited_with(0)) return 0;
    size_t n = 0;
    for (const json& line : stdout_json_lines(r)) n += line.value("type", "") == "record" ? 1 : 0;
    return n;
  }

  TempDir dir;
  fs::path example, blueprint;
};

TEST_F(HeldOutBuild, TheMemorizingDraftIsRefusedAndTheBundleRevealedWhenTheRunEnds) {
  const fs::path out = dir.path() / "out";
  auto built = warden({"build", blueprint.string(), "--out", out.string(), "--json"});
  ASSERT_TRUE(built.exited_with(0)) << describe(built);
  const json summary = stdout_json(built);
  EXPECT_EQ(summary["status"], "completed") << built.out;
  std::vector<std::string> outcomes;
  for (const json& v : summary["verdicts"]) {
    outcomes.push_back(v["step_id"].get<std::string>() + (v["accepted"] ? "=accepted" : "=" + v["reasons"].dump()));
  }
  EXPECT_EQ(outcomes, (std::vector<std::string>{"s1=accepted", "s2=accepted", "s3=[\"held_out_failed\"]", "s3=accepted",
                                                "s4=accepted", "s5=accepted"}));
  ASSERT_EQ(summary["held_out"]["revealed"], true) << built.out;
  const std::string digest = summary["held_out"]["sha256"];

  const auto records = ledger_records(out / "ledger");
  // The plan commits to the bundle by digest and judges evaluate()'s step on; the reveal comes
  // after the run's last status.
  const auto plans = payloads(records, "plan_proposal");
  ASSERT_EQ(plans.size(), 1u);
  EXPECT_EQ(plans[0]["plan"]["held_out"]["sha256"], digest);
  EXPECT_EQ(plans[0]["plan"]["held_out"]["steps"], json::array({"s3", "s4", "s5"}));
  EXPECT_EQ(payloads(records, "held_out_run").size(), 4u) << "s3 twice, s4, s5; not s1 or s2";
  size_t last_status = 0, reveal = 0;
  for (size_t i = 0; i < records.size(); ++i) {
    if (records[i]["kind"] == "run_status") last_status = i;
    if (records[i]["kind"] == "held_out_reveal") reveal = i;
  }
  EXPECT_GT(reveal, last_status);

  auto replayed = warden({"replay", (out / "ledger").string(), "--repo", (out / "repo").string(), "--rerun", "--json"});
  ASSERT_TRUE(replayed.exited_with(0)) << describe(replayed);
  const json report = stdout_json(replayed);
  EXPECT_EQ(report["revealed"], 4) << replayed.out;
  EXPECT_EQ(report["pending_reveal"], 0) << replayed.out;
  EXPECT_EQ(report["reruns"], 10) << "6 proposal runs and 4 held-out runs executed again: " << replayed.out;

  // The last step's receipt names the bundle and proves its reveal under the same checkpoint.
  const std::string tip = git_in(out / "repo", {"rev-parse", "refs/heads/warden/calculator-held-out"}).substr(0, 40);
  const fs::path receipt = dir.path() / "receipt.json";
  auto made = warden({"receipt", tip, "--ledger", (out / "ledger").string(), "-o", receipt.string()});
  ASSERT_TRUE(made.exited_with(0)) << describe(made);
  const std::string key = (out / "ledger" / "signer.pub").string();
  auto verified = warden({"receipt", "verify", receipt.string(), "--key", key, "--json"});
  ASSERT_TRUE(verified.exited_with(0)) << describe(verified);
  EXPECT_EQ(stdout_json(verified)["held_out"]["sha256"], digest) << verified.out;
  EXPECT_EQ(stdout_json(verified)["held_out"]["revealed"], true) << verified.out;
  // Another record passed off as the reveal, or the reveal dropped from a receipt made after it:
  // the first fails, the second says not revealed.
  json forged = json::parse(read_file(receipt));
  forged["held_out_reveal"]["record"] = forged["ledger"]["record"];
  write_file(receipt, forged.dump());
  EXPECT_TRUE(warden({"receipt", "verify", receipt.string(), "--key", key}).exited_with(1));
  forged.erase("held_out_reveal");
  write_file(receipt, forged.dump());
  auto dropped = warden({"receipt", "verify", receipt.string(), "--key", key, "--json"});
  ASSERT_TRUE(dropped.exited_with(0)) << describe(dropped);
  EXPECT_EQ(stdout_json(dropped)["held_out"]["revealed"], false) << dropped.out;
}

// An executor that looks for the held-out tests everywhere it might reach them — the request
// it is given (plan step, refusals), the blueprint's folder, the bundle's directory and the
// ledger's vault by absolute path — and gives up the run the moment it finds a byte of them.
// It finds nothing: the build decides as the plan executor's does.
TEST_F(HeldOutBuild, ACommandExecutorReachesNothingOfTheBundle) {
  const fs::path out = dir.path() / "out";
  const std::string snoop =
      "import json, os, sys\n"
      "SECRET = 'test_nested_parentheses'\n"
      "raw = sys.stdin.read()\n"
      "if SECRET in raw:\n"
      "    sys.exit('FOUND in the request')\n"
      "places = ['held_out/test_parse_held_out.py', '../held_out/test_parse_held_out.py', '" + (example / "held_out" / "test_parse_held_out.py").string() + "']\n"
      "for root in ('" + (out / "ledger").string() + "', '" + example.string() + "', '/tmp'):\n"
      "    for d, _, names in os.walk(root):\n"
      "        places += [os.path.join(d, n) for n in names]\n"
      "for p in places:\n"
      "    try:\n"
      "        if SECRET in open(p, errors='replace').read():\n"
      "            sys.exit('FOUND at ' + p)\n"
      "    except OSError:\n"
      "        pass\n"
      "sys.stdin = __import__('io').StringIO(raw)\n"
      "sys.argv = ['agent.py']\n"
      "exec(compile(open('agent.py').read(), 'agent.py', 'exec'))\n";
  write_file(example / "snoop.py", snoop);
  auto built = warden({"build", blueprint.string(), "--out", out.string(), "--json", "--executor", "command:python3 snoop.py agent.py"});
  ASSERT_TRUE(built.exited_with(0)) << describe(built);
  const json summary = stdout_json(built);
  EXPECT_EQ(summary["status"], "completed") << built.out;
  EXPECT_EQ(summary["verdicts"].size(), 6u) << built.out;
  EXPECT_EQ(built.out.find("FOUND"), std::string::npos) << built.out;
}

// What a person reads: each run's line says which run it is, a held-out run says only whether
// it passed, and an acceptance says which checks it did not hold against the proposal.
TEST_F(HeldOutBuild, EachRunLineSaysWhichRunItIs) {
  auto built = warden({"build", blueprint.string(), "--out", (dir.path() / "out").string()});
  ASSERT_TRUE(built.exited_with(0)) << describe(built);
  for (const char* line : {"s1, base run: tests=failed", "s1 attempt 1: accepted (not held against it: tests=failed",
                           "s3 attempt 1, held-out run: did not pass", "s3 attempt 1: refused: held_out_failed",
                           "s3 attempt 2, held-out run: passed", "s5 attempt 1, oracle run (its test changes left out): tests=passed",
                           "held-out   sha256:"}) {
    EXPECT_NE(built.out.find(line), std::string::npos) << line << "\n" << built.out;
  }
  EXPECT_EQ(built.out.find("attempt 0"), std::string::npos) << built.out;
}

TEST_F(HeldOutBuild, AKilledRunIsRevealedAtRecoveryAndOneWhoseBundleIsLostFailsReplay) {
  const fs::path out = dir.path() / "out", ledger = out / "ledger";
  Child build = Child::spawn({warden_binary(), "build", hanging_blueprint().string(), "--out", out.string(), "--run-id", "hangs"});
  // s1..s3 committed; s4's check sleeps.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(4);
  while (count(ledger, "commit") < 3 && std::chrono::steady_clock::now() < deadline) {
    build.pump(std::chrono::steady_clock::now() + std::chrono::milliseconds(300));
  }
  ASSERT_EQ(count(ledger, "commit"), 3u) << build.out() << build.err();
  build.kill(SIGKILL);
  (void)build.wait();

  // Dead, its end not recorded yet: listed with its last status, in a column of the width
  // that takes, the start time after.
  auto listed = warden({"runs", "list", ledger.string()});
  ASSERT_TRUE(listed.exited_with(0)) << describe(listed);
  EXPECT_NE(listed.out.find("interrupted (running)  20"), std::string::npos) << listed.out;

  // The run never ended: its held-out decisions are pending, not failed.
  auto live = warden({"replay", ledger.string(), "--json"});
  EXPECT_TRUE(live.exited_with(1)) << describe(live);
  EXPECT_EQ(stdout_json(live)["ok"], true) << live.out;
  EXPECT_EQ(stdout_json(live)["pending_reveal"], 2) << live.out;

  // A copy whose vault lost the bundle: recovery ends the run but cannot reveal, and replay
  // fails at the run's end.
  const fs::path lost = dir.path() / "lost";
  fs::copy(ledger, lost, fs::copy_options::recursive);
  for (const auto& e : fs::directory_iterator(lost / "held-out")) fs::remove(e.path() / "bundle.json");
  auto recovered_lost = warden({"run", "recover", "hangs", "--ledger", lost.string(), "--json"});
  ASSERT_TRUE(recovered_lost.exited_with(0)) << describe(recovered_lost);
  EXPECT_NE(recovered_lost.out.find("could not be revealed"), std::string::npos) << recovered_lost.out;
  auto failed = warden({"replay", lost.string(), "--json"});
  EXPECT_TRUE(failed.exited_with(1)) << describe(failed);
  EXPECT_EQ(stdout_json(failed)["ok"], false) << failed.out;
  EXPECT_NE(stdout_json(failed)["problem"]["message"].get<std::string>().find("no reveal of it follows the run's end"),
            std::string::npos) << failed.out;

  // The ledger itself: recovery records the end, then the reveal; replay checks every decision.
  auto recovered = warden({"run", "recover", "hangs", "--ledger", ledger.string(), "--repo", (out / "repo").string(), "--json"});
  ASSERT_TRUE(recovered.exited_with(0)) << describe(recovered);
  EXPECT_NE(recovered.out.find("revealed at record"), std::string::npos) << recovered.out;
  auto replayed = warden({"replay", ledger.string(), "--repo", (out / "repo").string(), "--json"});
  EXPECT_TRUE(replayed.exited_with(0)) << describe(replayed);
  EXPECT_EQ(stdout_json(replayed)["revealed"], 2) << replayed.out;
}

}  // namespace
}  // namespace warden::test
