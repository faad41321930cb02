// Golden runs: every example rebuilt with the logical clock and the test key must give an
// export byte-identical to the one committed in tests/golden/ (tools/refresh-goldens makes
// them on purpose); each golden replays; and tampered copies fail at the right record —
// both a flipped byte (the chain catches it) and a forged decision re-signed with the key
// (only recomputing decide() catches that).
#include <gtest/gtest.h>
#include <netdb.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <map>
#include <stdexcept>

#include "common/canonical_json.h"
#include "common/clock.h"
#include "common/sha256.h"
#include "ledger/ledger.h"
#include "ledger/note.h"
#include "tests/support/files.h"
#include "tests/support/temp_dir.h"
#include "tests/support/warden_cli.h"

namespace warden::kernel {
namespace {

namespace fs = std::filesystem;
using test::describe;
using test::TempDir;
using test::warden;

const fs::path kSource = WARDEN_SOURCE_DIR;
const fs::path kGolden = kSource / "tests" / "golden";

std::vector<std::string> goldens() {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(kGolden)) {
    if (e.is_directory() && fs::exists(e.path() / "ledger.json")) out.push_back(e.path().filename().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Every example blueprint by golden name: examples/<dir>/blueprint.json is "<dir>", and
// examples/<dir>/blueprint-<variant>.json "<dir>-<variant>" (tools/refresh-goldens names them so).
std::map<std::string, fs::path> example_blueprints() {
  std::map<std::string, fs::path> out;
  for (const auto& dir : fs::directory_iterator(kSource / "examples")) {
    if (!dir.is_directory()) continue;
    for (const auto& f : fs::directory_iterator(dir.path())) {
      const std::string name = f.path().filename().string();
      if (name == "blueprint.json") out[dir.path().filename().string()] = f.path();
      if (name.starts_with("blueprint-") && name.ends_with(".json")) {
        out[dir.path().filename().string() + "-" + name.substr(10, name.size() - 15)] = f.path();
      }
    }
  }
  return out;
}

std::vector<std::string> relative_files(const fs::path& root) {
  std::vector<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    if (e.is_regular_file()) out.push_back(fs::relative(e.path(), root).generic_string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The first line where two record files differ, for a message a person can act on.
std::string first_difference(const std::string& a, const std::string& b) {
  auto la = test::complete_lines(a), lb = test::complete_lines(b);
  for (size_t i = 0; i < std::max(la.size(), lb.size()); ++i) {
    std::string x = i < la.size() ? la[i] : "<none>", y = i < lb.size() ? lb[i] : "<none>";
    if (x != y) return "line " + std::to_string(i + 1) + "\n  golden:  " + x.substr(0, 400) + "\n  rebuilt: " + y.substr(0, 400);
  }
  return "no line differs";
}

struct RecordLine {
  std::string kind;
  Json payload;
  int64_t ts = 0;
  uint64_t seq = 0;
};

std::vector<RecordLine> read_records(const fs::path& export_dir) {
  std::vector<RecordLine> out;
  for (const auto& line : test::complete_lines(test::read_file(export_dir / "records.jsonl"))) {
    Json j = Json::parse(line);
    out.push_back({j["kind"].get<std::string>(), j["payload"], j["ts"].get<int64_t>(), j["seq"].get<uint64_t>()});
  }
  return out;
}

NoteSigner golden_signer() {
  std::string k = test::read_file(kGolden / "signer.key");
  while (!k.empty() && k.back() == '\n') k.pop_back();
  auto signer = NoteSigner::parse(k);
  if (!signer) throw std::runtime_error(signer.error().message);
  return std::move(*signer);
}

// A ledger at `dir` holding `records` and every blob in `blobs`, hashed, chained and signed
// with the golden key as the kernel would have: what someone holding the key can forge.
void write_signed_ledger(const fs::path& dir, const std::vector<RecordLine>& records, const std::vector<std::string>& blobs) {
  NoteSigner signer = golden_signer();
  LedgerCreateOptions create;
  create.origin = signer.name();
  create.verifier_key = signer.verifier().encoded();
  create.max_payload_bytes = uint64_t{8} << 20;
  ASSERT_TRUE(Ledger::create(dir, create));
  LogicalClock clock;
  auto ledger = Ledger::open(dir, Ledger::Mode::read_write, clock);
  ASSERT_TRUE(ledger) << ledger.error().message;
  auto written = ledger->write([&](WriteTxn& w) -> Status {
    for (const auto& blob : blobs) {
      if (auto put = w.put_blob(blob); !put) return std::unexpected(put.error());
    }
    for (const auto& r : records) {
      auto a = w.append(r.kind, canonicalize(r.payload).value(), r.ts);
      if (!a) return std::unexpected(a.error());
    }
    return {};
  });
  ASSERT_TRUE(written) << written.error().message;
  ASSERT_TRUE(ledger->checkpoint(signer));
}

std::vector<std::string> blobs_of(const fs::path& export_dir) {
  std::vector<std::string> out;
  for (const auto& blob : fs::directory_iterator(export_dir / "blobs")) out.push_back(test::read_file(blob.path()));
  return out;
}

class Golden : public ::testing::TestWithParam<std::string> {
 protected:
  fs::path golden() const { return kGolden / GetParam(); }
  std::string key() const { return (kGolden / "verifier.key").string(); }
};

// Whether this host resolves `host`: an example whose environment is not built yet needs the
// Debian mirror (and, for a prepare step, a package registry) to build it.
bool resolves(const char* host) {
  addrinfo* found = nullptr;
  if (::getaddrinfo(host, "443", nullptr, &found) != 0) return false;
  ::freeaddrinfo(found);
  return true;
}

bool names_environment(const fs::path& blueprint) {
  Json j = Json::parse(test::read_file(blueprint), nullptr, false);
  return j.is_object() && j.contains("environment");
}

TEST_P(Golden, RebuildGivesTheSameBytes) {
  TempDir tmp;
  const fs::path blueprint = example_blueprints().at(GetParam());
  const bool environment = names_environment(blueprint);
  if (environment && !(resolves("deb.debian.org") && resolves("registry.npmjs.org"))) {
    GTEST_SKIP() << GetParam() << " runs its checks in an environment, which needs the network to be built";
  }
  auto built = warden({"build", blueprint.string(), "--clock", "logical",
                       "--key", (kGolden / "signer.key").string(), "--out", (tmp / "out").string()});
  ASSERT_TRUE(built.exited_with(0)) << describe(built);
  if (environment) {
    // Its checks run again in the environment the ledger names, found by its digest.
    auto rerun = warden({"replay", (tmp / "out" / "ledger").string(), "--repo", (tmp / "out" / "repo").string(), "--rerun",
                         "--key", key()});
    EXPECT_TRUE(rerun.exited_with(0)) << describe(rerun);
  }
  auto exported = warden({"ledger", "export", (tmp / "out" / "ledger").string(), (tmp / "export").string()});
  ASSERT_TRUE(exported.exited_with(0)) << describe(exported);
  ASSERT_EQ(relative_files(golden()), relative_files(tmp / "export"));
  for (const auto& file : relative_files(golden())) {
    std::string want = test::read_file(golden() / file), got = test::read_file(tmp / "export" / file);
    EXPECT_TRUE(want == got) << GetParam() << ": " << file << " differs from the golden at "
                             << first_difference(want, got)
                             << "\n(if the change is intended, run tools/refresh-goldens and commit the result)";
  }
}

TEST_P(Golden, Replays) {
  auto replayed = warden({"replay", golden().string(), "--key", key(), "--json"});
  ASSERT_TRUE(replayed.exited_with(0)) << describe(replayed);
  Json report = test::stdout_json(replayed);
  EXPECT_TRUE(report["ok"].get<bool>());
  EXPECT_GT(report["decisions"].get<int>(), 0);
  EXPECT_GT(report["commits"].get<int>(), 0);
  EXPECT_EQ(report["key_source"], "--key");
}

TEST_P(Golden, AFlippedVerdictByteFailsAtItsRecord) {
  TempDir tmp;
  test::copy_tree(golden(), tmp / "copy");
  auto records = read_records(golden());
  auto decision = std::find_if(records.begin(), records.end(), [](const RecordLine& r) { return r.kind == "decision"; });
  ASSERT_NE(decision, records.end());
  std::string text = test::read_file(golden() / "records.jsonl");
  auto lines = test::complete_lines(text);
  std::string& line = lines[decision->seq];
  auto at = line.find("\"accepted\":");
  ASSERT_NE(at, std::string::npos);
  line.replace(at, line.find_first_of(",}", at) - at, line.find("\"accepted\":true", at) == at ? "\"accepted\":false" : "\"accepted\":true");
  std::string joined;
  for (const auto& l : lines) joined += l + "\n";
  test::write_file(tmp / "copy" / "records.jsonl", joined);

  auto replayed = warden({"replay", (tmp / "copy").string(), "--key", key(), "--json"});
  ASSERT_TRUE(replayed.exited_with(1)) << describe(replayed);
  Json report = test::stdout_json(replayed);
  EXPECT_EQ(report["problem"]["seq"].get<uint64_t>(), decision->seq) << report.dump();
}

// Someone holding the kernel's key rewrites history: one refused proposal becomes accepted,
// and the whole ledger is rebuilt and re-signed, so every hash and signature holds. Only
// recomputing the decision shows the lie.
TEST_P(Golden, AForgedDecisionResignedWithTheKeyFailsAtItsRecord) {
  auto records = read_records(golden());
  auto forged = std::find_if(records.begin(), records.end(), [](const RecordLine& r) {
    return r.kind == "decision" && !r.payload["verdict"]["accepted"].get<bool>();
  });
  if (forged == records.end()) GTEST_SKIP() << GetParam() << " has no refused proposal";
  forged->payload["verdict"] = {{"accepted", true}, {"reasons", Json::array()}};

  TempDir tmp;
  write_signed_ledger(tmp / "forged", records, blobs_of(golden()));

  auto replayed = warden({"replay", (tmp / "forged").string(), "--key", key(), "--json"});
  ASSERT_TRUE(replayed.exited_with(1)) << describe(replayed);
  Json report = test::stdout_json(replayed);
  EXPECT_EQ(report["problem"]["seq"].get<uint64_t>(), forged->seq) << report.dump();
  EXPECT_NE(report["problem"]["message"].get<std::string>().find("decide()"), std::string::npos) << report.dump();
}

// Every record the kernel writes has a schema (kernel/record/records.h). A record smuggled past it —
// here a step's evidence claiming a field no kernel writes, re-signed with the key — is
// caught at its seq, even though no decision depends on it.
TEST_P(Golden, ARecordOutsideItsSchemaResignedWithTheKeyFailsAtItsRecord) {
  auto records = read_records(golden());
  auto forged = std::find_if(records.begin(), records.end(), [](const RecordLine& r) { return r.kind == "step_evidence"; });
  ASSERT_NE(forged, records.end());
  forged->payload["reviewedBy"] = "a human, honestly";

  TempDir tmp;
  write_signed_ledger(tmp / "forged", records, blobs_of(golden()));

  auto replayed = warden({"replay", (tmp / "forged").string(), "--key", key(), "--json"});
  ASSERT_TRUE(replayed.exited_with(1)) << describe(replayed);
  Json report = test::stdout_json(replayed);
  EXPECT_EQ(report["problem"]["seq"].get<uint64_t>(), forged->seq) << report.dump();
  EXPECT_NE(report["problem"]["message"].get<std::string>().find("reviewedBy"), std::string::npos) << report.dump();
}

// The golden's last run result changed by `change` (its digest and the commit naming it kept
// consistent), re-signed with the key and replayed: the report, which must be a difference,
// and the seq of the decision that rests on the changed result.
struct ForgedReplay {
  Json report;
  uint64_t decision_seq = 0;
};
ForgedReplay replay_with_last_run_result_changed(const fs::path& golden, const std::string& key,
                                                 const std::function<void(Json& run_result)>& change) {
  auto records = read_records(golden);
  auto forged = std::find_if(records.rbegin(), records.rend(), [](const RecordLine& r) { return r.kind == "run_result"; });
  if (forged == records.rend()) throw std::runtime_error("no run_result in " + golden.string());
  const std::string old_digest = forged->payload["run_result_sha256"].get<std::string>();
  Json& result = forged->payload["run_result"];
  change(result);
  const std::string new_digest = sha256(canonicalize(result).value()).str();
  forged->payload["run_result_sha256"] = new_digest;
  for (auto& r : records) {
    if (r.kind == "commit" && r.payload["run_result_sha256"] == old_digest) r.payload["run_result_sha256"] = new_digest;
  }
  const uint64_t forged_seq = forged->seq;
  auto decision = std::find_if(records.begin(), records.end(), [&](const RecordLine& r) {
    return r.kind == "decision" && r.payload["run_result_seq"] == forged_seq;
  });
  if (decision == records.end()) throw std::runtime_error("no decision rests on run_result " + std::to_string(forged_seq));

  TempDir tmp;
  write_signed_ledger(tmp / "forged", records, blobs_of(golden));
  auto replayed = warden({"replay", (tmp / "forged").string(), "--key", key, "--json"});
  if (!replayed.exited_with(1)) throw std::runtime_error("replay did not find the difference: " + describe(replayed));
  return {test::stdout_json(replayed), decision->seq};
}

// A forger holding the key moves one run result onto another base tree (keeping every digest
// that names it consistent): the pre-images replay checks would then be held to a tree of
// the forger's choosing. Every run result of a run must name the run's one base.
TEST_P(Golden, ARunResultOverAnotherBaseResignedWithTheKeyFailsAtItsDecision) {
  auto forged = replay_with_last_run_result_changed(golden(), key(), [](Json& result) {
    ASSERT_TRUE(result.contains("base_tree")) << result.dump();
    result["base_tree"] = result["tree"];  // a tree that exists, just not the run's base
  });
  EXPECT_EQ(forged.report["problem"]["seq"].get<uint64_t>(), forged.decision_seq) << forged.report.dump();
  // "base tree": the result names another base than the run's; "base run": the step's base
  // run tested another tree than the one the forged result says the step builds on.
  const std::string message = forged.report["problem"]["message"].get<std::string>();
  EXPECT_TRUE(message.find("base tree") != std::string::npos || message.find("base run") != std::string::npos)
      << forged.report.dump();
}

// A result recorded from another environment than the run's policy names (re-signed with the
// key, so only replay's own check can catch it) is refused at the decision that rests on it.
TEST_P(Golden, ARunResultFromAnotherEnvironmentResignedWithTheKeyFailsAtItsDecision) {
  auto forged = replay_with_last_run_result_changed(golden(), key(), [](Json& result) {
    // On the host's /usr when the run named an environment, in some environment when it did not.
    if (result.contains("environment")) result.erase("environment");
    else result["environment"] = sha256("another root file system").str();
  });
  EXPECT_EQ(forged.report["problem"]["seq"].get<uint64_t>(), forged.decision_seq) << forged.report.dump();
  EXPECT_NE(forged.report["problem"]["message"].get<std::string>().find(" ran in "), std::string::npos) << forged.report.dump();
}

// With the repository at hand, replay holds the recorded pre-images to the tree each
// proposal was made on: a forged pre-image (re-signed with the key) is caught even where
// decide() alone could be satisfied by it.
TEST(GoldenRepository, ReplayChecksPreImagesAgainstTheRepository) {
  TempDir tmp;
  auto built = warden({"build", (kSource / "examples" / "calculator" / "blueprint.json").string(), "--clock", "logical",
                       "--key", (kGolden / "signer.key").string(), "--out", (tmp / "out").string()});
  ASSERT_TRUE(built.exited_with(0)) << describe(built);
  const std::string repo = (tmp / "out" / "repo").string(), key = (kGolden / "verifier.key").string();
  auto honest = warden({"replay", (tmp / "out" / "ledger").string(), "--key", key, "--repo", repo});
  ASSERT_TRUE(honest.exited_with(0)) << describe(honest);
  ASSERT_TRUE(warden({"ledger", "export", (tmp / "out" / "ledger").string(), (tmp / "export").string()}).exited_with(0));

  // The first proposal claims src/calculator/__init__.py already held "x".
  auto records = read_records(tmp / "export");
  auto proposal = std::find_if(records.begin(), records.end(), [](const RecordLine& r) { return r.kind == "proposal"; });
  ASSERT_NE(proposal, records.end());
  std::string digest = proposal->payload["evidence_blob"].get<std::string>();
  Json evidence = Json::parse(test::read_file(tmp / "export" / "blobs" / digest.substr(7)));
  ASSERT_TRUE(evidence["base"].contains("src/calculator/__init__.py")) << evidence.dump();
  evidence["base"]["src/calculator/__init__.py"]["content"] = "x";
  std::string forged_blob = canonicalize(evidence).value();
  proposal->payload["evidence_blob"] = sha256(forged_blob).str();
  auto blobs = blobs_of(tmp / "export");
  blobs.push_back(forged_blob);
  write_signed_ledger(tmp / "forged", records, blobs);

  auto replayed = warden({"replay", (tmp / "forged").string(), "--key", key, "--repo", repo, "--json"});
  ASSERT_TRUE(replayed.exited_with(1)) << describe(replayed);
  Json report = test::stdout_json(replayed);
  EXPECT_NE(report["problem"]["message"].get<std::string>().find("pre-image of src/calculator/__init__.py"),
            std::string::npos)
      << report.dump();
}

// The held-out golden (examples/calculator/blueprint-held-out.json) rewritten by someone
// holding the key: a reveal whose salt or file does not hash to the commitment fails at the
// reveal; a ledger whose reveal is gone fails at the run's end; a held-out run said to pass
// fails at the decision that used it.
class GoldenHeldOut : public ::testing::Test {
 protected:
  fs::path golden() const { return kGolden / "calculator-held-out"; }

  Json replay_forged(const std::vector<RecordLine>& records, std::vector<std::string> blobs) {
    TempDir tmp;
    write_signed_ledger(tmp / "forged", records, blobs);
    auto replayed = warden({"replay", (tmp / "forged").string(), "--key", (kGolden / "verifier.key").string(), "--json"});
    EXPECT_TRUE(replayed.exited_with(1)) << describe(replayed);
    return test::stdout_json(replayed);
  }

  static size_t index_of(const std::vector<RecordLine>& records, std::string_view kind, bool last = false) {
    size_t at = records.size();
    for (size_t i = 0; i < records.size(); ++i) {
      if (records[i].kind == kind && (last || at == records.size())) at = i;
    }
    return at;
  }
};

TEST_F(GoldenHeldOut, ARevealThatDoesNotHashToTheCommitmentFailsAtTheReveal) {
  auto records = read_records(golden());
  const size_t reveal = index_of(records, "held_out_reveal");
  ASSERT_LT(reveal, records.size());
  auto salted = records;
  salted[reveal].payload["salt"] = std::string(64, 'a');
  Json report = replay_forged(salted, blobs_of(golden()));
  EXPECT_EQ(report["problem"]["seq"].get<uint64_t>(), records[reveal].seq) << report.dump();
  EXPECT_NE(report["problem"]["message"].get<std::string>().find("not to the committed"), std::string::npos) << report.dump();

  // The held-out file swapped for an easier one after the decisions.
  auto swapped = records;
  auto blobs = blobs_of(golden());
  const std::string easier = "def test_nothing():\n    pass\n";
  blobs.push_back(easier);
  swapped[reveal].payload["files"][0]["blob"] = sha256(easier).str();
  report = replay_forged(swapped, blobs);
  EXPECT_EQ(report["problem"]["seq"].get<uint64_t>(), records[reveal].seq) << report.dump();
}

TEST_F(GoldenHeldOut, ARunThatEndedWithoutItsRevealFailsAtItsEnd) {
  auto records = read_records(golden());
  const size_t reveal = index_of(records, "held_out_reveal");
  ASSERT_LT(reveal, records.size());
  records.erase(records.begin() + static_cast<std::ptrdiff_t>(reveal));
  const size_t end = index_of(records, "run_status", true);
  Json report = replay_forged(records, blobs_of(golden()));
  EXPECT_EQ(report["problem"]["seq"].get<uint64_t>(), end) << report.dump();
  EXPECT_NE(report["problem"]["message"].get<std::string>().find("no reveal of it follows"), std::string::npos) << report.dump();
}

TEST_F(GoldenHeldOut, AHeldOutRunSaidToPassFailsAtItsDecision) {
  auto records = read_records(golden());
  auto failed = std::find_if(records.begin(), records.end(), [](const RecordLine& r) {
    return r.kind == "held_out_run" && !r.payload["passed"].get<bool>();
  });
  ASSERT_NE(failed, records.end());
  failed->payload["passed"] = true;
  const uint64_t run_seq = failed->seq;
  auto decision = std::find_if(records.begin(), records.end(), [&](const RecordLine& r) {
    return r.kind == "decision" && r.payload.value("held_out_run_seq", uint64_t{0}) == run_seq;
  });
  ASSERT_NE(decision, records.end());
  Json report = replay_forged(records, blobs_of(golden()));
  EXPECT_EQ(report["problem"]["seq"].get<uint64_t>(), decision->seq) << report.dump();
  EXPECT_NE(report["problem"]["message"].get<std::string>().find("revealed result"), std::string::npos) << report.dump();
}

// The bundle published while the run still proposes: its reveal put in place of an event just
// before the second proposal's held-out run. That proposal could have been fitted to the
// tests, so its decision fails, though every digest holds.
TEST_F(GoldenHeldOut, ADecisionAfterItsBundlesRevealFailsAtTheDecision) {
  auto records = read_records(golden());
  const size_t reveal = index_of(records, "held_out_reveal");
  ASSERT_LT(reveal, records.size());
  std::vector<size_t> runs;
  for (size_t i = 0; i < records.size(); ++i) {
    if (records[i].kind == "held_out_run") runs.push_back(i);
  }
  ASSERT_GE(runs.size(), 2u);
  size_t event = runs[1];
  while (event > runs[0] && records[event].kind != "run_event") --event;
  ASSERT_GT(event, runs[0]) << "no event between the first two held-out runs";
  std::swap(records[event].kind, records[reveal].kind);
  std::swap(records[event].payload, records[reveal].payload);
  auto decision = std::find_if(records.begin(), records.end(), [&](const RecordLine& r) {
    return r.kind == "decision" && r.payload.value("held_out_run_seq", uint64_t{0}) == records[runs[1]].seq;
  });
  ASSERT_NE(decision, records.end());
  Json report = replay_forged(records, blobs_of(golden()));
  EXPECT_EQ(report["problem"]["seq"].get<uint64_t>(), decision->seq) << report.dump();
  EXPECT_NE(report["problem"]["message"].get<std::string>().find("after its reveal"), std::string::npos) << report.dump();
}

// A commit of a build that ran no held-out checks, made to claim some (its intent and record
// both name a bundle): replay fails at the intent, and no receipt is signed for it.
TEST(GoldenCommitClaims, HeldOutChecksItsDecisionNeverRanAreRefused) {
  auto records = read_records(kGolden / "calculator");
  const Json claim = sha256("a bundle no run used").str();
  size_t intent = records.size();
  std::string commit;
  for (size_t i = 0; i < records.size(); ++i) {
    if ((records[i].kind == "commit_intent" || records[i].kind == "commit") && commit.empty()) {
      if (records[i].kind == "commit_intent") intent = i;
      records[i].payload["held_out_sha256"] = claim;
      if (records[i].kind == "commit") commit = records[i].payload["commit"].get<std::string>();
    }
  }
  ASSERT_LT(intent, records.size());
  ASSERT_FALSE(commit.empty());
  TempDir tmp;
  write_signed_ledger(tmp / "forged", records, blobs_of(kGolden / "calculator"));
  auto replayed = warden({"replay", (tmp / "forged").string(), "--key", (kGolden / "verifier.key").string(), "--json"});
  ASSERT_TRUE(replayed.exited_with(1)) << describe(replayed);
  Json report = test::stdout_json(replayed);
  EXPECT_EQ(report["problem"]["seq"].get<uint64_t>(), records[intent].seq) << report.dump();
  EXPECT_NE(report["problem"]["message"].get<std::string>().find("held_out_sha256"), std::string::npos) << report.dump();
  auto receipt = warden({"receipt", commit, "--ledger", (tmp / "forged").string(), "--key", (kGolden / "signer.key").string()});
  EXPECT_TRUE(receipt.exited_with(1)) << describe(receipt);
  EXPECT_NE(receipt.err.find("other held-out checks"), std::string::npos) << describe(receipt);
}

INSTANTIATE_TEST_SUITE_P(Examples, Golden, ::testing::ValuesIn(goldens()),
                         [](const auto& info) {
                           std::string name = info.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

TEST(GoldenSet, EveryExampleHasAGolden) {
  std::vector<std::string> examples;
  for (const auto& [name, path] : example_blueprints()) examples.push_back(name);
  EXPECT_EQ(examples, goldens()) << "run tools/refresh-goldens";
}

}  // namespace
}  // namespace warden::kernel
