// The rule for a ledger's keys and the ledger commands around it, through the `warden`
// binary: creating a ledger writes LEDGER/signer.key (0600) and LEDGER/signer.pub, commands
// that sign find the key there, a key file named on the command line overrides it, and a key
// file that is a link or that others may read is refused (the ledger's own) or warned about
// (the operator's). Also: the origin must be the key's name, `ledger show` lists records, and
// `note sign` takes a signer key only from a file.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <string>
#include <vector>

#include "ledger/note.h"
#include "tests/support/files.h"
#include "tests/support/temp_dir.h"
#include "tests/support/warden_cli.h"

namespace warden::test {
namespace {

namespace fs = std::filesystem;

constexpr int kUsage = 2, kInvalidInput = 3, kNotFound = 4;

mode_t mode_of(const fs::path& p) {
  struct stat st {};
  EXPECT_EQ(::lstat(p.c_str(), &st), 0) << p;
  return st.st_mode & 07777;
}

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

class KeysCli : public ::testing::Test {
 protected:
  // A ledger made by `ledger init` under parents that do not exist yet, with `n` records.
  fs::path make_ledger(int n) {
    fs::path dir = tmp_ / "a" / "b" / "ledger";
    auto init = warden({"ledger", "init", dir.string(), "--json"});
    EXPECT_TRUE(init.exited_with(0)) << describe(init);
    for (int i = 0; i < n; ++i) append(dir, i % 2 ? "odd" : "even", R"({"i":)" + std::to_string(i) + "}");
    return dir;
  }

  void append(const fs::path& dir, const std::string& kind, const std::string& payload) {
    write_file(tmp_ / "payload.json", payload);
    auto r = warden({"ledger", "append", dir.string(), "--kind", kind, "--payload", (tmp_ / "payload.json").string()});
    ASSERT_TRUE(r.exited_with(0)) << describe(r);
  }

  TempDir tmp_;
};

TEST_F(KeysCli, InitWritesBothKeysInTheLedgerAndCheckpointFindsThem) {
  fs::path dir = make_ledger(2);
  const fs::path key = dir / "signer.key", pub = dir / "signer.pub";
  ASSERT_TRUE(fs::is_regular_file(key));
  ASSERT_TRUE(fs::is_regular_file(pub));
  EXPECT_EQ(mode_of(key), 0600u);
  auto signer = NoteSigner::parse(first_line(read_file(key)));
  ASSERT_TRUE(signer) << signer.error().message;
  EXPECT_EQ(first_line(read_file(pub)), signer->verifier().encoded());

  auto cp = warden({"ledger", "checkpoint", dir.string()});
  ASSERT_TRUE(cp.exited_with(0)) << describe(cp);
  // The published key verifies it, with no unsigned tail.
  auto verified = warden({"ledger", "verify", dir.string(), "--key", pub.string(), "--json"});
  ASSERT_TRUE(verified.exited_with(0)) << describe(verified);
  EXPECT_EQ(stdout_json(verified)["unsigned_records"], 0);
}

TEST_F(KeysCli, AGivenKeyOverridesAndANewLedgerKeepsACopy) {
  auto gen = warden({"key", "generate", "example.com/mine", "--signer-out", (tmp_ / "mine.key").string(),
                     "--verifier-out", (tmp_ / "mine.pub").string()});
  ASSERT_TRUE(gen.exited_with(0)) << describe(gen);
  fs::path dir = tmp_ / "ledger";
  auto init = warden({"ledger", "init", dir.string(), "--signer-key", (tmp_ / "mine.key").string(), "--json"});
  ASSERT_TRUE(init.exited_with(0)) << describe(init);
  EXPECT_EQ(stdout_json(init)["origin"], "example.com/mine");
  EXPECT_EQ(read_file(dir / "signer.key"), read_file(tmp_ / "mine.key"));
  EXPECT_EQ(read_file(dir / "signer.pub"), read_file(tmp_ / "mine.pub"));
  EXPECT_EQ(mode_of(dir / "signer.key"), 0600u);

  // Another key passed explicitly is used, and refused because it does not sign this ledger.
  ASSERT_TRUE(warden({"key", "generate", "example.com/other", "--signer-out", (tmp_ / "other.key").string()}).exited_with(0));
  auto other = warden({"ledger", "checkpoint", dir.string(), "--signer-key", (tmp_ / "other.key").string()});
  EXPECT_FALSE(other.exited_with(0)) << describe(other);
  EXPECT_TRUE(warden({"ledger", "checkpoint", dir.string(), "--signer-key", (tmp_ / "mine.key").string()}).exited_with(0));
}

TEST_F(KeysCli, ALedgerWithoutItsKeySaysWhichFlagToPass) {
  fs::path dir = make_ledger(1);
  fs::remove(dir / "signer.key");
  auto r = warden({"ledger", "checkpoint", dir.string()});
  EXPECT_TRUE(r.exited_with(kNotFound)) << describe(r);
  EXPECT_NE(r.err.find((dir / "signer.key").string()), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("pass --signer-key FILE"), std::string::npos) << r.err;
}

TEST_F(KeysCli, AMissingLedgerNamesTheCommandThatCreatesIt) {
  const std::string dir = (tmp_ / "nowhere").string();
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"ledger", "show", dir}, {"ledger", "checkpoint", dir}, {"ledger", "append", dir, "--kind", "x"}}) {
    auto r = warden(args);
    EXPECT_TRUE(r.exited_with(kNotFound)) << describe(r);
    EXPECT_NE(r.err.find("`warden ledger init " + dir + "`"), std::string::npos) << describe(r);
  }
}

