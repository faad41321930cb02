// `warden propose` gives the right reasons, end to end through the real binary on real git
// repositories and the real sandbox: a call that was already there (re-indented, moved) is
// not a new dangerous operation and the change lands with git's exact tree; a newly added
// system() or os.system is refused naming the file and line; a new sprintf passes the default
// policy and is refused by a policy naming the lint rule; a patch that does not apply is
// refused hunk_mismatch / hash_mismatch with `warden diff parse`'s own message, never
// malformed_diff; and a binary patch over the size limit is diff_too_large.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <random>
#include <algorithm>
#include <string>

#include "tests/kernel/build_fixture.h"

namespace warden::test {
namespace {

// A small C library with its own test: a sprintf and a system() that were always there.
constexpr const char* kFmtC =
    "#include <stdio.h>\n"
    "#include <stdlib.h>\n"
    "\n"
    "int fmt_int(char *buf, int n) {\n"
    "  return sprintf(buf, \"%d\", n);\n"
    "}\n"
    "\n"
    "int run_true(void) {\n"
    "  return system(\"true\");\n"
    "}\n";
constexpr const char* kTestC =
    "#include <string.h>\n"
    "int fmt_int(char *buf, int n);\n"
    "int main(void) {\n"
    "  char buf[16];\n"
    "  fmt_int(buf, 42);\n"
    "  return strcmp(buf, \"42\") != 0;\n"
    "}\n";
// Compiled and run in the sandbox: the change is judged by a real build.
constexpr const char* kCompileAndTest = "cc -Wall -o /tmp/fmt_test test_fmt.c fmt.c && /tmp/fmt_test";

class ProposeReasonsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    repo.write("fmt.c", kFmtC);
    repo.write("test_fmt.c", kTestC);
    repo.write("tools/gen.py", "import os\n\n\ndef gen(path):\n    return os.path.join(path, 'out')\n");
    base = repo.commit_all("base");
  }

  // The patch of `files` over the base (written beside the repository) and its text; the
  // work tree is put back.
  std::filesystem::path patch(const std::string& name, const std::map<std::string, std::string>& files) {
    for (const auto& [path, content] : files) repo.write(path, content);
    std::filesystem::path out = repo.scratch(name);
    write_file(out, repo.staged_patch());
    repo.reset_hard(base);
    return out;
  }

  ProcessResult propose(const std::filesystem::path& proposal, const std::string& check, std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"propose", proposal.string(), "--repo", repo.repo().string(), "--base", base,
                                     "--check", check};
    args.insert(args.end(), extra.begin(), extra.end());
    if (std::find(extra.begin(), extra.end(), "--branch") == extra.end()) args.insert(args.end(), {"--branch", "warden/propose"});
    return warden(args);
  }

  // The accepted commit holds exactly the tree git makes of the patch on the base.
  void expect_gits_tree(const std::filesystem::path& proposal, const std::string& branch = "warden/propose") {
    EXPECT_EQ(repo.git_line({"rev-parse", branch + "^{tree}"}), repo.git_apply_tree(base, read_file(proposal)));
    EXPECT_EQ(repo.git_line({"rev-parse", branch + "^"}), base);
  }

  // What `warden diff parse` says of the patch on --base `on`: its refusal's message.
  std::string diff_parse_refusal(const std::filesystem::path& proposal, const std::string& on) {
    auto parsed = warden_diff("parse", proposal.string(), repo, on);
    EXPECT_FALSE(parsed.exited_with(0)) << describe(parsed);
    const std::string prefix = "warden: refused: ";
    auto at = parsed.err.find(prefix);
    if (at == std::string::npos) return "(no refusal: " + parsed.err + ")";
    at += prefix.size();
    return parsed.err.substr(at, parsed.err.find('\n', at) - at);
  }

  std::filesystem::path ledger() const { return repo.repo() / ".git" / "warden-ledger"; }
  std::filesystem::path verifier() const { return repo.repo() / ".git" / "warden-ledger" / "signer.pub"; }

  GitRepoFixture repo;
  std::string base;
};

