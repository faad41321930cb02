// The oracle: the test-section readers on real-shaped build files (what counts, what does
// not, comments and whitespace ignored), the built-in globs, the violations one touched file
// makes, decide() refusing a rewritten oracle as protected_path with a create_test step as the
// one way in, and the policy's "oracle" field read strictly and kept in its digest.
#include "kernel/judge/oracle.h"

#include <gtest/gtest.h>

#include <chrono>

#include "diff/diff.h"
#include "kernel/judge/decide.h"
#include "kernel/judge/oracle_sections.h"
#include "kernel/judge/policy.h"

namespace warden::kernel {
namespace {

using Strings = std::vector<std::string>;

Strings keys(const TestSection& s) {
  Strings out;
  for (const auto& [k, v] : s) out.push_back(k);
  return out;
}

Strings changes(SectionKind kind, std::string_view before, std::string_view after) {
  return section_changes(extract_test_section(kind, before), extract_test_section(kind, after));
}

// --- section kinds and naming ---------------------------------------------------------------

TEST(OracleSections, KindsByFileName) {
  EXPECT_EQ(section_kind("pyproject.toml"), SectionKind::pyproject);
  EXPECT_EQ(section_kind("sub/setup.cfg"), SectionKind::ini);
  EXPECT_EQ(section_kind("tox.ini"), SectionKind::ini);
  EXPECT_EQ(section_kind("a/b/CMakeLists.txt"), SectionKind::cmake);
  EXPECT_EQ(section_kind("cmake/Testing.cmake"), SectionKind::cmake);
  EXPECT_EQ(section_kind("Makefile"), SectionKind::makefile);
  EXPECT_EQ(section_kind("GNUmakefile"), SectionKind::makefile);
  EXPECT_EQ(section_kind("rules/tests.mk"), SectionKind::makefile);
  EXPECT_EQ(section_kind("web/package.json"), SectionKind::package_json);
  EXPECT_EQ(section_kind("Makefile.am"), std::nullopt);
  EXPECT_EQ(section_kind("src/ops.c"), std::nullopt);
}

TEST(OracleSections, TestNamedTargets) {
  for (const char* yes : {"test", "tests", "check", "run_tests", "build/run_tests", "test_ops", "tests/test_ops.o", "test-unit",
                          "unittest", "ctest", "TEST"}) {
    EXPECT_TRUE(test_named(yes)) << yes;
  }
  for (const char* no : {"all", "checksum", "latest", "libops.a", "src/ops.o", "%.o", "clean", "contest"}) {
    EXPECT_FALSE(test_named(no)) << no;
  }
}

TEST(OracleSections, ChangesArePhrasedPerPart) {
  TestSection before{{"a", "1"}, {"b", "2"}, {"c", "3"}};
  TestSection after{{"b", "2"}, {"c", "4"}, {"d", "5"}};
  EXPECT_EQ(section_changes(before, after), (Strings{"a was removed", "c changed", "d was added"}));
  EXPECT_TRUE(section_changes(before, before).empty());
}

// --- pyproject.toml -------------------------------------------------------------------------

constexpr const char* kPyproject = R"([project]
name = "mathlib"
version = "0.1.0"
dependencies = [
  "attrs",  # [not a header]
]

[tool.pytest.ini_options]
addopts = "-q"   # quiet
testpaths = [
  "tests",
]

[tool.coverage.run]
branch = true

[tool.black]
line-length = 100
)";

TEST(OracleSections, PyprojectKeepsPytestAndCoverageKeysOnly) {
  TestSection s = pyproject_test_section(kPyproject);
  EXPECT_EQ(keys(s), (Strings{"[tool.coverage.run]", "[tool.pytest.ini_options]", "tool.coverage.run.branch",
                              "tool.pytest.ini_options.addopts", "tool.pytest.ini_options.testpaths"}));
  EXPECT_EQ(s["tool.pytest.ini_options.addopts"], "\"-q\"");
  EXPECT_EQ(s["tool.pytest.ini_options.testpaths"], "[ \"tests\", ]");
}

TEST(OracleSections, PyprojectChangesOutsideTheTestSectionsAreNotChanges) {
  std::string bumped = kPyproject;
  bumped.replace(bumped.find("0.1.0"), 5, "0.2.0");
  bumped.replace(bumped.find("100"), 3, "88");
  bumped.replace(bumped.find("# quiet"), 7, "# still quiet");
  EXPECT_TRUE(changes(SectionKind::pyproject, kPyproject, bumped).empty());

  std::string addopts = kPyproject;
  addopts.replace(addopts.find("\"-q\""), 4, "\"-q -k 'not mul'\"");
  EXPECT_EQ(changes(SectionKind::pyproject, kPyproject, addopts), Strings{"tool.pytest.ini_options.addopts changed"});
}

TEST(OracleSections, PyprojectDottedKeysAndInlineTablesCount) {
  EXPECT_EQ(changes(SectionKind::pyproject, "[tool]\nblack = {}\n", "[tool]\npytest.ini_options.addopts = \"-x\"\nblack = {}\n"),
            Strings{"tool.pytest.ini_options.addopts was added"});
  EXPECT_EQ(changes(SectionKind::pyproject, "", "tool.pytest = { ini_options = { addopts = \"-x\" } }\n"),
            Strings{"tool.pytest was added"});
  EXPECT_EQ(changes(SectionKind::pyproject, "[tool]\n", "[tool]\npytest = {ini_options = {addopts = \"-x\"}}\n"),
            Strings{"tool.pytest was added"});
  EXPECT_EQ(changes(SectionKind::pyproject, "", "[project.entry-points.pytest11]\nmine = \"mathlib.plugin\"\n"),
            (Strings{"[project.entry-points.pytest11] was added", "project.entry-points.pytest11.mine was added"}));
  // A multi-line string holding what looks like a header stays inside its key.
  EXPECT_EQ(keys(pyproject_test_section("[tool.pytest.ini_options]\nmarkers = \"\"\"\n[tool.black]\nslow\n\"\"\"\nx = 1\n")),
            (Strings{"[tool.pytest.ini_options]", "tool.pytest.ini_options.markers", "tool.pytest.ini_options.x"}));
}

// --- setup.cfg / tox.ini --------------------------------------------------------------------

constexpr const char* kSetupCfg = R"([metadata]
name = mathlib
version = 0.1

[tool:pytest]
addopts = -q
testpaths =
    tests
; a comment

[flake8]
max-line-length = 100
)";