// Attack: the ledger's own signer.key replaced by a link to someone else's key file, or made
// readable by others. Warden wrote it 0600 and never a link: either is refused, and nothing
// is signed.
TEST_F(KeysCli, TheLedgersOwnKeyAsALinkOrReadableByOthersIsRefused) {
  fs::path dir = make_ledger(1);
  const fs::path key = dir / "signer.key";
  fs::copy_file(key, tmp_ / "elsewhere.key");
  ::chmod((tmp_ / "elsewhere.key").c_str(), 0600);
  fs::remove(key);
  fs::create_symlink(tmp_ / "elsewhere.key", key);
  auto linked = warden({"ledger", "checkpoint", dir.string()});
  EXPECT_TRUE(linked.exited_with(kInvalidInput)) << describe(linked);
  EXPECT_NE(linked.err.find("is a symlink: refused"), std::string::npos) << linked.err;

  fs::remove(key);
  fs::copy_file(tmp_ / "elsewhere.key", key);
  ::chmod(key.c_str(), 0640);
  auto readable = warden({"ledger", "checkpoint", dir.string()});
  EXPECT_TRUE(readable.exited_with(kInvalidInput)) << describe(readable);
  EXPECT_NE(readable.err.find("mode 0640"), std::string::npos) << readable.err;
  EXPECT_NE(readable.err.find("chmod 600"), std::string::npos) << readable.err;

  auto verify = warden({"ledger", "verify", dir.string(), "--json"});
  ASSERT_TRUE(verify.exited_with(0)) << describe(verify);
  EXPECT_EQ(stdout_json(verify)["checkpoints"], 0) << "a refused key signed a checkpoint";

  ::chmod(key.c_str(), 0600);
  EXPECT_TRUE(warden({"ledger", "checkpoint", dir.string()}).exited_with(0));
}

// The operator's own key file is theirs: used, with a warning when others may read it.
TEST_F(KeysCli, AGivenKeyReadableByOthersIsUsedWithAWarning) {
  fs::path dir = make_ledger(1);
  fs::copy_file(dir / "signer.key", tmp_ / "copy.key");
  ::chmod((tmp_ / "copy.key").c_str(), 0644);
  auto r = warden({"ledger", "checkpoint", dir.string(), "--signer-key", (tmp_ / "copy.key").string()});
  ASSERT_TRUE(r.exited_with(0)) << describe(r);
  EXPECT_NE(r.err.find("warden: warning: signer key " + (tmp_ / "copy.key").string() + " has mode 0644"),
            std::string::npos)
      << r.err;
}

