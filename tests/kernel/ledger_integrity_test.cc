// A real build's ledger (the calculator golden, copied) against attacks on its files, through
// the real binary: every blob a record refers to deleted once, each caught by `ledger
// verify`, `replay` and `ledger import` at the first record that refers to it; a swapped
// blob named at its record; the export cut short or given a forged tail refused with the
// key; and the same in the LMDB form.
#include <gtest/gtest.h>

#include <algorithm>

#include "common/canonical_json.h"
#include "common/clock.h"
#include "ledger/ledger.h"
#include "ledger/merkle.h"
#include "ledger/note.h"
#include "ledger/record.h"
#include "tests/support/files.h"
#include "tests/support/temp_dir.h"
#include "tests/support/warden_cli.h"
#include "tests/support/export_rewrite.h"

namespace warden::kernel {
namespace {

namespace fs = std::filesystem;
using test::describe;
using test::TempDir;
using test::warden;

const fs::path kGolden = fs::path(WARDEN_SOURCE_DIR) / "tests" / "golden";
const fs::path kCalculator = kGolden / "calculator";
const std::string kKey = (kGolden / "verifier.key").string();

std::vector<std::string> golden_lines() { return test::complete_lines(test::read_file(kCalculator / "records.jsonl")); }

std::vector<std::string> blob_names() {
  std::vector<std::string> out;
  for (const auto& f : fs::directory_iterator(kCalculator / "blobs")) out.push_back(f.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

// Where a blob is first named, found independently of the kernel's table: the first record
// whose line holds its digest.
uint64_t first_referrer(const std::string& hex) {
  auto lines = golden_lines();
  for (uint64_t seq = 0; seq < lines.size(); ++seq) {
    if (lines[seq].find("sha256:" + hex) != std::string::npos) return seq;
  }
  return UINT64_MAX;
}

std::string kind_at(uint64_t seq) { return Record::from_canonical(golden_lines().at(seq)).value().kind; }

// The problem a command reports: {seq, message} from verify's or replay's JSON.
struct Reported {
  int exit = -1;
  std::optional<uint64_t> seq;
  std::string object, message;
};

Reported run_json(const std::vector<std::string>& args) {
  auto r = warden(args);
  Reported out;
  out.exit = r.exit_code;
  auto json = test::stdout_json(r);
  if (json.contains("problem")) {
    const auto& p = json["problem"];
    if (p.contains("seq")) out.seq = p["seq"].get<uint64_t>();
    out.object = p.value("object", p.value("kind", ""));
    out.message = p.value("message", "");
  }
  return out;
}


TEST(LedgerIntegrity, TheGoldenBuildVerifiesWithEveryReferenceResolvedAndNoUnsignedTail) {
  auto r = warden({"ledger", "verify", kCalculator.string(), "--key", kKey, "--json"});
  ASSERT_TRUE(r.exited_with(0)) << describe(r);
  auto json = test::stdout_json(r);
  EXPECT_GT(json["blob_references"].get<uint64_t>(), blob_names().size());
  EXPECT_EQ(json["unsigned_records"], 0);
}

// Once found: 7 of 13 blobs could be deleted unnoticed. Now every one is caught,
// by each command, at the record that first refers to it.
TEST(LedgerIntegrity, EveryReferencedBlobDeletedOnceIsCaughtAtItsRecord) {
  TempDir tmp;
  auto names = blob_names();
  ASSERT_GE(names.size(), 10u);
  int i = 0;
  for (const auto& hex : names) {
    const uint64_t seq = first_referrer(hex);
    ASSERT_NE(seq, UINT64_MAX) << "blob " << hex << " is named by no record of the golden";
    const std::string kind = kind_at(seq);
    fs::path copy = tmp / ("copy-" + std::to_string(i++));
    test::copy_tree(kCalculator, copy);
    fs::remove(copy / "blobs" / hex);
    SCOPED_TRACE("blob " + hex + ", first named by record " + std::to_string(seq) + " (" + kind + ")");

    auto verified = run_json({"ledger", "verify", copy.string(), "--key", kKey, "--json"});
    EXPECT_EQ(verified.exit, 1);
    EXPECT_EQ(verified.seq, seq);
    EXPECT_EQ(verified.object, "record " + std::to_string(seq));
    EXPECT_NE(verified.message.find(kind + " record: "), std::string::npos) << verified.message;
    EXPECT_NE(verified.message.find(hex), std::string::npos) << verified.message;
    EXPECT_NE(verified.message.find("missing"), std::string::npos) << verified.message;

    auto replayed = run_json({"replay", copy.string(), "--key", kKey, "--json"});
    EXPECT_EQ(replayed.exit, 1);
    EXPECT_EQ(replayed.seq, seq);

    auto imported = warden({"ledger", "import", copy.string(), (tmp / ("imported-" + hex)).string(), "--key", kKey});
    EXPECT_TRUE(imported.exited_with(1)) << describe(imported);
    EXPECT_NE(imported.err.find("record " + std::to_string(seq) + ":"), std::string::npos) << describe(imported);
  }
}

// Once found: a swapped blob was reported at "record 0".
TEST(LedgerIntegrity, ASwappedBlobIsNamedAtTheRecordThatRefersToIt) {
  TempDir tmp;
  auto names = blob_names();
  // The proposal evidence blob of the last proposal, given another blob's bytes.
  auto lines = golden_lines();
  std::string victim;
  for (const auto& hex : names) {
    if (lines.at(first_referrer(hex)).find("\"kind\":\"proposal\"") != std::string::npos) victim = hex;
  }
  ASSERT_FALSE(victim.empty());
  const std::string donor = victim == names.front() ? names.back() : names.front();
  test::copy_tree(kCalculator, tmp / "copy");
  test::write_file(tmp / "copy" / "blobs" / victim, test::read_file(kCalculator / "blobs" / donor));
  const uint64_t seq = first_referrer(victim);

  auto verified = run_json({"ledger", "verify", (tmp / "copy").string(), "--key", kKey, "--json"});
  EXPECT_EQ(verified.exit, 1);
  EXPECT_EQ(verified.seq, seq);
  EXPECT_NE(verified.message.find("evidence_blob names blob sha256:" + victim), std::string::npos) << verified.message;
  EXPECT_NE(verified.message.find("does not match"), std::string::npos) << verified.message;
  auto replayed = run_json({"replay", (tmp / "copy").string(), "--key", kKey, "--json"});
  EXPECT_EQ(replayed.exit, 1);
  EXPECT_EQ(replayed.seq, seq);
}

// The LMDB form: the golden rebuilt into a ledger directory without one blob. The records and
// signatures all hold; the missing evidence is still named at its record.
TEST(LedgerIntegrity, ALedgerDirectoryMissingABlobNamesItsRecord) {
  TempDir tmp;
  auto names = blob_names();
  const std::string missing = names.at(names.size() / 2);
  std::string k = test::read_file(kGolden / "signer.key");
  while (!k.empty() && k.back() == '\n') k.pop_back();
  auto signer = NoteSigner::parse(k).value();
  LedgerCreateOptions create{signer.name(), signer.verifier().encoded(), uint64_t{8} << 20};
  ASSERT_TRUE(Ledger::create(tmp / "ledger", create));
  {
    LogicalClock clock;
    auto ledger = Ledger::open(tmp / "ledger", Ledger::Mode::read_write, clock);
    ASSERT_TRUE(ledger) << ledger.error().message;
    auto written = ledger->write([&](WriteTxn& w) -> Status {
      for (const auto& hex : names) {
        if (hex == missing) continue;
        if (auto put = w.put_blob(test::read_file(kCalculator / "blobs" / hex)); !put) return std::unexpected(put.error());
      }
      for (const auto& line : golden_lines()) {
        auto r = Record::from_canonical(line).value();
        if (auto a = w.append(r.kind, r.payload, r.ts); !a) return std::unexpected(a.error());
      }
      return {};
    });
    ASSERT_TRUE(written) << written.error().message;
    ASSERT_TRUE(ledger->checkpoint(signer));
  }
  const uint64_t seq = first_referrer(missing);
  auto verified = run_json({"ledger", "verify", (tmp / "ledger").string(), "--key", kKey, "--json"});
  EXPECT_EQ(verified.exit, 1);
  EXPECT_EQ(verified.seq, seq) << verified.message;
  EXPECT_NE(verified.message.find(missing), std::string::npos) << verified.message;
  auto replayed = run_json({"replay", (tmp / "ledger").string(), "--key", kKey, "--json"});
  EXPECT_EQ(replayed.exit, 1);
  EXPECT_EQ(replayed.seq, seq);
}

// Once found: the last 30 records dropped (the last commit and the only checkpoint
// with them), the manifest adjusted, and verify and replay --key said OK.
TEST(LedgerIntegrity, ATruncatedBuildExportIsRefusedWithTheKey) {
  TempDir tmp;
  test::copy_tree(kCalculator, tmp / "cut");
  auto lines = golden_lines();
  lines.resize(lines.size() - 30);
  test::rewrite_export_records(tmp / "cut", lines);
  for (const auto& note : fs::directory_iterator(tmp / "cut" / "checkpoints")) fs::remove(note.path());

  auto verified = run_json({"ledger", "verify", (tmp / "cut").string(), "--key", kKey, "--json"});
  EXPECT_EQ(verified.exit, 1);
  EXPECT_EQ(verified.object, "checkpoints");
  auto replayed = run_json({"replay", (tmp / "cut").string(), "--key", kKey, "--json"});
  EXPECT_EQ(replayed.exit, 1) << replayed.message;
  auto imported = warden({"ledger", "import", (tmp / "cut").string(), (tmp / "imported").string(), "--key", kKey});
  EXPECT_TRUE(imported.exited_with(1)) << describe(imported);

  // Keeping the build's checkpoint catches the cut even with the tail allowed.
  auto kept = (kCalculator / "checkpoints" / (std::to_string(golden_lines().size()) + ".note")).string();
  auto caught = run_json({"replay", (tmp / "cut").string(), "--key", kKey, "--allow-unsigned-tail", "--checkpoint",
                          kept, "--json"});
  EXPECT_EQ(caught.exit, 1);
  EXPECT_NE(caught.object.find("kept checkpoint"), std::string::npos) << caught.object << ": " << caught.message;
  auto honest = run_json({"replay", kCalculator.string(), "--key", kKey, "--checkpoint", kept, "--json"});
  EXPECT_EQ(honest.exit, 0) << honest.message;
}

TEST(LedgerIntegrity, ARecordForgedAfterTheBuildsCheckpointFailsReplay) {
  TempDir tmp;
  test::copy_tree(kCalculator, tmp / "forged");
  auto lines = golden_lines();
  Record forged = Record::from_canonical(lines.front()).value();
  forged.seq = lines.size();
  forged.prev = leaf_hash(lines.back());
  lines.push_back(forged.canonical_bytes());
  test::rewrite_export_records(tmp / "forged", lines);

  auto verified = run_json({"ledger", "verify", (tmp / "forged").string(), "--key", kKey, "--json"});
  EXPECT_EQ(verified.exit, 1);
  EXPECT_EQ(verified.object, "unsigned tail");
  EXPECT_EQ(verified.seq, lines.size() - 1);
  auto replayed = run_json({"replay", (tmp / "forged").string(), "--key", kKey, "--json"});
  EXPECT_EQ(replayed.exit, 1);
  EXPECT_EQ(replayed.seq, lines.size() - 1);
}

}  // namespace
}  // namespace warden::kernel