TEST(OracleSections, IniKeepsTestSections) {
  TestSection s = ini_test_section(kSetupCfg);
  EXPECT_EQ(keys(s), (Strings{"[tool:pytest]", "[tool:pytest] addopts", "[tool:pytest] testpaths"}));
  EXPECT_EQ(s["[tool:pytest] testpaths"], " tests");

  std::string flake = kSetupCfg;
  flake.replace(flake.find("100"), 3, "120");
  EXPECT_TRUE(changes(SectionKind::ini, kSetupCfg, flake).empty());
  std::string paths = kSetupCfg;
  paths.replace(paths.find("    tests"), 9, "    tests/unit");
  EXPECT_EQ(changes(SectionKind::ini, kSetupCfg, paths), Strings{"[tool:pytest] testpaths changed"});
}

TEST(OracleSections, ToxEnvironmentsAreTheOracle) {
  const char* tox = "[tox]\nenvlist = py3\n\n[testenv]\ncommands = pytest\n\n[testenv:lint]\ncommands = flake8\n\n[flake8]\nx = 1\n";
  EXPECT_EQ(keys(ini_test_section(tox)), (Strings{"[testenv:lint]", "[testenv:lint] commands", "[testenv]", "[testenv] commands",
                                                  "[tox]", "[tox] envlist"}));
  std::string skip = tox;
  skip.replace(skip.find("commands = pytest"), 17, "commands = python -c pass");
  EXPECT_EQ(changes(SectionKind::ini, tox, skip), Strings{"[testenv] commands changed"});
}

// --- CMake ----------------------------------------------------------------------------------

constexpr const char* kCMake = R"(cmake_minimum_required(VERSION 3.16)
project(mathlib C)
add_library(mathlib src/ops.c)   # the library
enable_testing()
add_executable(runner tests/test_ops.c)
target_link_libraries(runner mathlib)
add_test(NAME ops COMMAND runner)
#[[ a bracket comment
add_test(NAME ghost COMMAND ghost)
]]
set_tests_properties(ops PROPERTIES TIMEOUT 10)
)";