// signer.pub is what people copy out and publish: one that no longer matches the key the
// ledger records is reported.
TEST_F(KeysCli, VerifyWarnsWhenSignerPubIsNotTheLedgersKey) {
  fs::path dir = make_ledger(1);
  ASSERT_TRUE(warden({"ledger", "checkpoint", dir.string()}).exited_with(0));
  auto clean = warden({"ledger", "verify", dir.string()});
  ASSERT_TRUE(clean.exited_with(0)) << describe(clean);
  EXPECT_EQ(clean.err.find("was replaced"), std::string::npos) << clean.err;
  auto gen = warden({"key", "generate", "warden.local/ledger"});
  ASSERT_TRUE(gen.exited_with(0));
  write_file(dir / "signer.pub", complete_lines(gen.out).at(1) + "\n");
  auto swapped = warden({"ledger", "verify", dir.string()});
  ASSERT_TRUE(swapped.exited_with(0)) << describe(swapped);
  EXPECT_NE(swapped.err.find((dir / "signer.pub").string() + " holds "), std::string::npos) << swapped.err;
  EXPECT_NE(swapped.err.find("one of them was replaced"), std::string::npos) << swapped.err;
}

// Ledgers made before the rule: build kept <out>/kernel.key beside <out>/ledger, propose kept
// LEDGER.key. Both are still read (with a warning naming the move); nothing new goes there.
TEST_F(KeysCli, AKeyWhereAnOlderWardenKeptItIsReadWithAWarning) {
  fs::path dir = make_ledger(1);  // .../a/b/ledger
  const fs::path build_key = dir.parent_path() / "kernel.key", propose_key = fs::path(dir.string() + ".key");
  fs::rename(dir / "signer.key", build_key);
  auto r = warden({"ledger", "checkpoint", dir.string()});
  ASSERT_TRUE(r.exited_with(0)) << describe(r);
  EXPECT_NE(r.err.find("signer key read from " + build_key.string() + ", where an older Warden kept it"), std::string::npos)
      << r.err;
  fs::rename(build_key, propose_key);
  append(dir, "even", "{}");
  auto p = warden({"ledger", "checkpoint", dir.string()});
  ASSERT_TRUE(p.exited_with(0)) << describe(p);
  EXPECT_NE(p.err.find("mv " + propose_key.string() + " " + (dir / "signer.key").string()), std::string::npos) << p.err;
  EXPECT_FALSE(fs::exists(dir / "signer.key")) << "an old key was moved without being asked";
}