std::string with_line(std::string text, const std::string& after, const std::string& inserted) {
  auto at = text.find(after);
  EXPECT_NE(at, std::string::npos) << after;
  at = text.find('\n', at) + 1;
  return text.insert(at, inserted);
}

TEST_F(ProposeReasonsTest, AReindentedSprintfIsAcceptedWithGitsExactTree) {
  std::string reindented = kFmtC;
  const std::string old_body = "  return sprintf(buf, \"%d\", n);\n";
  reindented.replace(reindented.find(old_body), old_body.size(),
                     "  if (buf == NULL) {\n    return -1;\n  }\n  {\n      return sprintf(buf, \"%d\", n);\n  }\n");
  auto p = patch("reindent.patch", {{"fmt.c", reindented}});
  ASSERT_NE(read_file(p).find("+      return sprintf(buf, \"%d\", n);"), std::string::npos) << "git shows the line as added";
  auto r = propose(p, kCompileAndTest, {"--json"});
  ASSERT_TRUE(r.exited_with(0)) << describe(r);
  EXPECT_EQ(stdout_json(r)["accepted"], true);
  expect_gits_tree(p);
  expect_ledger_verifies(ledger(), verifier());
}

TEST_F(ProposeReasonsTest, AMovedSystemCallIsAccepted) {
  // run_true (with its system call) moved above fmt_int, and the file renamed in the same
  // patch: the call was there before, in the file's old name.
  const std::string moved =
      "#include <stdio.h>\n#include <stdlib.h>\n\nint run_true(void) {\n  return system(\"true\");\n}\n\n"
      "int fmt_int(char *buf, int n) {\n  return sprintf(buf, \"%d\", n);\n}\n";
  repo.write("fmt.c", moved);
  repo.git({"mv", "fmt.c", "format.c"});
  std::filesystem::path p = repo.scratch("move.patch");
  write_file(p, repo.staged_patch({"-M"}));
  repo.reset_hard(base);
  ASSERT_NE(read_file(p).find("rename from fmt.c"), std::string::npos) << read_file(p);
  auto r = propose(p, "cc -Wall -o /tmp/fmt_test test_fmt.c format.c && /tmp/fmt_test");
  ASSERT_TRUE(r.exited_with(0)) << describe(r);
  expect_gits_tree(p);
}

