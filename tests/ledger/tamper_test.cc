// Tampering with a ledger, in both its forms (the LMDB directory and an export), must make
// `warden ledger verify PATH --key VKEY` exit 1 and name the first bad seq or object. Each
// case tampers with a fresh copy of one ledger of 50 records, 2 blobs and checkpoints at
// sizes 10, 30 and 50.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/clock.h"
#include "ledger/checkpoint.h"
#include "ledger/ledger.h"
#include "ledger/note.h"
#include "tests/support/files.h"
#include "tests/ledger/raw_lmdb.h"
#include "tests/support/temp_dir.h"
#include "tests/support/warden_cli.h"

namespace warden::test {
namespace {

namespace fs = std::filesystem;

constexpr const char* kOrigin = "example.com/warden/tamper";
constexpr uint64_t kRecords = 50;
constexpr uint64_t kCheckpointSizes[] = {10, 30, 50};
constexpr uint64_t kVictim = 17;      // between the first two checkpoints
constexpr uint64_t kCheckpoint = 30;  // the checkpoint the signature cases forge
constexpr const char* kBlobs[] = {"first blob: a build log", "second blob: a diff"};

// The payload carries a string we can flip a letter in without breaking the JSON.
Json payload(uint64_t i) { return {{"i", i}, {"note", "record-" + std::to_string(i) + "-payload"}}; }

void expect_ok(const Status& st) { ASSERT_TRUE(st) << st.error().message; }

class Tamper : public ::testing::Test {
 protected:
  void SetUp() override {
    auto signer = NoteSigner::generate(kOrigin);
    ASSERT_TRUE(signer) << signer.error().message;
    signer_.emplace(std::move(*signer));
    vkey_ = (tmp_ / "verifier.key").string();
    write_file(vkey_, signer_->verifier().encoded() + "\n");
    ASSERT_NO_FATAL_FAILURE(build_ledger());
    auto exported = warden({"ledger", "export", ledger_.string(), export_.string()});
    ASSERT_TRUE(exported.exited_with(0)) << describe(exported);
  }

  // A logical clock makes the ledger the same bytes on every run.
  void build_ledger() {
    ASSERT_NO_FATAL_FAILURE(expect_ok(Ledger::create(ledger_, {kOrigin, signer_->verifier().encoded()})));
    LogicalClock clock(1'700'000'000'000, 1000);
    auto ledger = Ledger::open(ledger_, Ledger::Mode::read_write, clock);
    ASSERT_TRUE(ledger) << ledger.error().message;
    uint64_t next = 0;
    for (uint64_t size : kCheckpointSizes) {
      std::vector<AppendEntry> batch;
      for (; next < size; ++next) batch.push_back({"run_event", payload(next)});
      auto appended = ledger->append_batch(batch);
      ASSERT_TRUE(appended) << appended.error().message;
      auto cp = ledger->checkpoint(*signer_);
      ASSERT_TRUE(cp) << cp.error().message;
      ASSERT_EQ(cp->size, size);
      if (size == kCheckpointSizes[0]) {
        for (const char* body : kBlobs) {
          auto d = ledger->put_blob(body);
          ASSERT_TRUE(d) << d.error().message;
          blobs_.push_back(*d);
        }
      }
    }
    std::sort(blobs_.begin(), blobs_.end());
  }

  // A fresh copy of one form for one tampering.
  fs::path lmdb_copy() {
    auto copy = tmp_ / ("lmdb-copy-" + std::to_string(copies_++));
    copy_tree(ledger_, copy);
    return copy;
  }
  fs::path export_copy() {
    auto copy = tmp_ / ("export-copy-" + std::to_string(copies_++));
    copy_tree(export_, copy);
    return copy;
  }

