#include "kernel/judge/oracle.h"

#include <algorithm>

#include "kernel/judge/glob.h"
#include "kernel/judge/oracle_sections.h"
#include "kernel/judge/test_file_change.h"
#include "kernel/judge/test_structure.h"
#include "kernel/judge/verdict.h"

namespace warden::kernel {
namespace {

// The first glob of `globs` that matches `path`, case folded (glob.h), or null.
const std::string* matching(const std::vector<std::string>& globs, std::string_view path) {
  for (const std::string& g : globs) {
    if (glob_match(g, path, Case::folded)) return &g;
  }
  return nullptr;
}

std::string verb(const OracleTouch& t) {
  if (!t.before) return "adds";
  return t.after_known && !t.after ? "removes (deletes or renames)" : "changes";
}

constexpr std::string_view kOnlyCreateTest = "only a create_test step of the committed plan that targets it may change it";

// "a; b; c and 4 more", at most `max` listed.
std::string listed(const std::vector<std::string>& items, std::string_view sep = "; ", size_t max = 8) {
  std::string joined;
  for (size_t i = 0; i < items.size() && i < max; ++i) joined += (joined.empty() ? "" : std::string(sep)) + items[i];
  if (items.size() > max) joined += " and " + std::to_string(items.size() - max) + " more";
  return joined;
}

// The tests a base test file holds, by its structure (none when it cannot be read).
std::vector<std::string> tests_in(std::string_view path, std::string_view text) {
  TestFileComparison removed = compare_test_file(path, text, "");
  std::vector<std::string> tests;
  for (const TestFileFinding& f : removed.findings) {
    if (f.is_test) tests.push_back(f.unit);
  }
  return tests;
}

// An existing test file the proposal changes: judged by structure where the kernel can read
// it (test_file_change.h), else whole.
std::vector<OracleViolation> judge_test_file(const OracleTouch& t, const std::string& glob, const std::set<std::string>& approved) {
  const std::string whole = t.path + " is part of the oracle (oracle path " + glob + "): the proposal " + verb(t) + " it; ";
  // A file judged whole is one unit an approval may name by its path.
  const bool whole_approved = approved.contains(t.path);
  if (!has_structure_reader(t.path)) {
    if (whole_approved) return {};
    return {{reason::protected_path, whole + "a kind of file the kernel judges whole; " + std::string(kOnlyCreateTest), {t.path}}};
  }
  if (!t.after_known) return {};  // it did not apply: refused for that, with nothing to compare
  if (!t.after) {
    std::vector<std::string> tests = tests_in(t.path, *t.before);
    const bool all_approved = !tests.empty() && std::all_of(tests.begin(), tests.end(), [&](const std::string& u) {
      return approved.contains(approval_name(t.path, u));
    });
    if (all_approved) return {};
    std::vector<std::string> units;
    for (const std::string& u : tests) units.push_back(approval_name(t.path, u));
    return {{reason::test_modified, t.path + " is removed" + (tests.empty() ? "" : ", and with it the base's tests " + listed(tests, ", ")),
             std::move(units)}};
  }
  TestFileComparison cmp = compare_test_file(t.path, *t.before, *t.after);
  if (cmp.unreadable) {
    if (whole_approved) return {};
    return {{reason::protected_path, whole + "its structure cannot be read with confidence, so it is judged whole: " + *cmp.unreadable,
             {t.path}}};
  }
  std::erase_if(cmp.findings, [&](const TestFileFinding& f) { return approved.contains(approval_name(t.path, f.unit)); });
  if (cmp.findings.empty()) return {};
  std::vector<std::string> described, units;
  for (const TestFileFinding& f : cmp.findings) {
    described.push_back(f.describe());
    const std::string name = approval_name(t.path, f.unit);
    if (std::find(units.begin(), units.end(), name) == units.end()) units.push_back(name);
  }
  return {{reason::test_modified, t.path + ": " + listed(described) +
                                      " (a proposal may add tests, helpers and imports to a test file, never change what the "
                                      "base's tests are or use)",
           std::move(units)}};
}

}  // namespace

std::vector<std::string> default_oracle_paths() {
  return {
      // Test trees, any ecosystem.
      "**/tests/**", "**/test/**", "**/__tests__/**", "**/testdata/**", "**/testing/**", "**/spec/**",
      // Python.
      "**/test_*.py", "**/*_test.py", "**/tests.py", "**/test.py", "**/*_tests.py", "**/tests_*.py",
      // C and C++.
      "**/test_*.c", "**/test_*.cc", "**/test_*.cpp", "**/*_test.c", "**/*_test.cc", "**/*_test.cpp",
      "**/*_unittest.c", "**/*_unittest.cc", "**/*_unittest.cpp",
      // JavaScript and TypeScript.
      "**/*.test.*", "**/*.spec.*",
      // Go.
      "**/*_test.go",
  };
}

std::vector<std::string> default_oracle_hooks() {
  return {
      // Python: pytest's plugins and config, interpreter start-up hooks, the test package's
      // import-time code, tox/nox/coverage configuration.
      "**/conftest.py", "**/sitecustomize.py", "**/usercustomize.py", "**/tests/__init__.py", "**/test/__init__.py",
      // A module named like a test runner shadows it (`python -m unittest` puts the working
      // directory first on sys.path).
      "**/unittest.py", "**/unittest/**", "**/pytest.py", "**/pytest/**", "**/_pytest/**", "**/doctest.py",
      "**/pytest.toml", "**/.pytest.toml",
      "**/pytest.ini", "**/.pytest.ini", "**/.coveragerc", "**/noxfile.py",
      // CTest's own files.
      "**/CTestTestfile.cmake", "**/CTestCustom.cmake",
      // JavaScript test runners' configuration and set-up files.
      "**/jest.config.*", "**/jest.setup.*", "**/vitest.config.*", "**/vitest.setup.*", "**/.mocharc*",
      "**/karma.conf.*", "**/ava.config.*", "**/.nycrc*", "**/.c8rc*",
  };
}

std::vector<std::string> default_oracle_sections() {
  return {"**/pyproject.toml", "**/setup.cfg", "**/tox.ini",   "**/CMakeLists.txt", "**/*.cmake",
          "**/Makefile",       "**/makefile",  "**/GNUmakefile", "**/*.mk",         "**/package.json"};
}

Json OracleRules::to_json() const { return {{"paths", paths}, {"hooks", hooks}, {"sections", sections}}; }

std::string approval_name(std::string_view path, std::string_view unit) { return std::string(path) + "::" + std::string(unit); }

std::vector<OracleViolation> oracle_violations(const OracleRules& rules, const OracleTouch& t, const std::set<std::string>& approved) {
  if (const std::string* glob = matching(rules.hooks, t.path)) {
    std::string why = t.before ? std::string(kOnlyCreateTest)
                               : "a new one changes how every existing test runs; " + std::string(kOnlyCreateTest);
    return {{reason::protected_path, t.path + " is a test-runner hook (oracle hook " + *glob + "): the proposal " + verb(t) + " it; " + why}};
  }
  if (const std::string* glob = matching(rules.paths, t.path); glob && t.before) return judge_test_file(t, *glob, approved);
  // A new test may be added; a new file there that configures the runner (tests/tox.ini,
  // tests/pyproject.toml) is judged by its test section below, like any such file.
  const std::string* glob = matching(rules.sections, t.path);
  if (!glob) return {};
  // A person may admit a change of a test section by the file's path, as a test file judged whole.
  if (approved.contains(t.path)) return {};
  std::optional<SectionKind> kind = section_kind(t.path);
  if (!kind) {
    if (!t.before) return {};
    return {{reason::protected_path,
             t.path + " holds the oracle (oracle section " + *glob + ", a kind of file the kernel judges whole): the proposal " +
                 verb(t) + " it; " + std::string(kOnlyCreateTest),
             {t.path}}};
  }
  if (!t.after_known) return {};  // it did not apply: refused for that, with nothing to compare
  std::vector<std::string> changes = section_changes(extract_test_section(*kind, t.before ? *t.before : ""),
                                                     extract_test_section(*kind, t.after ? *t.after : ""));
  if (changes.empty()) return {};
  return {{reason::protected_path,
           t.path + ": " + listed(changes, ", ") + " (its test section is the oracle; " + std::string(kOnlyCreateTest) + ")",
           {t.path}}};
}

bool changes_existing_test(const OracleRules& rules, std::string_view path) {
  return matching(rules.paths, path) && !matching(rules.hooks, path);
}

bool adds_to_oracle(const OracleRules& rules, std::string_view path) {
  return matching(rules.paths, path) || matching(rules.hooks, path);
}

}  // namespace warden::kernel