TEST(OracleSections, CMakeTestRegistrationsAndTheTargetsTheyRun) {
  EXPECT_EQ(keys(cmake_test_section(kCMake)),
            (Strings{"add_executable(runner)", "add_test(ops)", "enable_testing()", "set_tests_properties(ops)",
                     "target_link_libraries(runner)"}));
}

TEST(OracleSections, CMakeSourceChangesAreNotTestChanges) {
  std::string more = kCMake;
  more.replace(more.find("add_library(mathlib src/ops.c)"), 30, "add_library(mathlib\n  src/ops.c\n  src/extra.c)");
  EXPECT_TRUE(changes(SectionKind::cmake, kCMake, more).empty());

  std::string fake = kCMake;
  fake.replace(fake.find("COMMAND runner"), 14, "COMMAND true");
  EXPECT_EQ(changes(SectionKind::cmake, kCMake, fake), (Strings{"add_executable(runner) was removed", "add_test(ops) changed",
                                                                 "target_link_libraries(runner) was removed"}));
  std::string will_fail = std::string(kCMake) + "set_property(TEST ops PROPERTY WILL_FAIL TRUE)\n";
  EXPECT_EQ(changes(SectionKind::cmake, kCMake, will_fail), Strings{"set_property(TEST) was added"});
  std::string no_testing = std::string(kCMake) + "SET(BUILD_TESTING OFF)\n";
  EXPECT_EQ(changes(SectionKind::cmake, kCMake, no_testing), Strings{"set(BUILD_TESTING) was added"});
  std::string swapped = kCMake;
  swapped.replace(swapped.find("tests/test_ops.c"), 16, "tests/empty.c");
  EXPECT_EQ(changes(SectionKind::cmake, kCMake, swapped), Strings{"add_executable(runner) changed"});
}

TEST(OracleSections, CMakeOldSignatureDiscoveryAndUnclosedCommands) {
  EXPECT_EQ(keys(cmake_test_section("add_test(ops \"${CMAKE_BINARY_DIR}/run\" --fast)\ninclude(GoogleTest)\n"
                                    "gtest_discover_tests(unit)\ntarget_sources(unit PRIVATE u.cc)\ninclude(GNUInstallDirs)\n")),
            (Strings{"add_test(ops)", "gtest_discover_tests(unit)", "include(GoogleTest)", "target_sources(unit)"}));
  EXPECT_EQ(keys(cmake_test_section("add_library(x a.c)\nadd_test(NAME t COMMAND x\n")),
            Strings{"the unclosed command at the end"});
}

// --- Makefile -------------------------------------------------------------------------------

constexpr const char* kMakefile = "CC ?= cc\n"
                                  "CFLAGS = -std=c11 -Wall\n"
                                  "OBJS = src/ops.o\n"
                                  "\n"
                                  ".PHONY: all test clean\n"
                                  "all: libops.a\n"
                                  "\n"
                                  "libops.a: $(OBJS)\n"
                                  "\tar rcs $@ $^\n"
                                  "\n"
                                  "%.o: %.c\n"
                                  "\t$(CC) $(CFLAGS) -c -o $@ $<\n"
                                  "\n"
                                  "build/test_ops: tests/test_ops.c libops.a\n"
                                  "\t@mkdir -p build\n"
                                  "\t$(CC) $(CFLAGS) -Isrc -o $@ $^  # link\n"
                                  "\n"
                                  "test: build/test_ops\n"
                                  "\t@./build/test_ops\n"
                                  "\n"
                                  "clean:\n"
                                  "\trm -rf build *.a src/*.o\n";

TEST(OracleSections, MakefileTestRulesStopAtTheSharedBuild) {
  TestSection s = makefile_test_section(kMakefile);
  for (const char* key : {"the recipe of target test", "the prerequisites of target test", "the recipe of target build/test_ops",
                          "target test in .PHONY", "the variable CC", "the variable CFLAGS"}) {
    EXPECT_TRUE(s.contains(key)) << key;
  }
  for (const char* key : {"the recipe of target libops.a", "the recipe of target %.o", "the variable OBJS", "the recipe of target clean"}) {
    EXPECT_FALSE(s.contains(key)) << key;
  }
  EXPECT_EQ(s["the recipe of target test"], "@./build/test_ops");
}

