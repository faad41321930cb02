// Bounded work on hostile input, through the real binary: a patch naming a file in
// bytes that are not UTF-8, a JSON number too large for a double, an endless --leaves file and
// a patch declaring gigabytes of binary literal are each refused with exit 3 and a reason,
// at once and in little memory; never exit 70, a signal or silence.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <zlib.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/canonical_json.h"
#include "tests/support/files.h"
#include "tests/support/git_fixture.h"
#include "tests/support/warden_cli.h"
#include "tests/support/git_base85.h"

namespace warden::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;


// `size` zero bytes, deflated a chunk at a time (the test never holds them).
std::string deflated_zeros(uint64_t size) {
  z_stream zs{};
  EXPECT_EQ(deflateInit(&zs, 9), Z_OK);
  std::string zeros(1 << 20, '\0'), out;
  std::string buf(1 << 16, '\0');
  uint64_t left = size;
  int flush = Z_NO_FLUSH;
  do {
    size_t take = static_cast<size_t>(std::min<uint64_t>(left, zeros.size()));
    left -= take;
    flush = left == 0 ? Z_FINISH : Z_NO_FLUSH;
    zs.next_in = reinterpret_cast<Bytef*>(zeros.data());
    zs.avail_in = static_cast<uInt>(take);
    do {
      zs.next_out = reinterpret_cast<Bytef*>(buf.data());
      zs.avail_out = static_cast<uInt>(buf.size());
      deflate(&zs, flush);
      out.append(buf.data(), buf.size() - zs.avail_out);
    } while (zs.avail_out == 0);
  } while (flush != Z_FINISH);
  deflateEnd(&zs);
  return out;
}

// The exit code 3, `code` on stderr, and with --json a JSON refusal or error on stdout.
void expect_invalid_input(const ProcessResult& r, const std::string& reason) {
  EXPECT_TRUE(r.exited_with(kExitInvalidInput)) << describe(r);
  EXPECT_NE(r.err.find(reason), std::string::npos) << "stderr does not say \"" << reason << "\"\n" << describe(r);
  EXPECT_EQ(r.err.find("internal error"), std::string::npos) << describe(r);
}

class HostileInput : public ::testing::Test {
 protected:
  GitRepoFixture repo;
  std::string base;

  void SetUp() override {
    repo.write("a.txt", "one\ntwo\n");
    base = repo.commit_all("base");
  }

  fs::path scratch_file(const std::string& name, std::string_view bytes) {
    fs::path p = repo.scratch(name);
    write_file(p, bytes);
    return p;
  }
};

// A new file whose name holds the byte 0xff, as git would quote it.
constexpr const char* kNonUtf8Patch =
    "diff --git \"a/x\\377y.txt\" \"b/x\\377y.txt\"\nnew file mode 100644\n--- /dev/null\n+++ \"b/x\\377y.txt\"\n"
    "@@ -0,0 +1 @@\n+hello\n";

TEST_F(HostileInput, NonUtf8FileNameInAPatchIsMalformedPatch) {
  fs::path p = scratch_file("bad.patch", kNonUtf8Patch);
  auto human = warden_diff("parse", p.string(), repo, base);
  expect_invalid_input(human, "malformed_patch");
  EXPECT_NE(human.err.find("path \"x\\xffy.txt\" is not valid UTF-8"), std::string::npos) << describe(human);

  auto machine = warden_diff("parse", p.string(), repo, base, {"--json"});
  expect_invalid_input(machine, "malformed_patch");
  json out = stdout_json(machine);
  EXPECT_EQ(out["ok"], false);
  EXPECT_EQ(out["refusal"]["code"], "malformed_patch");
  EXPECT_NE(out["refusal"]["detail"].get<std::string>().find("not valid UTF-8"), std::string::npos) << out.dump();

  // The same byte raw (unquoted, as no git writes it) and in a plain unified diff.
  std::string raw = "--- a/x\xffy.txt\n+++ b/x\xffy.txt\n@@ -1 +1 @@\n-a\n+b\n";
  expect_invalid_input(warden_diff("parse", scratch_file("raw.patch", raw).string(), repo, base, {"--json"}),
                       "malformed_patch");
  // A rename onto such a name.
  std::string rename = "diff --git a/a.txt \"b/\\377\"\nsimilarity index 100%\nrename from a.txt\nrename to \"\\377\"\n";
  expect_invalid_input(warden_diff("parse", scratch_file("rename.patch", rename).string(), repo, base, {"--json"}),
                       "malformed_patch");
}

TEST_F(HostileInput, NonUtf8StepIdIsRefused) {
  repo.write("a.txt", "one\nTWO\n");
  std::string patch = repo.staged_patch();
  repo.reset_hard(base);
  auto r = warden_diff("parse", scratch_file("ok.patch", patch).string(), repo, base, {"--json", "--step", "s\xff"});
  expect_invalid_input(r, "malformed_diff");
  EXPECT_EQ(stdout_json(r)["refusal"]["code"], "malformed_diff");
}

