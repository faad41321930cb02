// The oracle: what judges a proposal — its tests, the test runner's configuration and hooks,
// and the test sections of shared build files. A proposal is judged by the oracle of its
// base, so it may not rewrite it: an existing oracle file it changes, renames or deletes, a
// runner hook it adds, or a test section it edits is refused as protected_path (decide.cc),
// unless the step is a create_test step of the committed plan that targets the file. A
// create_* step only creates files (content_rules.h), so what one opens is a new hook of the
// test suite it writes; an existing oracle file never changes through a proposal. Any other
// step's targets (a `modify` step's, and every `warden propose` step's) come from the very
// proposal being judged and open nothing.
//
// A policy says which paths are the oracle, as globs (glob.h, matched case folded), in three lists:
//   paths     whole files that are tests: an existing one may not change; new ones may be
//             added (a fix with a new test file is the normal case)
//   hooks     files that change how the existing tests run (conftest.py, sitecustomize.py,
//             tests/__init__.py, pytest.ini, jest.config.*): not even a new one may be added,
//             because adding one rewrites how every existing test runs
//   sections  build files shared by code and tests: only their test section is the oracle
//             (oracle_sections.h says what that is for each kind of file); a file of a kind
//             the kernel cannot read is judged whole, like `paths`
// The defaults (OracleRules{}) cover Python, C/C++ (CMake/CTest, make), JavaScript and Go;
// a policy's "oracle" object replaces any list it names, and `warden propose --oracle GLOB`
// adds to `paths`. What path rules cannot see: a new test file runs code at import too; so the
// kernel also runs the base's tests on the proposal without its new oracle files (the
// oracle run, step_stages.h), and decide() holds both runs to the base's passing tests.
//
// Plain values and pure functions, safe to share and call from any thread.
#pragma once

#include <optional>
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

// Why the change to `touch` rewrites the oracle, one sentence per finding naming the file;
// empty when it does not.
std::vector<std::string> oracle_violations(const OracleRules& rules, const OracleTouch& touch);

// Whether a file new at `path` would be part of the oracle (a test or a hook). The base's
// tests are also run without a proposal's new ones (step_stages.h): a new test file runs code
// at import in the same process as the old tests, and could replace what they test.
bool adds_to_oracle(const OracleRules& rules, std::string_view path);

}  // namespace warden::kernel