TEST(OracleSections, MakefileNamesWhatChanged) {
  std::string source = kMakefile;
  source.replace(source.find("OBJS = src/ops.o"), 16, "OBJS = src/ops.o src/extra.o");
  EXPECT_TRUE(changes(SectionKind::makefile, kMakefile, source).empty());
  std::string clean = kMakefile;
  clean.replace(clean.find("rm -rf build"), 12, "rm -rf build dist");
  EXPECT_TRUE(changes(SectionKind::makefile, kMakefile, clean).empty());

  std::string forged = kMakefile;
  forged.replace(forged.find("@./build/test_ops"), 17, "@echo 'ok 1'");
  EXPECT_EQ(changes(SectionKind::makefile, kMakefile, forged), Strings{"the recipe of target test changed"});
  std::string ndebug = kMakefile;
  ndebug.replace(ndebug.find("-std=c11"), 8, "-std=c11 -DNDEBUG");
  EXPECT_EQ(changes(SectionKind::makefile, kMakefile, ndebug), Strings{"the variable CFLAGS changed"});
  std::string not_phony = kMakefile;
  not_phony.replace(not_phony.find(".PHONY: all test clean"), 22, ".PHONY: all clean");
  EXPECT_EQ(changes(SectionKind::makefile, kMakefile, not_phony), Strings{"target test in .PHONY was removed"});
  std::string comment = kMakefile;
  comment.replace(comment.find("test: build/test_ops"), 20, "test: build/test_ops # run it");
  EXPECT_TRUE(changes(SectionKind::makefile, kMakefile, comment).empty());
}

TEST(OracleSections, MakefileOnlyTestsReachAndConditionalsInRecipes) {
  // `run` has no test-like name, but only `test` reaches it: it is the test.
  const char* make = "test: run\nrun:\n\t./check_all.sh\n";
  EXPECT_EQ(changes(SectionKind::makefile, make, "test: run\nrun:\n\techo ok 1\n"), Strings{"the recipe of target run changed"});
  // ringbuf's Makefile: the default goal is the test binary, the recipe has conditionals.
  const char* ringbuf = "SOURCES = $(wildcard src/*.c)\nTESTS = $(wildcard tests/*.c)\n\n"
                        "build/run_tests: $(SOURCES) $(TESTS)\n\t$(CC) -o $@ $^\n\n"
                        "test: build/run_tests\nifeq ($(TESTS),)\n\t@echo \"1..0\"\nelse\n\t@./build/run_tests\nendif\n";
  TestSection s = makefile_test_section(ringbuf);
  EXPECT_EQ(s["the recipe of target test"], "ifeq ($(TESTS),)\n@echo \"1..0\"\nelse\n@./build/run_tests\nendif");
  EXPECT_TRUE(s.contains("the variable SOURCES"));
  EXPECT_TRUE(s.contains("the variable TESTS"));
  std::string forged = ringbuf;
  forged.replace(forged.find("@./build/run_tests"), 18, "@echo 'ok 1'");
  EXPECT_EQ(changes(SectionKind::makefile, ringbuf, forged), Strings{"the recipe of target test changed"});
}

TEST(OracleSections, MakefileContinuationsDefinesAndTargetVariables) {
  const char* make = "FLAGS = -a \\\n  -b\ndefine RUN\n./t\nendef\ntest: FLAGS += -c\ntest:\n\t$(RUN) $(FLAGS)\n";
  TestSection s = makefile_test_section(make);
  EXPECT_EQ(s["the variable FLAGS"], "FLAGS = -a -b");
  EXPECT_EQ(s["the variable RUN"], "define RUN\n./t\n");
  EXPECT_EQ(s["the variables of target test"], "FLAGS += -c");
}

TEST(OracleSections, MakefileExpansionIsBounded) {
  // Each variable twice the one before: unbounded expansion would take 2^60 words.
  std::string make = "V0 = x\n";
  for (int i = 1; i <= 60; ++i) {
    make += "V" + std::to_string(i) + " = $(V" + std::to_string(i - 1) + ") $(V" + std::to_string(i - 1) + ")\n";
  }
  make += "test: $(V60)\n\t./t\n";
  auto start = std::chrono::steady_clock::now();
  TestSection s = makefile_test_section(make);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  EXPECT_TRUE(s.contains("the variable V0"));
}

// --- package.json ---------------------------------------------------------------------------

