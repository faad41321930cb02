// Policies (builtin and from a file, their check programs, invariant checks and sandbox
// profile) and the glob matcher they use.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>

#include "kernel/judge/glob.h"
#include "kernel/judge/policy.h"
#include "tests/support/files.h"
#include "tests/support/temp_dir.h"

namespace warden::kernel {
namespace {

TEST(Glob, Basics) {
  EXPECT_TRUE(glob_match("*.py", "a.py"));
  EXPECT_FALSE(glob_match("*.py", "src/a.py"));  // '*' stays in its segment
  EXPECT_TRUE(glob_match("src/*.py", "src/a.py"));
  EXPECT_FALSE(glob_match("src/*.py", "src/a.pyc"));
  EXPECT_TRUE(glob_match("a?c", "abc"));
  EXPECT_FALSE(glob_match("a?c", "a/c"));
  EXPECT_FALSE(glob_match("a?c", "ac"));
  EXPECT_TRUE(glob_match("README.md", "README.md"));
  EXPECT_FALSE(glob_match("README.md", "README.mdx"));
  EXPECT_TRUE(glob_match("*", "x"));
  EXPECT_FALSE(glob_match("*", "x/y"));
  EXPECT_TRUE(glob_match("a*b*c", "abc"));
  EXPECT_TRUE(glob_match("a*b*c", "aXbYbZc"));
  EXPECT_FALSE(glob_match("a*b*c", "aXbYbZ"));
}

TEST(Glob, FoldedMatchingIgnoresCaseInUnicode) {
  EXPECT_FALSE(glob_match("**/.env", ".ENV"));  // exact unless asked
  EXPECT_TRUE(glob_match("**/.env", ".ENV", Case::folded));
  EXPECT_TRUE(glob_match("**/.env", "a/B/.Env", Case::folded));
  EXPECT_TRUE(glob_match("**/*.pem", "Key.PEM", Case::folded));
  EXPECT_TRUE(glob_match("**/*.pem", "keys/\u212Aey.PEM", Case::folded));  // the Kelvin sign
  EXPECT_TRUE(glob_match("secrets/stra\u00DFe.txt", "SECRETS/STRASSE.TXT", Case::folded));
  EXPECT_TRUE(glob_match("secrets/stra\u00DFe.txt", "secrets/stra\u1E9Ee.txt", Case::folded));
  EXPECT_TRUE(glob_match("**/\u03C3\u03BF\u03C6\u03B9\u03B1", "docs/\u03A3\u039F\u03A6\u0399\u0391", Case::folded));  // ΣΟΦΙΑ
  EXPECT_TRUE(glob_match("**/\u03C3\u03C3", "\u03A3\u03C2", Case::folded));  // final sigma
  EXPECT_TRUE(glob_match("**/\u043A\u043B\u044E\u0447*", "\u041A\u041B\u042E\u0427.txt", Case::folded));  // КЛЮЧ
  EXPECT_TRUE(glob_match("[A-Z]*.PEM", "key.pem", Case::folded));
  EXPECT_TRUE(any_glob_match({"**/*.key", "**/.env"}, "conf/.eNv", Case::folded));
  EXPECT_FALSE(any_glob_match({"**/*.key", "**/.env"}, "conf/.envrc", Case::folded));
}

TEST(Glob, DoubleStarSpansSegments) {
  EXPECT_TRUE(glob_match("src/**", "src/a/b.py"));
  EXPECT_TRUE(glob_match("src/**", "src/a.py"));
  EXPECT_TRUE(glob_match("src/**", "src"));  // zero segments
  EXPECT_FALSE(glob_match("src/**", "srcx/a.py"));
  EXPECT_TRUE(glob_match("**/x.py", "x.py"));
  EXPECT_TRUE(glob_match("**/x.py", "a/b/x.py"));
  EXPECT_FALSE(glob_match("**/x.py", "a/b/y.py"));
  EXPECT_TRUE(glob_match("**", "anything/at/all"));
  EXPECT_TRUE(glob_match("a/**/b", "a/b"));
  EXPECT_TRUE(glob_match("a/**/b", "a/x/y/b"));
  EXPECT_FALSE(glob_match("a/**/b", "a/x/y/c"));
  EXPECT_TRUE(glob_match("**/*.pem", "keys/server.pem"));
  EXPECT_TRUE(glob_match("**/id_rsa*", "home/.ssh/id_rsa.pub"));
  EXPECT_TRUE(glob_match("a**b", "aXXb"));  // inside a segment: a plain '*'
  EXPECT_FALSE(glob_match("a**b", "a/b"));
}

TEST(Glob, CharacterClasses) {
  EXPECT_TRUE(glob_match("[abc].py", "b.py"));
  EXPECT_FALSE(glob_match("[abc].py", "d.py"));
  EXPECT_TRUE(glob_match("v[0-9]", "v7"));
  EXPECT_FALSE(glob_match("v[0-9]", "vx"));
  EXPECT_TRUE(glob_match("[!a-z]x", "Ax"));
  EXPECT_FALSE(glob_match("[!a-z]x", "ax"));
  EXPECT_TRUE(glob_match("[^a-z]x", "9x"));
  EXPECT_TRUE(glob_match("[]]", "]"));   // ']' first is a member
  EXPECT_TRUE(glob_match("[a-]", "-"));  // trailing '-' is a member
  EXPECT_TRUE(glob_match("a[b", "a[b"));  // unclosed: a literal '['
  EXPECT_FALSE(glob_match("a[b", "ab"));
  EXPECT_TRUE(glob_match("*[0-9]", "file9"));
}

TEST(Glob, PathologicalPatternsStayFast) {
  std::string path(200, 'a');
  std::string pattern;
  for (int i = 0; i < 60; ++i) pattern += "*a";
  pattern += "b";
  std::string deep, deep_pattern;
  for (int i = 0; i < 200; ++i) deep += "a/";
  deep += "b";
  for (int i = 0; i < 60; ++i) deep_pattern += "**/a/";
  deep_pattern += "c";
  auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(glob_match(pattern, path));
  EXPECT_TRUE(glob_match(pattern, path + "b"));
  EXPECT_FALSE(glob_match(deep_pattern, deep));
  auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_LT(elapsed, std::chrono::milliseconds(500));
}

TEST(Glob, AnyMatch) {
  std::vector<std::string> patterns = {"src/**", "README.md"};
  EXPECT_TRUE(any_glob_match(patterns, "README.md"));
  EXPECT_TRUE(any_glob_match(patterns, "src/x/y"));
  EXPECT_FALSE(any_glob_match(patterns, "docs/x"));
  EXPECT_FALSE(any_glob_match({}, "x"));
}

TEST(Policy, BuiltinsLoadWithTheirPrograms) {
  EXPECT_EQ(default_policy_for("python"), "python");
  EXPECT_EQ(default_policy_for("c"), "cpp");
  EXPECT_EQ(default_policy_for("cpp"), "cpp");
  EXPECT_EQ(default_policy_for("c++"), "cpp");
  EXPECT_EQ(default_policy_for("other"), "");
  for (std::string_view name : {"python", "cpp"}) {
    auto p = Policy::load(name);
    ASSERT_TRUE(p) << p.error().message;
    EXPECT_EQ(p->name, name);
    EXPECT_EQ(p->required_checks, std::vector<std::string>{"tests"});
    EXPECT_TRUE(p->knows_invariant("no_import_cycles"));
    EXPECT_TRUE(p->knows_invariant("all_functions_have_tests"));
    EXPECT_EQ(p->checkpoint_invariants, std::vector<std::string>{"all_functions_have_tests"});
    for (const std::string& program : p->referenced_programs()) EXPECT_TRUE(p->programs.contains(program)) << program;
    EXPECT_TRUE(p->programs.contains("checklib.py"));  // the helpers the programs import
    auto again = Policy::load(name);
    EXPECT_EQ(again->digest(), p->digest());
  }
  auto python = Policy::load("python");
  EXPECT_TRUE(python->knows_invariant("type_hints_required"));
  EXPECT_EQ(python->invariants.size(), 5u);
  EXPECT_EQ(Policy::load("cpp")->invariants.size(), 4u);
  EXPECT_NE(python->digest(), Policy::load("cpp")->digest());
  EXPECT_EQ(python->referenced_programs(),
            (std::vector<std::string>{"all_functions_have_tests.py", "dependencies_satisfied.py",
                                      "no_dangerous_operations.py", "no_import_cycles.py", "run_tests.py",
                                      "type_hints_required.py"}));
}

TEST(Policy, EmbeddedFilesAreTheSourceBytes) {
  std::string dir = std::string(WARDEN_SOURCE_DIR) + "/policies";
  for (const auto& [name, bytes] : builtin_check_programs()) {
    EXPECT_EQ(bytes, test::read_file(dir + "/checks/" + name)) << name;
  }
  for (std::string_view name : builtin_policy_names()) {
    EXPECT_EQ(builtin_policy_text(name), test::read_file(dir + "/" + std::string(name) + ".json")) << name;
  }
  EXPECT_TRUE(builtin_policy_text("nope").empty());
}

TEST(Policy, InvariantCheckAndSandboxProfile) {
  auto p = Policy::load("python");
  ASSERT_TRUE(p) << p.error().message;
  auto check = p->invariant_check("no_import_cycles");
  ASSERT_TRUE(check) << check.error().message;
  EXPECT_EQ(check->name, "invariant:no_import_cycles");
  EXPECT_EQ(check->argv, (std::vector<std::string>{"python3", "/warden/checks/no_import_cycles.py", "--lang", "python"}));
  EXPECT_EQ(check->proves, std::vector<std::string>{"no_import_cycles"});
  EXPECT_EQ(p->invariant_check("is_fast").error().code, Errc::not_found);

  auto profile = p->sandbox_profile_with_programs();
  ASSERT_TRUE(profile) << profile.error().message;
  auto plain = SandboxProfile::load("default");
  ASSERT_TRUE(plain);
  EXPECT_EQ(profile->files.size(), plain->files.size() + p->programs.size());
  bool found = false;
  for (const DataFile& f : profile->files) {
    if (f.path == "/warden/checks/run_tests.py") found = f.content == p->programs.at("run_tests.py");
  }
  EXPECT_TRUE(found);
  EXPECT_NE(profile->digest(), plain->digest());
}

constexpr const char* kCustom = R"({
  "format": "warden.policy/v1", "name": "custom", "language": "python",
  "checks": [{"name": "tests", "argv": ["python3", "/warden/checks/my_tests.py"]}],
  "required_checks": ["tests"],
  "allow_paths": ["src/**"], "deny_paths": ["**/*.key"],
  "invariants": {"short_files": {"program": "short_files.py", "args": ["--max", "100"]},
                 "no_import_cycles": {"program": "no_import_cycles.py", "args": ["--lang", "python"]}},
  "checkpoint_invariants": ["short_files"]
})";