TEST_F(HostileInput, ProposeRefusesANonUtf8FileNameBeforeRecordingAnything) {
  fs::path p = scratch_file("bad.patch", kNonUtf8Patch);
  auto r = warden({"propose", p.string(), "--repo", repo.repo().string(), "--base", base, "--check", "true", "--json"});
  expect_invalid_input(r, "malformed_patch");
  EXPECT_EQ(stdout_json(r)["type"], "error");
  // Refused as input: no run was started, so none is left behind in any state.
  EXPECT_FALSE(fs::exists(repo.repo() / ".git" / "warden-ledger"));
}

TEST_F(HostileInput, AnOutOfRangeNumberIsNamedWithItsPlace) {
  fs::path diff = scratch_file("n.json", "{\"step_id\": \"s1\",\n \"files\": [], \"x\": \"1e999\", \"y\": -1e400}");
  auto r = warden_diff("check", diff.string(), repo, base, {"--json"});
  expect_invalid_input(r, "number -1e400 at line 2, column 34 is out of range");
  json out = stdout_json(r);
  EXPECT_NE(out["error"]["message"].get<std::string>().find("-1e400"), std::string::npos) << out.dump();
  // A proposal is judged as the JSON it opens as, with the same reason.
  auto proposed = warden({"propose", diff.string(), "--repo", repo.repo().string(), "--base", base, "--check", "true"});
  expect_invalid_input(proposed, "number -1e400 at line 2, column 34 is out of range");
  // A 400-digit integer is out of range the same way.
  auto big = warden_diff("check", scratch_file("big.json", "[" + std::string(400, '9') + "]").string(), repo, base);
  expect_invalid_input(big, "is out of range");
}

TEST_F(HostileInput, MerkleLeavesFromAnEndlessDeviceAreRefusedAtTheFirstByte) {
  auto start = std::chrono::steady_clock::now();
  auto r = warden({"merkle", "root", "--leaves", "/dev/zero", "--json"});
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  expect_invalid_input(r, "/dev/zero line 1: invalid hex character at offset 0");
  EXPECT_EQ(stdout_json(r)["type"], "error");

  auto bad = warden({"merkle", "root", "--leaves", scratch_file("leaves", "00\nff\n0g\n").string()});
  expect_invalid_input(bad, "line 3: invalid hex character at offset 1");
  auto good = warden({"merkle", "root", "--leaves", scratch_file("good", "00\n\n0a0b\n").string(), "--json"});
  ASSERT_TRUE(good.exited_with(0)) << describe(good);
  EXPECT_EQ(stdout_json(good)["size"], 3);
}

// The patch: four "literal 1073741824" blocks of real deflated zeros (5.4 MB in all).
// It used to take 6.3 GB and 24 s to refuse; the declared sizes refuse it on the first
// header, before a byte is decoded.
TEST_F(HostileInput, FourGibibyteLiteralsAreRefusedBeforeInflating) {
  constexpr uint64_t kGiB = uint64_t{1} << 30;
  std::string z = deflated_zeros(kGiB);
  std::string block = "literal " + std::to_string(kGiB) + "\n";
  for (size_t i = 0; i < z.size(); i += 52) block += git_base85_line(std::string_view(z).substr(i, 52)) + "\n";
  block += "\n";
  std::string patch;
  for (int f = 0; f < 4; ++f) {
    std::string name = "big" + std::to_string(f) + ".bin";
    patch += "diff --git a/" + name + " b/" + name + "\nnew file mode 100644\nGIT binary patch\n" + block;
  }
  ASSERT_GT(patch.size(), 5'000'000u);
  fs::path p = scratch_file("bomb.patch", patch);

  auto start = std::chrono::steady_clock::now();
  auto r = warden_diff("parse", p.string(), repo, base, {"--json"});
  auto took = std::chrono::steady_clock::now() - start;
  expect_invalid_input(r, "patch_too_large");
  EXPECT_EQ(stdout_json(r)["refusal"]["code"], "patch_too_large");
  EXPECT_NE(r.err.find("line 4: binary payload declares 1073741824 bytes"), std::string::npos) << describe(r);
  // The sanitizers' shadow memory and slower code move both bounds; unbounded work was 24 s
  // and 6.3 GB, far past either.
#if defined(__SANITIZE_ADDRESS__)
  constexpr auto kMaxTime = std::chrono::seconds(10);
  constexpr long kMaxRssKiB = 1024 * 1024;
#else
  constexpr auto kMaxTime = std::chrono::seconds(2);
  constexpr long kMaxRssKiB = 256 * 1024;
#endif
  EXPECT_LT(took, kMaxTime) << "refusing took " << std::chrono::duration<double>(took).count() << " s";
  // Every child so far (git and warden) stayed small: nothing was inflated or reserved.
  rusage usage{};
  ASSERT_EQ(getrusage(RUSAGE_CHILDREN, &usage), 0);
  EXPECT_LT(usage.ru_maxrss, kMaxRssKiB) << "max RSS " << usage.ru_maxrss << " KiB";
}

}  // namespace
}  // namespace warden::test