TEST(OracleSections, PackageJsonTestScriptsAndTheScriptsTheyRun) {
  const char* pkg = R"({"name": "m", "version": "1.0.0",
    "scripts": {"build": "tsc", "test": "npm run unit && npm run lint", "unit": "jest", "lint": "eslint .", "start": "node ."},
    "jest": {"testEnvironment": "node"}})";
  EXPECT_EQ(keys(package_json_test_section(pkg)), (Strings{"jest", "scripts.lint", "scripts.test", "scripts.unit"}));
  std::string version = pkg;
  version.replace(version.find("1.0.0"), 5, "1.1.0");
  EXPECT_TRUE(changes(SectionKind::package_json, pkg, version).empty());
  std::string unit = pkg;
  unit.replace(unit.find("\"jest\","), 7, "\"true\",");
  EXPECT_EQ(changes(SectionKind::package_json, pkg, unit), Strings{"scripts.unit changed"});
  EXPECT_EQ(keys(package_json_test_section("{not json")), Strings{"the whole file (not a JSON object)"});
}

// --- the rules over one touched file --------------------------------------------------------

OracleTouch touch(std::string path, const std::string* before, const std::string* after, bool after_known = true) {
  return OracleTouch{std::move(path), before, after, after_known};
}

TEST(OracleRules, DefaultsCoverEveryEcosystem) {
  const OracleRules rules;
  const std::string old = "x\n", changed = "y\n";
  for (const char* path : {"tests/test_ops.py", "pkg/tests/helpers.py", "test_calc.py", "calc_test.py", "src/ring_test.c",
                           "tests/test_ringbuf.c", "web/__tests__/a.js", "web/a.test.js", "web/a.spec.ts", "ops_test.go",
                           "pkg/testdata/in.txt"}) {
    EXPECT_EQ(oracle_violations(rules, touch(path, &old, &changed)).size(), 1u) << path;
    EXPECT_TRUE(oracle_violations(rules, touch(path, nullptr, &changed)).empty()) << path << ": a new test may be added";
  }
  for (const char* path : {"conftest.py", "src/calculator/conftest.py", "sitecustomize.py", "usercustomize.py",
                           "tests/__init__.py", "pytest.ini", ".coveragerc", "CTestCustom.cmake", "jest.config.js", ".mocharc.yml"}) {
    EXPECT_EQ(oracle_violations(rules, touch(path, nullptr, &changed)).size(), 1u) << path << ": a new hook is refused";
  }
  for (const char* path : {"src/ops.py", "mathlib/__init__.py", "README.md", "src/ringbuf.c", "go.mod", "contest.py"}) {
    EXPECT_TRUE(oracle_violations(rules, touch(path, &old, &changed)).empty()) << path;
  }
}

TEST(OracleRules, ViolationsNameTheFileAndWhatHappened) {
  const OracleRules rules;
  const std::string test = "def test_x():\n    assert True\n";
  auto deleted = oracle_violations(rules, touch("tests/test_ops.py", &test, nullptr));
  ASSERT_EQ(deleted.size(), 1u);
  EXPECT_EQ(deleted[0].code, "test_modified");
  EXPECT_EQ(deleted[0].detail, "tests/test_ops.py is removed, and with it the base's tests test_x");
  // A test file the kernel has no reader for is judged whole.
  auto data = oracle_violations(rules, touch("tests/inputs/a.json", &test, nullptr));
  ASSERT_EQ(data.size(), 1u);
  EXPECT_EQ(data[0].code, "protected_path");
  EXPECT_TRUE(data[0].detail.starts_with("tests/inputs/a.json is part of the oracle (oracle path **/tests/**): the proposal removes"))
      << data[0].detail;
  // Tests added to an existing file pass; a changed base test is named.
  const std::string added = test + "\n\ndef test_y():\n    assert 1\n", weakened = "def test_x():\n    return\n";
  EXPECT_TRUE(oracle_violations(rules, touch("tests/test_ops.py", &test, &added)).empty());
  auto changed = oracle_violations(rules, touch("tests/test_ops.py", &test, &weakened));
  ASSERT_EQ(changed.size(), 1u);
  EXPECT_EQ(changed[0].code, "test_modified");
  EXPECT_TRUE(changed[0].detail.starts_with("tests/test_ops.py: test test_x changed")) << changed[0].detail;
  auto hook = oracle_violations(rules, touch("conftest.py", nullptr, &test));
  ASSERT_EQ(hook.size(), 1u);
  EXPECT_TRUE(hook[0].detail.starts_with("conftest.py is a test-runner hook (oracle hook **/conftest.py): the proposal adds it")) << hook[0].detail;

  const std::string make = "test:\n\t./run\n", forged = "test:\n\techo ok 1\n";
  auto recipe = oracle_violations(rules, touch("Makefile", &make, &forged));
  ASSERT_EQ(recipe.size(), 1u);
  EXPECT_TRUE(recipe[0].detail.starts_with("Makefile: the recipe of target test changed (its test section is the oracle")) << recipe[0].detail;
  // Without post-images (the proposal did not apply) a section cannot be compared.
  EXPECT_TRUE(oracle_violations(rules, touch("Makefile", &make, nullptr, false)).empty());
  // A deleted build file loses its test section.
  EXPECT_EQ(oracle_violations(rules, touch("Makefile", &make, nullptr)).size(), 1u);

  OracleRules none{.paths = {}, .hooks = {}, .sections = {}};
  EXPECT_TRUE(oracle_violations(none, touch("tests/test_ops.py", &test, nullptr)).empty());
  OracleRules whole{.paths = {}, .hooks = {}, .sections = {"**/meson.build"}};
  EXPECT_EQ(oracle_violations(whole, touch("meson.build", &make, &forged)).size(), 1u) << "an unknown kind is judged whole";
}