TEST(Policy, CustomFileFindsProgramsBesideItThenBuiltin) {
  test::TempDir dir;
  test::write_file(dir / "custom.json", kCustom);
  auto missing = Policy::load((dir / "custom.json").string());
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, Errc::not_found);
  EXPECT_NE(missing.error().message.find("\"my_tests.py\""), std::string::npos) << missing.error().message;

  std::filesystem::create_directory(dir / "checks");
  test::write_file(dir / "checks/my_tests.py", "print('1..0')\n");
  test::write_file(dir / "checks/short_files.py", "import sys\n");
  auto p = Policy::load((dir / "custom.json").string());
  ASSERT_TRUE(p) << p.error().message;
  EXPECT_EQ(p->programs.at("short_files.py"), "import sys\n");
  EXPECT_TRUE(p->programs.contains("no_import_cycles.py"));  // builtin
  EXPECT_EQ(p->allow_paths, std::vector<std::string>{"src/**"});
  EXPECT_EQ(p->invariant_check("short_files")->argv,
            (std::vector<std::string>{"python3", "/warden/checks/short_files.py", "--max", "100"}));
  Digest before = p->digest();
  test::write_file(dir / "checks/short_files.py", "import sys  # changed\n");
  EXPECT_NE(Policy::load((dir / "custom.json").string())->digest(), before);  // a changed checker is a changed policy

  EXPECT_EQ(Policy::load((dir / "nope.json").string()).error().code, Errc::not_found);
}