  // verify must exit 1, in human and JSON form, naming `object` and (if given) the seq.
  nlohmann::json expect_rejected(const fs::path& path, const std::string& object, std::optional<uint64_t> seq,
                                 std::vector<std::string> keys = {}) {
    if (keys.empty()) keys = {vkey_};
    std::vector<std::string> args{"ledger", "verify", path.string()};
    for (const auto& k : keys) args.insert(args.end(), {"--key", k});
    auto human = warden(args);
    EXPECT_TRUE(human.exited_with(1)) << describe(human);
    EXPECT_TRUE(human.out.starts_with("FAILED: " + object + ": ")) << human.out;

    args.push_back("--json");
    auto r = warden(args);
    EXPECT_TRUE(r.exited_with(1)) << describe(r);
    auto json = stdout_json(r);
    EXPECT_EQ(json["ok"], false);
    const auto& problem = json["problem"];
    EXPECT_EQ(problem.value("object", ""), object) << json.dump(2);
    if (seq) {
      EXPECT_TRUE(problem.contains("seq")) << json.dump(2);
      EXPECT_EQ(problem.value("seq", uint64_t{999999}), *seq) << json.dump(2);
    } else {
      EXPECT_FALSE(problem.contains("seq")) << json.dump(2);
    }
    return json;
  }

  void expect_verifies(const fs::path& path) {
    auto r = warden({"ledger", "verify", path.string(), "--key", vkey_, "--json"});
    ASSERT_TRUE(r.exited_with(0)) << describe(r);
    auto json = stdout_json(r);
    EXPECT_EQ(json["ok"], true);
    EXPECT_EQ(json["records"], kRecords);
    EXPECT_EQ(json["checkpoints"], std::size(kCheckpointSizes));
    EXPECT_EQ(json["blobs"], blobs_.size());
    EXPECT_EQ(json["key_source"], "--key");
  }

  // `note` re-signed by `by` alone, optionally with its root hash changed first.
  std::string forge_checkpoint(const std::string& note, const NoteSigner& by, bool change_root) {
    auto parsed = parse_note(note);
    EXPECT_TRUE(parsed) << parsed.error().message;
    auto body = Checkpoint::parse_body(parsed->text);
    EXPECT_TRUE(body) << body.error().message;
    if (change_root) body->root.mutable_bytes()[0] ^= 0x01;
    auto forged = sign_note(body->body(), by);
    EXPECT_TRUE(forged) << forged.error().message;
    return *forged;
  }

  NoteSigner other_signer_with_the_same_name() {
    auto s = NoteSigner::generate(kOrigin);
    EXPECT_TRUE(s);
    EXPECT_NE(s->verifier().encoded(), signer_->verifier().encoded());
    return std::move(*s);
  }

  // LMDB form helpers ------------------------------------------------------------------

  static std::string stored_record(RawLmdb& db, uint64_t seq) { return db.get("records", be64(seq)); }

  // Index of the payload inside a stored record: version, ts, prev, kind length, kind.
  static size_t payload_offset(const std::string& stored) {
    return 1 + 8 + 32 + 1 + static_cast<unsigned char>(stored[41]);
  }

  // Export form helpers ----------------------------------------------------------------

  static std::vector<std::string> read_lines(const fs::path& export_dir) {
    return complete_lines(read_file(export_dir / "records.jsonl"));
  }
  static void write_lines(const fs::path& export_dir, const std::vector<std::string>& lines) {
    std::string text;
    for (const auto& l : lines) text += l + "\n";
    write_file(export_dir / "records.jsonl", text);
  }

  // Flips one base64 character in the middle of the (only) signature: still valid base64,
  // same key hash, a different signature.
  static std::string flip_signature_char(std::string note) {
    auto sig_line = note.rfind("\xe2\x80\x94 ");
    EXPECT_NE(sig_line, std::string::npos) << note;
    auto b64 = note.find(' ', sig_line + 4) + 1;
    char& c = note[b64 + 20];
    c = c == 'A' ? 'B' : 'A';
    return note;
  }