// --- decide() -------------------------------------------------------------------------------

FileChange change(std::string path, const std::optional<std::string>& before, const std::optional<std::string>& after) {
  FileChange f;
  f.path = std::move(path);
  if (!before) {
    f.op = FileOp::add;
    f.new_mode = kModeFile;
  } else if (!after) {
    f.op = FileOp::remove;
    f.old_mode = kModeFile;
    f.before_sha256 = sha256(*before);
  } else {
    f.op = FileOp::modify;
    f.old_mode = f.new_mode = kModeFile;
    f.before_sha256 = sha256(*before);
  }
  if (after) {
    f.after_sha256 = sha256(*after);
    f.after_content = *after;
  }
  return f;
}

class OracleDecide : public ::testing::Test {
 protected:
  void SetUp() override {
    plan.name = "p";
    BuildStep fix;
    fix.id = "fix";
    fix.action = StepAction::modify;
    fix.targets = {"src/ops.py", "tests/test_ops.py", "Makefile", "conftest.py"};
    BuildStep tests = fix;
    tests.id = "tests";
    tests.action = StepAction::create_test;
    plan.steps = {fix, tests};
    policy.name = "p";
  }

  struct File {
    std::string path;
    std::optional<std::string> before, after;
  };
  Verdict judge(const std::string& step, const std::vector<File>& files) {
    std::vector<FileChange> changes;
    std::map<std::string, BaseFileImage> base;
    for (const File& f : files) {
      changes.push_back(change(f.path, f.before, f.after));
      base[f.path] = BaseFileImage{f.before, kModeFile};
    }
    Diff diff{step, std::move(changes)};
    ProposalEvidence proposal{step, diff.to_json(), std::move(base), std::nullopt, std::nullopt, std::nullopt};
    RunResult run;
    run.preflight.ok = true;
    run.diff_sha256 = diff.digest();
    return decide(DecisionInput{plan, done, proposal, &run, policy});
  }

  BuildPlan plan;
  Policy policy;
  std::set<std::string> done;
};

