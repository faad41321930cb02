// Truncation and forged tails, through the real `warden` binary. A copy cut short and
// re-rooted (manifest size and root adjusted, later checkpoints deleted) is self-consistent,
// and so is a record appended after the last checkpoint: only signatures tell them from the
// real ledger. With a trusted key, records after the last signed checkpoint fail (unless
// --allow-unsigned-tail), a ledger with no signed checkpoint fails, and a checkpoint the
// auditor kept must be extended by whatever copy they are handed.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/canonical_json.h"
#include "common/clock.h"
#include "ledger/checkpoint.h"
#include "ledger/ledger.h"
#include "ledger/merkle.h"
#include "ledger/note.h"
#include "ledger/record.h"
#include "tests/support/files.h"
#include "tests/support/temp_dir.h"
#include "tests/support/warden_cli.h"
#include "tests/support/export_rewrite.h"

namespace warden::test {
namespace {

namespace fs = std::filesystem;

constexpr const char* kOrigin = "example.com/warden/signed-tail";
constexpr uint64_t kRecords = 50;
constexpr uint64_t kCheckpointSizes[] = {10, 30, 50};

class SignedTail : public ::testing::Test {
 protected:
  void SetUp() override {
    auto signer = NoteSigner::generate(kOrigin);
    ASSERT_TRUE(signer) << signer.error().message;
    signer_.emplace(std::move(*signer));
    vkey_ = (tmp_ / "verifier.key").string();
    write_file(vkey_, signer_->verifier().encoded() + "\n");
    ASSERT_TRUE(Ledger::create(ledger_, {kOrigin, signer_->verifier().encoded()}));
    {
      LogicalClock clock(1'700'000'000'000, 1000);
      auto ledger = Ledger::open(ledger_, Ledger::Mode::read_write, clock);
      ASSERT_TRUE(ledger) << ledger.error().message;
      uint64_t next = 0;
      for (uint64_t size : kCheckpointSizes) {
        for (; next < size; ++next) ASSERT_TRUE(ledger->append("note", Json{{"i", next}}));
        ASSERT_TRUE(ledger->checkpoint(*signer_));
      }
    }
    auto exported = warden({"ledger", "export", ledger_.string(), export_.string()});
    ASSERT_TRUE(exported.exited_with(0)) << describe(exported);
  }

  fs::path export_copy() {
    auto copy = tmp_ / ("export-copy-" + std::to_string(copies_++));
    copy_tree(export_, copy);
    return copy;
  }

  // What an attacker does to hide the last records: drop them and every checkpoint beyond
  // the new end, then re-root the manifest over what is left.
  fs::path truncated_export(uint64_t keep) {
    fs::path copy = export_copy();
    auto lines = complete_lines(read_file(copy / "records.jsonl"));
    lines.resize(keep);
    rewrite_export_records(copy, lines);
    for (uint64_t size : kCheckpointSizes) {
      if (size > keep) fs::remove(copy / "checkpoints" / (std::to_string(size) + ".note"));
    }
    return copy;
  }

  // Appends one well-formed record after the last, chained to it, manifest adjusted.
  fs::path export_with_forged_tail() {
    fs::path copy = export_copy();
    auto lines = complete_lines(read_file(copy / "records.jsonl"));
    Record forged;
    forged.seq = lines.size();
    forged.kind = "note";
    forged.prev = leaf_hash(lines.back());
    forged.ts = 1'800'000'000'000;
    forged.payload = R"({"i":"forged"})";
    lines.push_back(forged.canonical_bytes());
    rewrite_export_records(copy, lines);
    return copy;
  }


  fs::path note_file(uint64_t size) const { return export_ / "checkpoints" / (std::to_string(size) + ".note"); }

  ProcessResult verify(const fs::path& path, std::vector<std::string> extra = {}) {
    std::vector<std::string> args{"ledger", "verify", path.string(), "--json"};
    args.insert(args.end(), extra.begin(), extra.end());
    return warden(args);
  }

  // Exit 1, naming `object` at `seq` (if any) in JSON, and the same object in text.
  nlohmann::json expect_refused(const fs::path& path, std::vector<std::string> extra, const std::string& object,
                                std::optional<uint64_t> seq) {
    auto r = verify(path, extra);
    EXPECT_TRUE(r.exited_with(1)) << describe(r);
    auto json = stdout_json(r);
    EXPECT_EQ(json["ok"], false);
    EXPECT_EQ(json["problem"].value("object", ""), object) << json.dump(2);
    if (seq) {
      EXPECT_EQ(json["problem"].value("seq", uint64_t{999999}), *seq) << json.dump(2);
    }
    std::vector<std::string> args{"ledger", "verify", path.string()};
    args.insert(args.end(), extra.begin(), extra.end());
    auto human = warden(args);
    EXPECT_TRUE(human.exited_with(1)) << describe(human);
    EXPECT_TRUE(human.out.starts_with("FAILED: " + object + ": ")) << human.out;
    return json;
  }

