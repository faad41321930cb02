// The test sections of build files a project shares between its code and its tests: only the
// part of such a file that says how the tests run is the oracle, so a proposal may add a
// source to CMakeLists.txt or bump pyproject.toml's version, but not touch add_test or
// [tool.pytest.ini_options]. decide() extracts the section from the pre-image and from the
// post-image and refuses any difference, naming what changed.
//
// What each kind of file's test section is (by file name):
//   pyproject.toml    every key under tool.pytest*, tool.coverage*, tool.tox* and
//                     project.entry-points.pytest11 (tables, dotted keys and inline tables)
//   setup.cfg,        sections [pytest] [tool:pytest] [tox] [tox:tox] [testenv] [testenv:*]
//   tox.ini           [coverage:*]
//   CMakeLists.txt,   enable_testing, include(CTest...), add_test, set_tests_properties,
//   *.cmake           set_property(TEST ...), *_discover_tests / gtest_add_tests, BUILD_TESTING,
//                     add_custom_target(check|test...), and every command whose first argument
//                     is a target a test runs (its sources, flags and links)
//   Makefile,         the rules of test-named targets (test, check, run_tests, test_x, ...) and,
//   makefile,         transitively, of their prerequisites that only tests use; their
//   GNUmakefile, *.mk recipes, prerequisites, target variables and .PHONY membership; the
//                     variables those lines reference, transitively; and every include line
//   package.json      scripts test*, pretest*, posttest* and the scripts they name; the
//                     jest, mocha, ava, nyc, c8, vitest and tap keys
// Comments and whitespace are not part of a section. The readers are lenient: text they
// cannot read becomes part of the section as it is, so an unreadable change is a change.
//
// Pure functions over borrowed text, safe from any thread; nothing here fails.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace warden::kernel {

enum class SectionKind { pyproject, ini, cmake, makefile, package_json };

// The kind of a build file by its name (the last path component); none for other files.
std::optional<SectionKind> section_kind(std::string_view path);

// A test section: what each part says, keyed by how a person names the part ("the recipe of
// target test", "tool.pytest.ini_options.addopts", "add_test(ops)"), whitespace-normalized.
using TestSection = std::map<std::string, std::string>;

TestSection extract_test_section(SectionKind kind, std::string_view text);

TestSection pyproject_test_section(std::string_view text);
TestSection ini_test_section(std::string_view text);
TestSection cmake_test_section(std::string_view text);
TestSection makefile_test_section(std::string_view text);
TestSection package_json_test_section(std::string_view text);

// What differs from `before` to `after`, one phrase per part in key order: "<key> changed",
// "<key> was removed", "<key> was added".
std::vector<std::string> section_changes(const TestSection& before, const TestSection& after);

// Whether a target's name says it is about tests: one of its words ('/', '.', '_', '-' and
// ':' separate words) starts with "test" or is check, ctest, unittest(s), selftest or
// runtests. "test", "run_tests", "tests/test_ops.o", "check" yes; "checksum", "latest" no.
bool test_named(std::string_view name);

// Runs of whitespace as one space, none at either end.
std::string collapse_whitespace(std::string_view text);

}  // namespace warden::kernel
