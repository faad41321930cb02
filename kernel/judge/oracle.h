// The oracle: what judges a proposal — its tests, the test runner's configuration and hooks,
// and the test sections of shared build files. A proposal is judged by the oracle of its
// base, so it may add to the oracle but not rewrite it:
//   - a new test file may be added; an existing one may gain tests, helpers and imports, judged
//     by structure (test_file_change.h): a change to what a base test is or uses is refused as
//     test_modified, naming each test and helper; a test file of a kind the kernel cannot read
//     (or whose structure it cannot read with confidence) is judged whole, as protected_path
//   - a runner hook it adds or changes, and a test section it edits, is refused as
//     protected_path
// unless the step is a create_test step of the committed plan that targets the file. A
// create_* step only creates files (content_rules.h), so what one opens is a new hook of the
// test suite it writes. Any other step's targets (a `modify` step's, and every `warden
// propose` step's) come from the very proposal being judged and open nothing.
//
// A policy says which paths are the oracle, as globs (glob.h, matched case folded), in three lists:
//   paths     whole files that are tests: new ones may be added and existing ones may gain
//             tests (a fix with its regression test is the normal case)
//   hooks     files that change how the existing tests run (conftest.py, sitecustomize.py,
//             tests/__init__.py, pytest.ini, jest.config.*): not even a new one may be added,
//             because adding one rewrites how every existing test runs
//   sections  build files shared by code and tests: only their test section is the oracle
//             (oracle_sections.h says what that is for each kind of file); a file of a kind
//             the kernel cannot read is judged whole, like `paths`
// The defaults (OracleRules{}) cover Python, C/C++ (CMake/CTest, make), JavaScript and Go;
// a policy's "oracle" object replaces any list it names, and `warden propose --oracle GLOB`
// adds to `paths`. What rules on paths and structure cannot see: a test file runs code at
// import too; so the kernel also runs the base's tests on the proposal with the base's test
// files (the oracle run, oracle_run.h), and decide() holds both runs to the base's passing tests.
//
// Plain values and pure functions, safe to share and call from any thread.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/canonical_json.h"

namespace warden::kernel {

std::vector<std::string> default_oracle_paths();
std::vector<std::string> default_oracle_hooks();
std::vector<std::string> default_oracle_sections();

struct OracleRules {
  std::vector<std::string> paths = default_oracle_paths();
  std::vector<std::string> hooks = default_oracle_hooks();
  std::vector<std::string> sections = default_oracle_sections();

  Json to_json() const;  // {"paths": [...], "hooks": [...], "sections": [...]}
  bool operator==(const OracleRules&) const = default;
};

// One path a proposal names, as decide() sees it.
struct OracleTouch {
  std::string path;
  const std::string* before = nullptr;  // its base content; null: absent from the base
  const std::string* after = nullptr;   // its content once applied; null: absent (deleted, renamed away)
  bool after_known = false;             // false: the proposal did not apply, `after` means nothing
};

struct OracleViolation {
  std::string_view code;  // reason::protected_path, or reason::test_modified for a base test or what it uses
  std::string detail;     // a sentence naming the file and what changed
  // What an approval would name to admit this: each finding's "path::unit" (test_modified), or
  // the path of a test file judged whole or of a build file whose test section changed
  // (protected_path); empty when nothing can admit it (a runner hook).
  std::vector<std::string> units = {};
};

// Why the change to `touch` rewrites the oracle, one violation per file; empty when it does not.
// `approved`: base tests ("path::unit", as test_modified names them), test files judged whole
// and build files with a test section (their path) a verified approval admits; their changes
// are no violation. Runner hooks stay closed to approvals: a new conftest.py or
// sitecustomize.py changes how every test runs, in ways no diff of it shows.
std::vector<OracleViolation> oracle_violations(const OracleRules& rules, const OracleTouch& touch,
                                               const std::set<std::string>& approved = {});

// The name an approval gives a unit of a test file: "tests/test_ops.py::OpsTest.test_eq".
std::string approval_name(std::string_view path, std::string_view unit);

// Whether `path` is a test file of the oracle's `paths` (not a hook): an existing one may gain
// tests, and the oracle run judges the base's tests with its base version.
bool changes_existing_test(const OracleRules& rules, std::string_view path);

// Whether a file new at `path` would be part of the oracle (a test or a hook). The base's
// tests are also run without a proposal's new ones (step_stages.h): a new test file runs code
// at import in the same process as the old tests, and could replace what they test.
bool adds_to_oracle(const OracleRules& rules, std::string_view path);

}  // namespace warden::kernel