  TempDir tmp_;
  fs::path ledger_ = tmp_ / "ledger", export_ = tmp_ / "export";
  std::optional<NoteSigner> signer_;
  std::string vkey_;
  int copies_ = 0;
};

TEST_F(SignedTail, TheWholeLedgerSignedVerifiesWithNoUnsignedTail) {
  for (const fs::path& path : {ledger_, export_}) {
    auto r = verify(path, {"--key", vkey_});
    ASSERT_TRUE(r.exited_with(0)) << describe(r);
    auto json = stdout_json(r);
    EXPECT_EQ(json["signed_size"], kRecords);
    EXPECT_EQ(json["unsigned_records"], 0);
    EXPECT_TRUE(json["unsigned_tail"].is_null()) << json.dump(2);
  }
}

// The attack: the last records dropped (with the last checkpoint), the manifest
// adjusted. Without a key it is self-consistent; with the key its tail is unsigned.
TEST_F(SignedTail, ATruncatedExportWithItsManifestAdjustedIsRefusedWithTheKey) {
  fs::path cut = truncated_export(20);
  auto json = expect_refused(cut, {"--key", vkey_}, "unsigned tail", 10);
  EXPECT_EQ(json["unsigned_tail"], (nlohmann::json{{"records", 10}, {"first_seq", 10}, {"last_seq", 19}})) << json.dump(2);
  EXPECT_EQ(json["signed_size"], 10);
  EXPECT_NE(json["problem"]["message"].get<std::string>().find("--allow-unsigned-tail"), std::string::npos);

  // Accepting the unsigned tail on purpose: it passes and says so.
  auto allowed = verify(cut, {"--key", vkey_, "--allow-unsigned-tail"});
  ASSERT_TRUE(allowed.exited_with(0)) << describe(allowed);
  auto report = stdout_json(allowed);
  EXPECT_EQ(report["unsigned_records"], 10);
  EXPECT_FALSE(report["warnings"].empty());
  auto text = warden({"ledger", "verify", cut.string(), "--key", vkey_, "--allow-unsigned-tail"});
  ASSERT_TRUE(text.exited_with(0)) << describe(text);
  EXPECT_NE(text.out.find("unsigned tail: 10 records (seq 10..19)"), std::string::npos) << text.out;

  // Without a trusted key nothing is required, but the tail is still reported.
  auto keyless = verify(cut);
  ASSERT_TRUE(keyless.exited_with(0)) << describe(keyless);
  EXPECT_EQ(stdout_json(keyless)["unsigned_records"], 10);
  // ...unless asked for.
  expect_refused(cut, {"--require-signed-tail"}, "unsigned tail", 10);

  auto imported = warden({"ledger", "import", cut.string(), (tmp_ / "imported").string(), "--key", vkey_});
  EXPECT_TRUE(imported.exited_with(1)) << describe(imported);
  EXPECT_NE(imported.err.find("unsigned tail"), std::string::npos) << describe(imported);
  EXPECT_FALSE(fs::exists(tmp_ / "imported" / "data.mdb"));
}

TEST_F(SignedTail, ACopyCutBeforeItsFirstCheckpointHasNothingTheKeySigned) {
  fs::path cut = truncated_export(5);
  expect_refused(cut, {"--key", vkey_}, "checkpoints", std::nullopt);
  // Accepting an unsigned tail does not make a key vouch for a ledger it never signed.
  expect_refused(cut, {"--key", vkey_, "--allow-unsigned-tail"}, "checkpoints", std::nullopt);
}

TEST_F(SignedTail, ARecordForgedAfterTheLastCheckpointIsReportedUnsigned) {
  fs::path forged = export_with_forged_tail();
  auto json = expect_refused(forged, {"--key", vkey_}, "unsigned tail", kRecords);
  EXPECT_EQ(json["unsigned_tail"], (nlohmann::json{{"records", 1}, {"first_seq", kRecords}, {"last_seq", kRecords}}));
  EXPECT_EQ(json["records"], kRecords + 1);

  auto allowed = verify(forged, {"--key", vkey_, "--allow-unsigned-tail"});
  ASSERT_TRUE(allowed.exited_with(0)) << describe(allowed);
  EXPECT_EQ(stdout_json(allowed)["unsigned_records"], 1);
  EXPECT_NE(allowed.err.find("1 record (seq 50)"), std::string::npos) << describe(allowed);

  auto imported = warden({"ledger", "import", forged.string(), (tmp_ / "imported").string(), "--key", vkey_});
  EXPECT_TRUE(imported.exited_with(1)) << describe(imported);
  auto opted = warden({"ledger", "import", forged.string(), (tmp_ / "opted").string(), "--key", vkey_,
                       "--allow-unsigned-tail"});
  EXPECT_TRUE(opted.exited_with(0)) << describe(opted);
}

// The LMDB form: an append after the last checkpoint is an unsigned tail until signed.
TEST_F(SignedTail, ALedgerAppendedToAfterItsLastCheckpointFailsUntilSigned) {
  write_file(tmp_ / "payload.json", R"({"late":true})");
  auto appended = warden({"ledger", "append", ledger_.string(), "--kind", "note", "--payload", (tmp_ / "payload.json").string()});
  ASSERT_TRUE(appended.exited_with(0)) << describe(appended);
  expect_refused(ledger_, {"--key", vkey_}, "unsigned tail", kRecords);
  write_file(tmp_ / "signer.key", signer_->encoded() + "\n");
  auto signed_ = warden({"ledger", "checkpoint", ledger_.string(), "--signer-key", (tmp_ / "signer.key").string()});
  ASSERT_TRUE(signed_.exited_with(0)) << describe(signed_);
  auto r = verify(ledger_, {"--key", vkey_});
  ASSERT_TRUE(r.exited_with(0)) << describe(r);
  EXPECT_EQ(stdout_json(r)["signed_size"], kRecords + 1);
}

// Cut exactly at a checkpoint, a copy is a genuine, fully signed shorter history: only a
// checkpoint the auditor kept from before shows it is not the whole ledger.
TEST_F(SignedTail, AKeptCheckpointCatchesATruncationThatEndsAtACheckpoint) {
  fs::path cut = truncated_export(30);
  auto fooled = verify(cut, {"--key", vkey_});
  ASSERT_TRUE(fooled.exited_with(0)) << describe(fooled);

  auto json = expect_refused(cut, {"--key", vkey_, "--checkpoint", note_file(50).string()}, "kept checkpoint 50", 30);
  EXPECT_NE(json["problem"]["message"].get<std::string>().find("does not extend"), std::string::npos) << json.dump(2);
  // The note text itself works as well as its file.
  expect_refused(cut, {"--key", vkey_, "--checkpoint", read_file(note_file(50))}, "kept checkpoint 50", 30);

  // The honest ledger, in both forms, extends every checkpoint the auditor kept.
  for (const fs::path& path : {ledger_, export_}) {
    auto r = verify(path, {"--key", vkey_, "--checkpoint", note_file(50).string(), "--checkpoint", note_file(10).string()});
    ASSERT_TRUE(r.exited_with(0)) << describe(r);
    EXPECT_EQ(stdout_json(r)["kept_checkpoints"], 2);
  }
  // Replay and import take the same option.
  auto imported = warden({"ledger", "import", cut.string(), (tmp_ / "imported").string(), "--key", vkey_,
                          "--checkpoint", note_file(50).string()});
  EXPECT_TRUE(imported.exited_with(1)) << describe(imported);
  EXPECT_NE(imported.err.find("kept checkpoint 50"), std::string::npos) << describe(imported);
}

// A kept checkpoint of another history at the same size (signed by the key, so a fork by
// someone holding it): the ledger does not extend it.
TEST_F(SignedTail, AKeptCheckpointWithAnotherRootIsAFork) {
  auto opened = open_note(read_file(note_file(30)), {signer_->verifier()});
  ASSERT_TRUE(opened) << opened.error().message;
  auto body = Checkpoint::parse_body(opened->text).value();
  body.root.mutable_bytes()[0] ^= 1;
  std::string fork = sign_note(body.body(), *signer_).value();
  for (const fs::path& path : {ledger_, export_}) {
    auto json = expect_refused(path, {"--key", vkey_, "--checkpoint", fork}, "kept checkpoint 30", 29);
    EXPECT_NE(json["problem"]["message"].get<std::string>().find("does not extend"), std::string::npos);
  }
}

TEST_F(SignedTail, AKeptCheckpointNotSignedByTheKeyIsRefused) {
  auto other = NoteSigner::generate(kOrigin).value();
  auto opened = open_note(read_file(note_file(50)), {signer_->verifier()});
  ASSERT_TRUE(opened);
  std::string foreign = sign_note(opened->text, other).value();
  expect_refused(export_, {"--key", vkey_, "--checkpoint", foreign}, "kept checkpoint #1", std::nullopt);

  auto missing = verify(export_, {"--key", vkey_, "--checkpoint", (tmp_ / "no-such.note").string()});
  EXPECT_TRUE(missing.exited_with(4)) << describe(missing);
}

TEST_F(SignedTail, RequireAndAllowAreExclusive) {
  auto r = verify(export_, {"--key", vkey_, "--require-signed-tail", "--allow-unsigned-tail"});
  EXPECT_FALSE(r.exited_with(0)) << describe(r);
  EXPECT_FALSE(r.exited_with(1)) << describe(r);  // a usage error, not a verdict
}

}  // namespace
}  // namespace warden::test