  TempDir tmp_;
  fs::path ledger_ = tmp_ / "ledger";
  fs::path export_ = tmp_ / "export";
  std::string vkey_;
  std::optional<NoteSigner> signer_;
  std::vector<Digest> blobs_;  // sorted: the order both forms verify them in
  int copies_ = 0;
};

// ------------------------------------------------------------------ positive controls

TEST_F(Tamper, UntamperedLedgerAndExportVerify) {
  expect_verifies(lmdb_copy());
  expect_verifies(export_copy());
}

TEST_F(Tamper, ExportThenImportGivesTheSameRootAndCheckpoints) {
  auto imported = tmp_ / "imported";
  auto r = warden({"ledger", "import", export_.string(), imported.string(), "--key", vkey_});
  ASSERT_TRUE(r.exited_with(0)) << describe(r);
  auto original = stdout_json(warden({"ledger", "show", ledger_.string(), "--json"}));
  auto copy = stdout_json(warden({"ledger", "show", imported.string(), "--json"}));
  EXPECT_EQ(copy["root"], original["root"]);
  EXPECT_EQ(copy["size"], kRecords);
  EXPECT_EQ(copy["checkpoint_sizes"], original["checkpoint_sizes"]);
  EXPECT_EQ(copy["verifier_key"], original["verifier_key"]);
  expect_verifies(imported);
  // The blobs came along, byte for byte.
  for (const char* body : kBlobs) {
    auto got = warden({"ledger", "blob", "get", imported.string(), sha256(body).str()});
    EXPECT_TRUE(got.exited_with(0)) << describe(got);
    EXPECT_EQ(got.out, body);
  }
}

// ------------------------------------------------------------------ the LMDB directory

TEST_F(Tamper, LmdbFlippedPayloadByteNamesThatRecord) {
  auto copy = lmdb_copy();
  {
    RawLmdb db(copy);
    std::string stored = stored_record(db, kVictim);
    size_t at = payload_offset(stored);
    stored[at + (stored.size() - at) / 2] ^= 0x01;
    db.put("records", be64(kVictim), stored);
  }
  expect_rejected(copy, "record 17", kVictim);
}

// In the LMDB form every record has its own stored leaf hash. After the swap, records 0..16
// are untouched and each matches its stored hash; record 17 is the first whose bytes do not.
TEST_F(Tamper, LmdbSwappedRecordsNameTheFirst) {
  auto copy = lmdb_copy();
  {
    RawLmdb db(copy);
    std::string a = stored_record(db, kVictim), b = stored_record(db, kVictim + 1);
    db.put("records", be64(kVictim), b);
    db.put("records", be64(kVictim + 1), a);
  }
  expect_rejected(copy, "record 17", kVictim);
}

TEST_F(Tamper, LmdbDeletedRecordIsNamedMissing) {
  auto copy = lmdb_copy();
  RawLmdb(copy).del("records", be64(kVictim));
  auto json = expect_rejected(copy, "record 17", kVictim);
  EXPECT_NE(json["problem"]["message"].get<std::string>().find("missing"), std::string::npos) << json.dump(2);
}

TEST_F(Tamper, LmdbDeletedLastRecordIsCaught) {
  auto copy = lmdb_copy();
  RawLmdb(copy).del("records", be64(kRecords - 1));
  auto r = warden({"ledger", "verify", copy.string(), "--key", vkey_, "--json"});
  EXPECT_TRUE(r.exited_with(1)) << describe(r);
  EXPECT_EQ(stdout_json(r)["problem"].value("seq", uint64_t{999999}), kRecords - 1) << r.out;
}

// Record 17 is intact (it matches its stored leaf hash); 18 now holds 17's bytes.
TEST_F(Tamper, LmdbDuplicatedRecordNamesTheOverwrittenSeq) {
  auto copy = lmdb_copy();
  {
    RawLmdb db(copy);
    db.put("records", be64(kVictim + 1), stored_record(db, kVictim));
  }
  expect_rejected(copy, "record 18", kVictim + 1);
}

TEST_F(Tamper, LmdbSwappedBlobContentsNameTheFirstBlob) {
  auto copy = lmdb_copy();
  {
    RawLmdb db(copy);
    std::string a = db.get("blobs", blobs_[0].view()), b = db.get("blobs", blobs_[1].view());
    db.put("blobs", blobs_[0].view(), b);
    db.put("blobs", blobs_[1].view(), a);
  }
  expect_rejected(copy, "blob " + blobs_[0].str(), std::nullopt);
}

TEST_F(Tamper, LmdbFlippedCheckpointSignatureIsRejected) {
  auto copy = lmdb_copy();
  {
    RawLmdb db(copy);
    db.put("checkpoints", be64(kCheckpoint), flip_signature_char(db.get("checkpoints", be64(kCheckpoint))));
  }
  expect_rejected(copy, "checkpoint 30", std::nullopt);
}

TEST_F(Tamper, LmdbCheckpointResignedBySameNamedKeyIsRejected) {
  auto copy = lmdb_copy();
  auto forger = other_signer_with_the_same_name();
  {
    RawLmdb db(copy);
    db.put("checkpoints", be64(kCheckpoint), forge_checkpoint(db.get("checkpoints", be64(kCheckpoint)), forger, false));
  }
  expect_rejected(copy, "checkpoint 30", std::nullopt);
}

TEST_F(Tamper, LmdbCheckpointWithChangedRootResignedByAnotherKeyIsRejected) {
  auto copy = lmdb_copy();
  auto forger = other_signer_with_the_same_name();
  {
    RawLmdb db(copy);
    db.put("checkpoints", be64(kCheckpoint), forge_checkpoint(db.get("checkpoints", be64(kCheckpoint)), forger, true));
  }
  expect_rejected(copy, "checkpoint 30", std::nullopt);
  // Trusting the forger too gets the signature past, and then the root check catches it:
  // records 0..29 do not hash to the signed root.
  write_file(tmp_ / "forger.key", forger.verifier().encoded());
  expect_rejected(copy, "checkpoint 30", kCheckpoint - 1, {vkey_, (tmp_ / "forger.key").string()});
}

// ------------------------------------------------------------------ the export

TEST_F(Tamper, ExportFlippedByteThatBreaksTheLineNamesThatRecord) {
  auto copy = export_copy();
  auto lines = read_lines(copy);
  ASSERT_EQ(lines.size(), kRecords);
  lines[kVictim][0] ^= 0x01;  // '{' -> 'z': no longer JSON
  write_lines(copy, lines);
  expect_rejected(copy, "record 17", kVictim);
}

TEST_F(Tamper, ExportFlippedPayloadByteNamesThatRecord) {
  auto copy = export_copy();
  auto lines = read_lines(copy);
  auto at = lines[kVictim].find("record-17-payload");
  ASSERT_NE(at, std::string::npos) << lines[kVictim];
  lines[kVictim][at] ^= 0x01;  // 'r' -> 's': still canonical JSON, a different record
  write_lines(copy, lines);
  // An export stores no leaf hashes, so the altered record is contradicted only by record
  // 18's prev link; the verifier names the earlier of the two, the altered one.
  expect_rejected(copy, "record 17", kVictim);
}

TEST_F(Tamper, ExportFlippedByteInTheLastRecordIsCaughtByTheCheckpoint) {
  auto copy = export_copy();
  auto lines = read_lines(copy);
  auto at = lines.back().find("record-49-payload");
  ASSERT_NE(at, std::string::npos) << lines.back();
  lines.back()[at] ^= 0x01;
  write_lines(copy, lines);
  expect_rejected(copy, "checkpoint 50", kRecords - 1);
}

TEST_F(Tamper, ExportSwappedLinesNameTheFirst) {
  auto copy = export_copy();
  auto lines = read_lines(copy);
  std::swap(lines[kVictim], lines[kVictim + 1]);
  write_lines(copy, lines);
  expect_rejected(copy, "record 17", kVictim);
}

TEST_F(Tamper, ExportDeletedLineIsNamedMissing) {
  auto copy = export_copy();
  auto lines = read_lines(copy);
  lines.erase(lines.begin() + kVictim);
  write_lines(copy, lines);
  auto json = expect_rejected(copy, "record 17", kVictim);
  EXPECT_NE(json["problem"]["message"].get<std::string>().find("missing"), std::string::npos) << json.dump(2);
}

TEST_F(Tamper, ExportTruncatedTailIsCaughtByTheLastCheckpoint) {
  auto copy = export_copy();
  auto lines = read_lines(copy);
  lines.pop_back();
  write_lines(copy, lines);
  auto r = warden({"ledger", "verify", copy.string(), "--key", vkey_, "--json"});
  EXPECT_TRUE(r.exited_with(1)) << describe(r);
  EXPECT_EQ(stdout_json(r)["problem"].value("seq", uint64_t{999999}), kRecords - 1) << r.out;
}

TEST_F(Tamper, ExportDuplicatedLineNamesTheSeqAfterIt) {
  auto copy = export_copy();
  auto lines = read_lines(copy);
  lines.insert(lines.begin() + kVictim + 1, lines[kVictim]);
  write_lines(copy, lines);
  expect_rejected(copy, "record 18", kVictim + 1);
}

TEST_F(Tamper, ExportSwappedBlobContentsNameTheFirstBlob) {
  auto copy = export_copy();
  auto a = copy / "blobs" / blobs_[0].hex(), b = copy / "blobs" / blobs_[1].hex();
  std::string bytes_a = read_file(a), bytes_b = read_file(b);
  write_file(a, bytes_b);
  write_file(b, bytes_a);
  expect_rejected(copy, "blob " + blobs_[0].str(), std::nullopt);
}

TEST_F(Tamper, ExportFlippedCheckpointSignatureIsRejected) {
  auto copy = export_copy();
  auto note = copy / "checkpoints" / "30.note";
  write_file(note, flip_signature_char(read_file(note)));
  expect_rejected(copy, "checkpoint 30", std::nullopt);
}

TEST_F(Tamper, ExportCheckpointWithChangedRootResignedByAnotherKeyIsRejected) {
  auto copy = export_copy();
  auto forger = other_signer_with_the_same_name();
  auto note = copy / "checkpoints" / "30.note";
  write_file(note, forge_checkpoint(read_file(note), forger, true));
  expect_rejected(copy, "checkpoint 30", std::nullopt);
  write_file(tmp_ / "forger.key", forger.verifier().encoded());
  expect_rejected(copy, "checkpoint 30", kCheckpoint - 1, {vkey_, (tmp_ / "forger.key").string()});
}

TEST_F(Tamper, ExportWithForgedCheckpointAndForgedManifestKeyFailsAgainstTheRealKey) {
  // The attacker also swaps the export's own verifier key for theirs and re-signs every
  // checkpoint: self-consistent, so only --key with the real key can catch it.
  auto copy = export_copy();
  auto forger = other_signer_with_the_same_name();
  for (uint64_t size : kCheckpointSizes) {
    auto note = copy / "checkpoints" / (std::to_string(size) + ".note");
    write_file(note, forge_checkpoint(read_file(note), forger, false));
  }
  auto manifest = nlohmann::json::parse(read_file(copy / "ledger.json"));
  manifest["verifier_key"] = forger.verifier().encoded();
  write_file(copy / "ledger.json", manifest.dump() + "\n");  // dump() sorts keys: still canonical

  auto self = warden({"ledger", "verify", copy.string(), "--json"});
  EXPECT_TRUE(self.exited_with(0)) << "self-consistency alone cannot catch a replaced key; " << describe(self);
  expect_rejected(copy, "checkpoint 10", std::nullopt);
}

// ------------------------------------------------------------------ import refuses tampering

TEST_F(Tamper, ImportOfATamperedExportFailsAndLeavesNothing) {
  struct Case {
    const char* name;
    std::function<void(const fs::path&)> tamper;
  };
  std::vector<Case> cases = {
      {"swapped lines",
       [](const fs::path& dir) {
         auto lines = read_lines(dir);
         std::swap(lines[kVictim], lines[kVictim + 1]);
         write_lines(dir, lines);
       }},
      {"flipped payload byte",
       [](const fs::path& dir) {
         auto lines = read_lines(dir);
         lines[kVictim][lines[kVictim].find("record-17")] ^= 0x01;
         write_lines(dir, lines);
       }},
      {"swapped blobs",
       [this](const fs::path& dir) {
         auto a = dir / "blobs" / blobs_[0].hex(), b = dir / "blobs" / blobs_[1].hex();
         std::string bytes_a = read_file(a);
         write_file(a, read_file(b));
         write_file(b, bytes_a);
       }},
      {"forged checkpoint",
       [](const fs::path& dir) {
         auto note = dir / "checkpoints" / "30.note";
         write_file(note, flip_signature_char(read_file(note)));
       }},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    auto copy = export_copy();
    c.tamper(copy);
    auto target = tmp_ / ("imported-" + std::to_string(copies_));
    for (bool with_key : {false, true}) {
      std::vector<std::string> args{"ledger", "import", copy.string(), target.string()};
      if (with_key) args.insert(args.end(), {"--key", vkey_});
      auto r = warden(args);
      EXPECT_FALSE(r.exited_with(0)) << describe(r);
      EXPECT_EQ(r.term_signal, 0) << describe(r);
      EXPECT_NE(r.err.find("warden: error: "), std::string::npos) << r.err;
      EXPECT_FALSE(fs::exists(target)) << "a refused import left " << target << " behind";
    }
  }
}

}  // namespace
}  // namespace warden::test