// C2SP: a checkpoint's origin is the name of the key that signs it.
TEST_F(KeysCli, InitRefusesAnOriginOtherThanTheKeysName) {
  ASSERT_TRUE(warden({"key", "generate", "example.com/a", "--signer-out", (tmp_ / "a.key").string()}).exited_with(0));
  fs::path dir = tmp_ / "ledger";
  auto r = warden({"ledger", "init", dir.string(), "--signer-key", (tmp_ / "a.key").string(), "--origin", "example.com/b"});
  EXPECT_TRUE(r.exited_with(kInvalidInput)) << describe(r);
  EXPECT_NE(r.err.find("--origin example.com/b is not the signer key's name (example.com/a)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("C2SP"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "data.mdb"));
  EXPECT_FALSE(fs::exists(dir / "signer.key")) << "a refused init kept a copy of the key";

  auto same = warden({"ledger", "init", dir.string(), "--signer-key", (tmp_ / "a.key").string(), "--origin", "example.com/a"});
  EXPECT_TRUE(same.exited_with(0)) << describe(same);
  // Without a key, the new key is named after the origin: they agree by construction.
  auto fresh = warden({"ledger", "init", (tmp_ / "fresh").string(), "--origin", "example.com/c", "--json"});
  ASSERT_TRUE(fresh.exited_with(0)) << describe(fresh);
  EXPECT_TRUE(stdout_json(fresh)["verifier_key"].get<std::string>().starts_with("example.com/c+"));
}

TEST_F(KeysCli, NoteSignTakesTheSignerKeyOnlyFromAFileAndSaysWhy) {
  auto gen = warden({"key", "generate", "example.com/n"});
  ASSERT_TRUE(gen.exited_with(0)) << describe(gen);
  const std::string skey = first_line(gen.out);
  write_file(tmp_ / "text", "hello\n");
  auto r = warden({"note", "sign", "--key", skey, (tmp_ / "text").string()});
  EXPECT_TRUE(r.exited_with(kUsage)) << describe(r);
  EXPECT_NE(r.err.find("/proc/PID/cmdline"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find(skey.substr(skey.rfind('+'))), std::string::npos) << "the error repeats the secret: " << r.err;
  auto help = warden({"note", "sign", "--help"});
  EXPECT_NE(help.out.find("shell history"), std::string::npos) << help.out;

  write_file(tmp_ / "n.key", skey + "\n");
  ::chmod((tmp_ / "n.key").c_str(), 0600);
  auto ok = warden({"note", "sign", "--key", (tmp_ / "n.key").string(), (tmp_ / "text").string()});
  ASSERT_TRUE(ok.exited_with(0)) << describe(ok);
  EXPECT_TRUE(ok.out.starts_with("hello\n\n\xE2\x80\x94 example.com/n ")) << ok.out;
}

TEST_F(KeysCli, ShowListsFiltersAndPrettyPrintsRecords) {
  fs::path dir = make_ledger(6);  // even odd even odd even odd
  append(dir, "runrec", R"({"run_id":"r-1","nested":{"a":[1,2]}})");
  append(dir, "runrec", R"({"run_id":"r-2"})");
  const std::string d = dir.string();

  auto range = warden({"ledger", "show", d, "1..3"});
  ASSERT_TRUE(range.exited_with(0)) << describe(range);
  EXPECT_EQ(range.out, "1 odd {\"i\":1}\n2 even {\"i\":2}\n3 odd {\"i\":3}\n");

  auto kinds = warden({"ledger", "show", d, "2..", "--kind", "odd"});
  ASSERT_TRUE(kinds.exited_with(0)) << describe(kinds);
  EXPECT_EQ(kinds.out, "3 odd {\"i\":3}\n5 odd {\"i\":5}\n");

  auto run = warden({"ledger", "show", d, "--run", "r-1", "--json"});
  ASSERT_TRUE(run.exited_with(0)) << describe(run);
  auto lines = complete_lines(run.out);
  ASSERT_EQ(lines.size(), 2u) << run.out;  // the record, then the result line
  EXPECT_EQ(nlohmann::json::parse(lines[1])["records"], 1) << run.out;
  auto j = nlohmann::json::parse(lines[0]);
  EXPECT_EQ(j["type"], "record");
  EXPECT_EQ(j["seq"], 6);
  EXPECT_EQ(j["kind"], "runrec");
  EXPECT_EQ(j["payload"]["nested"]["a"][1], 2);
  EXPECT_EQ(j["hash"].get<std::string>().size(), 64u);
  EXPECT_EQ(j["prev"].get<std::string>().size(), 64u);

  auto all = warden({"ledger", "show", d, "..", "--json"});
  ASSERT_TRUE(all.exited_with(0)) << describe(all);
  auto every = complete_lines(all.out);
  ASSERT_EQ(every.size(), 9u) << all.out;  // 8 records, then the result line
  for (size_t i = 0; i < 8; ++i) EXPECT_EQ(nlohmann::json::parse(every[i])["seq"], i);
  EXPECT_EQ(nlohmann::json::parse(every[8])["type"], "result");

  auto pretty = warden({"ledger", "show", d, "6..6", "--pretty"});
  ASSERT_TRUE(pretty.exited_with(0)) << describe(pretty);
  EXPECT_TRUE(pretty.out.starts_with("seq 6  runrec  ts ")) << pretty.out;
  EXPECT_NE(pretty.out.find("\n  {\n    \"nested\": {\n      \"a\": [\n"), std::string::npos) << pretty.out;

  auto one = warden({"ledger", "show", d, "6", "--pretty"});
  ASSERT_TRUE(one.exited_with(0)) << describe(one);
  EXPECT_NE(one.out.find("payload\n  {\n    \"nested\""), std::string::npos) << one.out;

  for (const char* bad : {"3..1", "x..2", "1..y", "seven"}) {
    auto r = warden({"ledger", "show", d, bad});
    EXPECT_TRUE(r.exited_with(kInvalidInput)) << bad << ": " << describe(r);
  }
}

}  // namespace
}  // namespace warden::test