TEST_F(OracleDecide, AModifyStepMayNotRewriteTheTestsEvenWhenItTargetsThem) {
  Verdict v = judge("fix", {{"src/ops.py", "a\n", "b\n"}, {"tests/test_ops.py", "assert mul(2, 3) == 6\n", "assert True\n"}});
  EXPECT_EQ(v.reason_codes(), Strings{"test_modified"});
  EXPECT_NE(v.reasons[0].detail.find("tests/test_ops.py: `assert mul ( 2 , 3 ) == 6` (the base's tests use it) removed"),
            std::string::npos)
      << v.reasons[0].detail;

  Verdict deleted = judge("fix", {{"tests/test_ops.py", "assert mul(2, 3) == 6\n", std::nullopt}});
  EXPECT_EQ(deleted.reason_codes(), Strings{"test_modified"});
  Verdict data = judge("fix", {{"tests/data/in.txt", "1 2\n", "1 3\n"}});
  const Strings data_codes = data.reason_codes();
  EXPECT_NE(std::find(data_codes.begin(), data_codes.end(), "protected_path"), data_codes.end()) << "a test file the kernel has no reader for is judged whole";
  Verdict hook = judge("fix", {{"conftest.py", std::nullopt, "import unittest\n"}});
  EXPECT_EQ(hook.reason_codes(), Strings{"protected_path"});
  Verdict recipe = judge("fix", {{"Makefile", "test:\n\t./t\n", "test:\n\techo ok 1\n"}});
  EXPECT_EQ(recipe.reason_codes(), Strings{"protected_path"});
  EXPECT_NE(recipe.reasons[0].detail.find("Makefile: the recipe of target test changed"), std::string::npos);

  EXPECT_TRUE(judge("fix", {{"src/ops.py", "a\n", "b\n"}, {"Makefile", "all:\n\tcc a.c\ntest:\n\t./t\n", "all:\n\tcc a.c b.c\ntest:\n\t./t\n"}})
                  .accepted);
}

TEST(OracleRules, AnApprovalAdmitsAFileJudgedWholeOrATestSectionByItsPathAndNeverAHook) {
  const OracleRules rules;
  const std::string before = "add_test(a a)\n", after = "add_test(a a)\nadd_compile_definitions(X)\n";
  auto whole = oracle_violations(rules, touch("tests/CMakeLists.txt", &before, &after));
  ASSERT_EQ(whole.size(), 1u);
  EXPECT_EQ(whole[0].code, "protected_path");
  EXPECT_EQ(whole[0].units, Strings{"tests/CMakeLists.txt"}) << "the file is the unit an approval names";
  EXPECT_TRUE(oracle_violations(rules, touch("tests/CMakeLists.txt", &before, &after), {"tests/CMakeLists.txt"}).empty());
  EXPECT_EQ(oracle_violations(rules, touch("tests/CMakeLists.txt", &before, &after), {"tests/CMakeLists.txt::x", "tests/other.txt"}).size(), 1u)
      << "only the file's own path admits it";
  // A C file whose structure cannot be read is judged whole, and admitted the same way.
  const std::string c_before = "int test_a(void) { return 1; }\n", c_after = "int test_a(void) { return 1; \n";
  auto unreadable = oracle_violations(rules, touch("tests/a.c", &c_before, &c_after));
  ASSERT_EQ(unreadable.size(), 1u);
  EXPECT_EQ(unreadable[0].code, "protected_path") << unreadable[0].detail;
  EXPECT_EQ(unreadable[0].units, Strings{"tests/a.c"});
  EXPECT_TRUE(oracle_violations(rules, touch("tests/a.c", &c_before, &c_after), {"tests/a.c"}).empty());
  // A test section is admitted by its file's path; a hook never is.
  auto hook = oracle_violations(rules, touch("tests/conftest.py", &before, &after), {"tests/conftest.py"});
  ASSERT_EQ(hook.size(), 1u);
  EXPECT_TRUE(hook[0].units.empty());
  const std::string make = "test:\n\t./t\n", forged = "test:\n\techo ok\n";
  auto section = oracle_violations(rules, touch("Makefile", &make, &forged));
  ASSERT_EQ(section.size(), 1u);
  EXPECT_EQ(section[0].units, Strings{"Makefile"});
  EXPECT_TRUE(oracle_violations(rules, touch("Makefile", &make, &forged), {"Makefile"}).empty());
  EXPECT_EQ(oracle_violations(rules, touch("Makefile", &make, &forged), {"tests/Makefile"}).size(), 1u);
}

