// Bad input through the real `warden` binary: each refusal must use the documented exit
// code, say on stderr what was wrong, and leave the ledger exactly as it was (it still
// verifies, same size, same root): nothing half-written.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <initializer_list>
#include <string>
#include <string_view>

#include "tests/support/files.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"
#include "tests/support/warden_cli.h"

namespace warden::test {
namespace {

namespace fs = std::filesystem;

// Documented in `warden --help` (tools/warden/cli.h).
constexpr int kInvalidInput = 3, kNotFound = 4, kIoError = 5, kAlreadyExists = 6;

// Debian's unprivileged "nobody": root ignores permission bits, so a permission failure has
// to be provoked as another user.
constexpr uid_t kNobodyUid = 65534;
constexpr gid_t kNobodyGid = 65534;

struct LedgerState {
  uint64_t size = 0;
  std::string root;
  bool operator==(const LedgerState&) const = default;
};

class BadInput : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = tmp_ / "ledger";
    auto init = warden({"ledger", "init", dir_.string(), "--max-payload-bytes", "64"});
    ASSERT_TRUE(init.exited_with(0)) << describe(init);
    for (int i = 0; i < 2; ++i) {
      write_file(tmp_ / "ok.json", R"({"i":)" + std::to_string(i) + "}");
      auto appended = warden({"ledger", "append", dir_.string(), "--kind", "run_event", "--payload", path("ok.json")});
      ASSERT_TRUE(appended.exited_with(0)) << describe(appended);
    }
    ASSERT_NO_FATAL_FAILURE(baseline_ = state());
    ASSERT_EQ(baseline_.size, 2u);
  }

  std::string path(const char* name) const { return (tmp_ / name).string(); }

  LedgerState state(const SpawnOptions& as = {}) {
    auto show = warden({"ledger", "show", dir_.string(), "--json"}, as);
    EXPECT_TRUE(show.exited_with(0)) << describe(show);
    if (!show.exited_with(0)) return {};
    auto json = stdout_json(show);
    return {json["size"].get<uint64_t>(), json["root"].get<std::string>()};
  }

  // The documented exit code, and stderr that says what went wrong.
  static void expect_refused(const ProcessResult& r, int code, std::initializer_list<std::string_view> mentions) {
    EXPECT_TRUE(r.exited_with(code)) << "expected exit " << code << "; " << describe(r);
    EXPECT_TRUE(r.err.starts_with("warden: error: ")) << r.err;
    for (auto m : mentions) EXPECT_NE(r.err.find(m), std::string::npos) << "stderr does not mention \"" << m << "\": " << r.err;
  }

  // Nothing half-written: the ledger verifies and is exactly what it was.
  void expect_unchanged() {
    auto verify = warden({"ledger", "verify", dir_.string(), "--json"});
    EXPECT_TRUE(verify.exited_with(0)) << describe(verify);
    EXPECT_EQ(state(), baseline_);
  }

  // Refuses an append of `payload` with `code`, naming `mentions`, and changes nothing.
  void expect_payload_refused(std::string_view payload, int code, std::initializer_list<std::string_view> mentions) {
    write_file(tmp_ / "payload.json", payload);
    auto r = warden({"ledger", "append", dir_.string(), "--kind", "run_event", "--payload", path("payload.json")});
    expect_refused(r, code, mentions);
    expect_unchanged();
  }

  TempDir tmp_;
  fs::path dir_;
  LedgerState baseline_;
};

TEST_F(BadInput, MalformedJsonPayloadIsInvalidInput) {
  expect_payload_refused(R"({"a":)", kInvalidInput, {"payload.json", "not valid JSON"});
}

TEST_F(BadInput, FloatInPayloadIsRefusedWithItsPath) {
  expect_payload_refused(R"({"ok":1,"bad":{"x":1.5}})", kInvalidInput, {"floating-point", "/bad/x"});
}

TEST_F(BadInput, PayloadThatIsNotAnObjectIsRefused) {
  expect_payload_refused("[1,2,3]", kInvalidInput, {"must be a JSON object"});
  expect_payload_refused(R"("just a string")", kInvalidInput, {"must be a JSON object"});
}