TEST_F(ProposeReasonsTest, ANewSystemCallIsRefusedNamingFileAndLine) {
  auto c = patch("system.patch", {{"fmt.c", std::string(kFmtC) + "\nint clean(void) {\n  return system(\"rm -rf build\");\n}\n"}});
  const auto before = repo.snapshot().refs;
  auto r = propose(c, kCompileAndTest);
  ASSERT_TRUE(r.exited_with(kExitRefused)) << describe(r);
  EXPECT_NE(r.out.find("  dangerous_operation_detected: fmt.c:13 c.system `return system(\"rm -rf build\");`\n"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("fmt.c:9"), std::string::npos) << "the call that was there is not new: " << r.out;
  EXPECT_EQ(repo.snapshot().refs, before);

  auto py = patch("os_system.patch", {{"tools/gen.py", "import os\n\n\ndef gen(path):\n    os.system('make ' + path)\n"
                                                       "    return os.path.join(path, 'out')\n"}});
  auto refused = propose(py, "true", {"--json"});
  ASSERT_TRUE(refused.exited_with(kExitRefused)) << describe(refused);
  auto reasons = stdout_json(refused)["refusal"]["reasons"];
  ASSERT_EQ(reasons.size(), 1u) << reasons.dump();
  EXPECT_EQ(reasons[0]["code"], "dangerous_operation_detected");
  EXPECT_EQ(reasons[0]["detail"], "tools/gen.py:5 py.os_system `os.system('make ' + path)`");
  expect_ledger_verifies(ledger(), verifier());
}

TEST_F(ProposeReasonsTest, ANewSprintfPassesTheDefaultPolicyAndNotOneNamingTheLintRule) {
  auto p = patch("sprintf.patch", {{"fmt.c", with_line(kFmtC, "int fmt_int", "  char unused[8];\n  sprintf(unused, \"%c\", 'x');\n")}});
  auto lint_policy = repo.scratch("lint.json");
  write_file(lint_policy, R"({"format": "warden.policy/v1", "name": "lint", "max_diff_bytes": 1048576,
                              "dangerous_operations": true, "dangerous_operation_rules": ["c.sprintf"]})");
  auto refused = propose(p, kCompileAndTest, {"--policy", lint_policy.string(), "--branch", "lint"});
  ASSERT_TRUE(refused.exited_with(kExitRefused)) << describe(refused);
  EXPECT_NE(refused.out.find("  dangerous_operation_detected: fmt.c:6 c.sprintf `sprintf(unused, \"%c\", 'x');`\n"),
            std::string::npos)
      << refused.out;
  EXPECT_FALSE(has_ref(repo.repo(), "lint"));

  auto accepted = propose(p, kCompileAndTest);
  ASSERT_TRUE(accepted.exited_with(0)) << describe(accepted);
  expect_gits_tree(p);

  // A policy naming a rule the scan does not have is refused before anything runs.
  write_file(lint_policy, R"({"format": "warden.policy/v1", "name": "lint", "dangerous_operation_rules": ["c.sprintff"]})");
  auto unknown = propose(p, kCompileAndTest, {"--policy", lint_policy.string(), "--branch", "other"});
  EXPECT_TRUE(unknown.exited_with(kExitInvalidInput)) << describe(unknown);
  EXPECT_NE(unknown.err.find("dangerous_operation_rules"), std::string::npos) << unknown.err;
}

// The base moves on: fmt.c's sprintf line is rewritten, then a patch made on the old base is
// offered on the new one.
class StaleBase : public ProposeReasonsTest {
 protected:
  void SetUp() override {
    ProposeReasonsTest::SetUp();
    old_base = base;
    stale = patch("stale.patch", {{"fmt.c", with_line(kFmtC, "int fmt_int", "  if (buf == NULL) return -1;\n")}});
    std::string changed = kFmtC;
    const std::string line = "  return sprintf(buf, \"%d\", n);\n";
    changed.replace(changed.find(line), line.size(), "  return snprintf(buf, 16, \"%d\", n);\n");
    repo.write("fmt.c", changed);
    base = repo.commit_all("snprintf");
  }
  std::string old_base;
  std::filesystem::path stale;
};