TEST(Policy, ParseRefusesBadFields) {
  std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"format": "warden.policy/v9", "name": "x"})", "policy.format: must be"},
      {R"({"format": "warden.policy/v1", "name": "x", "required_checks": ["tests"]})",
       "policy.required_checks: \"tests\" is not one of the policy's checks"},
      {R"({"format": "warden.policy/v1", "name": "x", "invariants": {"a": {"program": "../evil.py"}}})",
       "policy.invariants.a.program:"},
      {R"({"format": "warden.policy/v1", "name": "x", "invariants": {"a": {"program": "a.py", "extra": 1}}})",
       "policy.invariants.a.extra: unknown field"},
      {R"({"format": "warden.policy/v1", "name": "x", "checkpoint_invariants": ["b"]})",
       "policy.checkpoint_invariants: \"b\" is not one of"},
      {R"({"format": "warden.policy/v1", "name": "x", "max_diff_bytes": 0})", "policy.max_diff_bytes:"},
      {R"({"format": "warden.policy/v1", "name": "x", "deny_paths": [""]})", "policy.deny_paths: element 0 is empty"},
      {R"({"format": "warden.policy/v1", "name": "x", "checks": [{"name": "t", "argv": ["/warden/checks/a/b.py"]}]})",
       "policy.checks:"},
      {R"({"format": "warden.policy/v1", "name": "x", "colour": "red"})", "policy.colour: unknown field"},
      {R"({"format": "warden.policy/v1", "name": "x", "dangerous_operation_rules": ["c.sprintff"]})",
       "policy.dangerous_operation_rules: \"c.sprintff\" is neither a rule id, a category nor a class"},
      {R"({"format": "warden.policy/v1", "name": "x", "dangerous_operation_rules": "lint"})", "policy.dangerous_operation_rules:"},
      {R"({"format": "warden.policy/v1", "name": "x", "dangerous_operations": false, "dangerous_operation_rules": ["lint"]})",
       "policy.dangerous_operation_rules: names rules of a scan that \"dangerous_operations\": false turns off"},
      {R"({"format": "warden.policy/v1", "name": "x", "runner_quorum": {"k": 1, "n": 2}})",
       "policy.runner_quorum: runner quorum 1/2: needs 1 <= k <= n <= 9 and k more than half of n"},
      {R"({"format": "warden.policy/v1", "name": "x", "runner_quorum": {"k": 2}})", "runner_quorum.n"},
  };
  for (const auto& [text, expected] : cases) {
    auto p = Policy::parse(text, "test");
    ASSERT_FALSE(p) << text;
    EXPECT_NE(p.error().message.find(expected), std::string::npos) << p.error().message;
  }
  auto minimal = Policy::parse(R"({"format": "warden.policy/v1", "name": "x"})", "test");
  ASSERT_TRUE(minimal) << minimal.error().message;
  EXPECT_EQ(minimal->allow_paths, std::vector<std::string>{"**"});
  EXPECT_EQ(minimal->sandbox_profile, "default");
  EXPECT_TRUE(minimal->dangerous_operation_rules.empty()) << "the safety rules alone";
}

