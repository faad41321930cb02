// What a proposal did to an existing test file, judged by structure (test_structure.h): it
// may add — new tests, test classes, helpers and imports that no base test uses — and must
// leave everything the base's tests are or use exactly as it was. Compared unit by unit
// (a unit's key finds it in the other version; comments, blank lines, docstrings and
// whitespace inside a line do not count):
//   - every unit of the base is there with the same code: a test, a helper, a fixture, an
//     import, a class's header (its decorators and bases), setUp/tearDown and every other
//     member. A changed one is "changed" (an early return, a skip, a decorator, a changed or
//     removed assertion all are), a missing one "removed" (a rename is a removal and an
//     addition). A `from M import ...` may gain names (judged as new bindings below). What
//     nothing in the proposed file reads any more (an unused import or helper, not a test and
//     not decorated) may go. A statement or import of the base keeps its place among the
//     others (`sys.path.insert` before an import decides what it finds); definitions may move.
//   - what is new may not bind a name the base binds at that level or reads anywhere in the
//     file (a rebinding at the end of the file, a shadowed builtin, a fixture named like a base
//     test's parameter, a method named like an attribute of self a base test reads), nor one a
//     class inherits from another class of the file, nor any name where the base imports *;
//     may not assign into or delete something (`mod.f = ...`, `del x`, #undef), may not be a
//     statement that runs when the file is loaded (a call, an if/try block, a statement in a
//     new class's body, `setattr(...)` or `:=` in a binding, several statements on a line, Go's
//     init; `if __name__ == "__main__":` excepted), may not hold a preprocessor directive other
//     than #include <...> and balanced conditionals, and may not be a name the test runner
//     gives a meaning to: unittest.TestCase's own attributes (setUp, _baseAssertEqual, ...),
//     setUpModule/load_tests, a class's assert*/fail* methods and dunders, pytest's setup_*/
//     teardown_*/pytestmark/pytest_* hooks and autouse fixtures, Go's TestMain.
//   - C and C++: a function that registers tests (RUN_TEST, cmocka_unit_test, ...) may gain
//     registration lines of the same macro whose first argument is a function the proposal
//     adds and which run nothing else.
// A file either version of which cannot be read with confidence gives `unreadable` and no
// findings: it is judged whole, as a file the kernel has no reader for. The comparison guards
// what is committed; the verdict on the base's tests never rests on it alone (the oracle run
// judges them with the base's test files, oracle_run.h).
//
// Pure functions; safe from any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace warden::kernel {

struct TestFileFinding {
  std::string unit;  // qualified in the file: "TestOps.test_add", "helper", "main"
  bool is_test = false;
  bool is_new = false;  // the proposal adds the unit (what it binds or does is the finding)
  std::string what;  // "changed", "removed", "rebinds make_data, which the base's tests read", ...

  // "test TestOps.test_add changed", "TestOps.setUp (the base's tests use it) changed",
  // "new TestOps.setUpClass defines ..."
  std::string describe() const;
};

struct TestFileComparison {
  std::optional<std::string> unreadable;  // why a version's structure could not be read
  std::vector<TestFileFinding> findings;  // empty: the proposal only adds
  std::vector<std::string> added_tests;   // tests the proposal adds, qualified
};

// Whether the file at `path` has a structure reader (test_structure.h).
bool has_structure_reader(std::string_view path);

TestFileComparison compare_test_file(std::string_view path, std::string_view before, std::string_view after);

}  // namespace warden::kernel