TEST_F(StaleBase, AnOlderBaseIsAHashMismatchNamingTheFileAndBothBlobs) {
  ASSERT_EQ(repo.git_apply_tree(old_base, read_file(stale)).size(), 40u) << "the patch is good on its own base";
  const std::string said = diff_parse_refusal(stale, base);
  const std::string old_blob = repo.git_line({"rev-parse", old_base + ":fmt.c"});
  const std::string new_blob = repo.git_line({"rev-parse", base + ":fmt.c"});
  EXPECT_EQ(said, "hash_mismatch (fmt.c): the patch's index line names blob " + old_blob + ", the base has " + new_blob);

  auto r = propose(stale, kCompileAndTest);
  ASSERT_TRUE(r.exited_with(kExitRefused)) << describe(r);
  EXPECT_NE(r.out.find("refused:\n  hash_mismatch: " + said + "\n"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("malformed_diff"), std::string::npos) << r.out;
  EXPECT_FALSE(has_ref(repo.repo(), "warden/propose"));

  // The ledger holds the patch's own refusal in the proposal's evidence, and the decision.
  auto records = ledger_records(ledger());
  auto decisions = payloads(records, "decision");
  ASSERT_EQ(decisions.size(), 1u);
  EXPECT_EQ(reason_codes(decisions[0]), std::vector<std::string>{"hash_mismatch"});
  EXPECT_EQ(decisions[0]["verdict"]["reasons"][0]["detail"], said);
  expect_ledger_verifies(ledger(), verifier());
}

TEST_F(StaleBase, AHunkWhoseContextDoesNotMatchIsAHunkMismatch) {
  // Without its index line the patch is judged by its hunks alone: the context it carries
  // is the old sprintf line, which the base no longer has.
  std::string text = read_file(stale);
  auto index = text.find("index ");
  text.erase(index, text.find('\n', index) + 1 - index);
  std::filesystem::path p = repo.scratch("no-index.patch");
  write_file(p, text);
  const std::string said = diff_parse_refusal(p, base);
  EXPECT_TRUE(said.starts_with("hunk_mismatch (fmt.c): hunk 1 (@@ -")) << said;

  auto r = propose(p, kCompileAndTest, {"--json"});
  ASSERT_TRUE(r.exited_with(kExitRefused)) << describe(r);
  auto reasons = stdout_json(r)["refusal"]["reasons"];
  ASSERT_EQ(reasons.size(), 1u) << reasons.dump();
  EXPECT_EQ(reasons[0]["code"], "hash_mismatch");
  EXPECT_EQ(reasons[0]["detail"], said);

  auto human = propose(p, kCompileAndTest, {"--branch", "again"});
  ASSERT_TRUE(human.exited_with(kExitRefused)) << describe(human);
  EXPECT_NE(human.out.find("  hash_mismatch: " + said + "\n"), std::string::npos) << human.out;
}

// Deterministic bytes that do not compress.
std::string noise(size_t size, uint32_t seed) {
  std::mt19937 gen(seed);
  std::string out(size, '\0');
  for (char& c : out) c = static_cast<char>(gen() & 0xff);
  return out;
}

TEST_F(ProposeReasonsTest, ABinaryPatchOverTheSizeLimitIsDiffTooLarge) {
  // 640,000 bytes replaced by 640,000 others: git's patch is ~1.65 MB (the new bytes and,
  // reversed, the old ones); the change removes and writes 1.28 MB, over the default 1 MiB.
  repo.write("data.bin", noise(640000, 1));
  base = repo.commit_all("data");
  auto p = patch("binary.patch", {{"data.bin", noise(640000, 2)}});
  ASSERT_GT(std::filesystem::file_size(p), 1600000u);
  ASSERT_NE(read_file(p).find("GIT binary patch"), std::string::npos);
  auto r = propose(p, "true", {"--json"});
  ASSERT_TRUE(r.exited_with(kExitRefused)) << describe(r);
  auto reasons = stdout_json(r)["refusal"]["reasons"];
  ASSERT_EQ(reasons.size(), 1u) << reasons.dump();
  EXPECT_EQ(reasons[0]["code"], "diff_too_large");
  EXPECT_NE(reasons[0]["detail"].get<std::string>().find("the policy allows 1048576"), std::string::npos) << reasons.dump();

  // A new file of 1.26 MB (a ~1.6 MB patch) too.
  auto added = patch("added.patch", {{"more.bin", noise(1260000, 3)}});
  auto r2 = propose(added, "true", {"--json", "--branch", "added"});
  ASSERT_TRUE(r2.exited_with(kExitRefused)) << describe(r2);
  EXPECT_EQ(stdout_json(r2)["refusal"]["reasons"][0]["code"], "diff_too_large");

  // The same change, smaller than the limit, is accepted with git's exact tree.
  auto small = patch("small.patch", {{"data.bin", noise(300000, 4)}});
  auto ok = propose(small, "true", {"--branch", "small"});
  ASSERT_TRUE(ok.exited_with(0)) << describe(ok);
  expect_gits_tree(small, "small");
}

}  // namespace
}  // namespace warden::test