TEST_F(OracleDecide, AFileJudgedWholeNamesHowAnApprovalAdmitsIt) {
  Verdict data = judge("fix", {{"src/ops.py", "a\n", "b\n"}, {"tests/data/in.txt", "1 2\n", "1 3\n"}});
  auto reason = std::find_if(data.reasons.begin(), data.reasons.end(), [](const Reason& r) { return r.code == "protected_path"; });
  ASSERT_NE(reason, data.reasons.end()) << data.to_json().dump();
  EXPECT_NE(reason->detail.find("warden approve --diff sha256:"), std::string::npos) << reason->detail;
  EXPECT_NE(reason->detail.find("--test 'tests/data/in.txt'"), std::string::npos) << reason->detail;
  Verdict hook = judge("fix", {{"conftest.py", "import pytest\n", "import unittest\n"}});
  ASSERT_EQ(hook.reason_codes(), Strings{"protected_path"});
  EXPECT_EQ(hook.reasons[0].detail.find("warden approve"), std::string::npos) << "a hook is never approvable";
}

TEST_F(OracleDecide, ACreateTestStepOpensTheHookItTargets) {
  // A new test suite may bring its conftest.py when the plan's create_test step names it.
  plan.steps[1].targets = {"conftest.py"};
  Verdict hook = judge("tests", {{"conftest.py", std::nullopt, "import pytest\n"}});
  EXPECT_TRUE(hook.accepted) << hook.to_json().dump();
  // Not what it does not target.
  plan.steps[1].targets = {"tests/test_new.py"};
  EXPECT_EQ(judge("tests", {{"tests/test_new.py", std::nullopt, "x = 1\n"}, {"conftest.py", std::nullopt, "import pytest\n"}})
                .reason_codes(),
            (Strings{"content_mismatch", "protected_path"}));
  // An existing test stays: the oracle lets the step by, and the step only creates files.
  plan.steps[1].targets = {"tests/test_ops.py"};
  EXPECT_EQ(judge("tests", {{"tests/test_ops.py", "assert mul(2, 3) == 6\n", "assert True\n"}}).reason_codes(),
            Strings{"content_mismatch"});
}

TEST_F(OracleDecide, ThePolicyDecidesWhatTheOracleIs) {
  policy.oracle = OracleRules{.paths = {"spec/**"}, .hooks = {}, .sections = {}};
  EXPECT_TRUE(judge("fix", {{"tests/test_ops.py", "a\n", "b\n"}}).accepted);
  plan.steps[0].targets.push_back("spec/ops_spec.rb");
  EXPECT_EQ(judge("fix", {{"spec/ops_spec.rb", "a\n", "b\n"}}).reason_codes(), Strings{"protected_path"});
}

// --- the policy field -----------------------------------------------------------------------

TEST(OraclePolicy, AbsentMeansTheDefaultsAndEachListReplaces) {
  const std::string head = R"({"format": "warden.policy/v1", "name": "p")";
  auto plain = Policy::parse(head + "}", "test");
  ASSERT_TRUE(plain) << plain.error().message;
  EXPECT_EQ(plain->oracle, OracleRules{});

  auto custom = Policy::parse(head + R"(, "oracle": {"paths": ["spec/**"], "hooks": []}})", "test");
  ASSERT_TRUE(custom) << custom.error().message;
  EXPECT_EQ(custom->oracle.paths, Strings{"spec/**"});
  EXPECT_TRUE(custom->oracle.hooks.empty());
  EXPECT_EQ(custom->oracle.sections, default_oracle_sections());
  EXPECT_NE(custom->digest(), plain->digest());

  // What the ledger records reads back the same (replay reads it without the programs' digests).
  Json recorded = custom->to_json();
  recorded.erase("programs");
  auto again = Policy::parse(recorded.dump(), "recorded");
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(again->oracle, custom->oracle);
  EXPECT_EQ(again->digest(), custom->digest());
}

TEST(OraclePolicy, StrictReading) {
  const std::string head = R"({"format": "warden.policy/v1", "name": "p", "oracle": )";
  for (const char* bad : {R"([])", R"({"path": []})", R"({"paths": "tests/**"})", R"({"paths": [""]})", R"({"hooks": [1]})"}) {
    auto p = Policy::parse(head + bad + "}", "test");
    ASSERT_FALSE(p) << bad;
    EXPECT_NE(p.error().message.find("oracle"), std::string::npos) << p.error().message;
  }
}

TEST(OraclePolicy, BuiltinPoliciesProtectTheDefaultOracle) {
  for (std::string_view name : builtin_policy_names()) {
    auto p = Policy::load(name);
    ASSERT_TRUE(p) << p.error().message;
    EXPECT_EQ(p->oracle, OracleRules{}) << name;
  }
}

}  // namespace
}  // namespace warden::kernel