TEST_F(BadInput, DuplicateKeysAreRefused) {
  expect_payload_refused(R"({"a":1,"a":2})", kInvalidInput, {"duplicate", "\"a\""});
}

TEST_F(BadInput, PayloadOverTheInitLimitIsRefusedAndTheLimitIsExact) {
  // {"a":"<n chars>"} is 8 + n canonical bytes; the ledger was created with a 64-byte limit.
  expect_payload_refused(R"({"a":")" + std::string(57, 'x') + R"("})", kInvalidInput, {"65 bytes", "limit is 64"});
  // A file where a ledger directory should be is named as such, not as a missing directory
  // `ledger init` would create.
  write_file(tmp_ / "afile", "x");
  auto file = warden({"ledger", "show", path("afile")});
  EXPECT_TRUE(file.exited_with(kInvalidInput)) << describe(file);
  EXPECT_NE(file.err.find("it is a file, not a directory"), std::string::npos) << file.err;
  EXPECT_EQ(file.err.find("creates one"), std::string::npos) << file.err;
  // A limit no record could fit under is refused when the ledger is made.
  auto zero = warden({"ledger", "init", (tmp_ / "zero").string(), "--max-payload-bytes", "0"});
  EXPECT_TRUE(zero.exited_with(kInvalidInput)) << describe(zero);
  EXPECT_NE(zero.err.find("at least 64 bytes"), std::string::npos) << zero.err;
  EXPECT_FALSE(std::filesystem::exists(tmp_ / "zero" / "data.mdb"));
  // Whitespace is not counted: the limit applies to the canonical form.
  write_file(tmp_ / "at_limit.json", "{ \"a\" :  \"" + std::string(56, 'x') + "\" }\n");
  auto at_limit = warden({"ledger", "append", dir_.string(), "--kind", "run_event", "--payload", path("at_limit.json")});
  EXPECT_TRUE(at_limit.exited_with(0)) << describe(at_limit);
  EXPECT_EQ(state().size, baseline_.size + 1);
}

TEST_F(BadInput, MalformedPayloadOnStandardInputIsInvalidInput) {
  SpawnOptions with_stdin;
  with_stdin.stdin_data = R"({"a": 1.0})";
  auto r = warden({"ledger", "append", dir_.string(), "--kind", "run_event", "--payload", "-"}, with_stdin);
  expect_refused(r, kInvalidInput, {"floating-point", "/a"});
  expect_unchanged();
}

TEST_F(BadInput, InvalidKindIsInvalidInput) {
  auto r = warden({"ledger", "append", dir_.string(), "--kind", "Not A Kind"});
  expect_refused(r, kInvalidInput, {"Not A Kind", "a-z"});
  expect_unchanged();
}

TEST_F(BadInput, MissingPayloadFileIsNotFound) {
  auto r = warden({"ledger", "append", dir_.string(), "--kind", "run_event", "--payload", path("absent.json")});
  expect_refused(r, kNotFound, {"absent.json"});
  expect_unchanged();
}

TEST_F(BadInput, JsonModeReportsTheErrorAsJson) {
  write_file(tmp_ / "payload.json", "[]");
  auto r = warden({"ledger", "append", dir_.string(), "--kind", "run_event", "--payload", path("payload.json"), "--json"});
  expect_refused(r, kInvalidInput, {"must be a JSON object"});
  ASSERT_EQ(stdout_json_lines(r).size(), 1u) << describe(r);
  auto json = stdout_json(r);
  EXPECT_EQ(json["type"], "error");
  EXPECT_EQ(json["error"]["code"], "invalid_argument");
  EXPECT_EQ(json["error"]["exit_code"], kInvalidInput);
  expect_unchanged();
}

TEST_F(BadInput, AppendToAMissingDirectoryIsNotFound) {
  auto missing = tmp_ / "no-such-ledger";
  auto r = warden({"ledger", "append", missing.string(), "--kind", "run_event"});
  expect_refused(r, kNotFound, {missing.string(), "does not exist"});
  EXPECT_FALSE(fs::exists(missing)) << "a failed append must not create the directory";
}