TEST(Policy, LintRulesAreNamedAndPartOfTheDigest) {
  auto lint = Policy::parse(R"({"format": "warden.policy/v1", "name": "x", "dangerous_operation_rules": ["c.sprintf", "inline_asm"]})",
                            "test");
  ASSERT_TRUE(lint) << lint.error().message;
  EXPECT_EQ(lint->dangerous_operation_rules, (std::vector<std::string>{"c.sprintf", "inline_asm"}));
  auto plain = Policy::parse(R"({"format": "warden.policy/v1", "name": "x"})", "test");
  EXPECT_NE(lint->digest(), plain->digest());
  EXPECT_EQ(lint->to_json()["dangerous_operation_rules"], Json::array({"c.sprintf", "inline_asm"}));
  // The builtins: cpp names the calls its no_dangerous_operations invariant forbids; python's
  // invariant forbids only what the safety rules cover, so it names none.
  EXPECT_EQ(Policy::load("cpp")->dangerous_operation_rules, (std::vector<std::string>{"unbounded_buffer", "inline_asm"}));
  EXPECT_TRUE(Policy::load("python")->dangerous_operation_rules.empty());
}

TEST(Policy, ARunnerQuorumIsPartOfTheDigestOnlyWhenSet) {
  auto quorum = Policy::parse(R"({"format": "warden.policy/v1", "name": "x", "runner_quorum": {"k": 2, "n": 3}})", "test");
  ASSERT_TRUE(quorum) << quorum.error().message;
  ASSERT_TRUE(quorum->runner_quorum);
  EXPECT_EQ(*quorum->runner_quorum, (RunnerQuorum{2, 3}));
  EXPECT_EQ(quorum->to_json()["runner_quorum"], (Json{{"k", 2}, {"n", 3}}));
  auto plain = Policy::parse(R"({"format": "warden.policy/v1", "name": "x"})", "test");
  EXPECT_NE(quorum->digest(), plain->digest());
  EXPECT_FALSE(plain->to_json().contains("runner_quorum")) << "policies without one keep their digests";
}

}  // namespace
}  // namespace warden::kernel