TEST_F(BadInput, AppendToADirectoryThatIsNotALedgerIsNotFound) {
  auto plain = tmp_ / "plain";
  fs::create_directory(plain);
  auto r = warden({"ledger", "append", plain.string(), "--kind", "run_event"});
  expect_refused(r, kNotFound, {plain.string(), "no ledger"});
  EXPECT_TRUE(fs::is_empty(plain)) << "a failed append must not create LMDB files";
}

TEST_F(BadInput, InitTwiceIsAlreadyExistsAndKeepsTheSignerKey) {
  const std::string key_before = read_file(dir_ / "signer.key");
  auto r = warden({"ledger", "init", dir_.string()});
  expect_refused(r, kAlreadyExists, {"already exists", dir_.string()});
  EXPECT_EQ(read_file(dir_ / "signer.key"), key_before) << "init over a ledger replaced its signer key";
  expect_unchanged();
}

TEST_F(BadInput, ExportToAnExistingPathIsAlreadyExistsAndLeavesItAlone) {
  auto out = tmp_ / "export";
  fs::create_directory(out);
  write_file(out / "keep.txt", "mine");
  auto r = warden({"ledger", "export", dir_.string(), out.string()});
  expect_refused(r, kAlreadyExists, {out.string(), "already exists"});
  EXPECT_EQ(read_file(out / "keep.txt"), "mine");
  EXPECT_EQ(std::distance(fs::directory_iterator(out), fs::directory_iterator()), 1);
  EXPECT_FALSE(fs::exists(tmp_ / "export.partial"));
  expect_unchanged();
}

TEST_F(BadInput, CheckpointWithAnotherLedgersKeyIsRefused) {
  auto other = warden({"key", "generate", "someone.else/log", "--signer-out", path("other.key")});
  ASSERT_TRUE(other.exited_with(0)) << describe(other);
  auto r = warden({"ledger", "checkpoint", dir_.string(), "--signer-key", path("other.key")});
  expect_refused(r, kInvalidInput, {"does not match"});
  auto show = stdout_json(warden({"ledger", "show", dir_.string(), "--json"}));
  EXPECT_TRUE(show["checkpoint_sizes"].empty());
  expect_unchanged();
}

TEST_F(BadInput, ReadOnlyLedgerRefusesAppendAsAnotherUserButStillReads) {
  // As root, drop to nobody; anyone else is already subject to the permission bits.
  SpawnOptions nobody;
  if (::geteuid() == 0) {
    nobody.uid = kNobodyUid;
    nobody.gid = kNobodyGid;
  }
  // nobody must reach the ledger (mkdtemp made the test dir 0700) and the binary.
  fs::permissions(tmp_.path(), fs::perms(0755));
  auto probe = warden({"--version"}, nobody);
  ASSERT_TRUE(probe.exited_with(0)) << "uid " << kNobodyUid << " cannot run " << warden_binary()
                                    << " (every directory on its path must be world-searchable): " << describe(probe);

  for (const auto& entry : fs::directory_iterator(dir_)) fs::permissions(entry.path(), fs::perms(0444));
  fs::permissions(dir_, fs::perms(0555));
  const std::string data_before = read_file(dir_ / "data.mdb");

  auto r = warden({"ledger", "append", dir_.string(), "--kind", "run_event"}, nobody);
  expect_refused(r, kIoError, {dir_.string(), "Permission denied"});

  auto verify = warden({"ledger", "verify", dir_.string(), "--json"}, nobody);
  EXPECT_TRUE(verify.exited_with(0)) << describe(verify);
  EXPECT_EQ(stdout_json(verify)["records"], baseline_.size);
  EXPECT_EQ(state(nobody), baseline_);
  auto record = warden({"ledger", "show", dir_.string(), "1", "--json"}, nobody);
  EXPECT_TRUE(record.exited_with(0)) << describe(record);

  // As the owner again: byte-for-byte the same store, and it still verifies.
  EXPECT_EQ(read_file(dir_ / "data.mdb"), data_before);
  expect_unchanged();
}

}  // namespace
}  // namespace warden::test
