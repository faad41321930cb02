// JavaScript and TypeScript test files judged by structure: tests, suites and helpers may be
// added; each way of changing or disabling a base test, or of running new code around the
// base's tests, is named; what the reader cannot read with confidence is judged whole.
#include <gtest/gtest.h>

#include <string>

#include "kernel/judge/test_file_change.h"
#include "kernel/judge/test_structure.h"
#include "tests/kernel/test_file_findings.h"

namespace warden::kernel {
namespace {

const std::string kJest = R"(// The ops module's tests.
const { add, mul } = require('../src/ops');
import { parse } from "../src/parse";

function pair(a, b) {
  return [a, b];
}

const cases = [[1, 2, 3], [2, 2, 4]];

beforeEach(() => {
  jest.resetModules();
});

describe('ops', () => {
  beforeAll(() => { process.env.MODE = 'strict'; });

  it('adds', () => {
    const [a, b] = pair(1, 2);
    expect(add(a, b)).toBe(3);
    expect(`${a}+${b}`).toMatch(/^\d+\+\d+$/);
  });

  test.each(cases)('adds %i and %i', (a, b, sum) => {
    expect(add(a, b)).toBe(sum);
  });

  describe('mul', function () {
    it('multiplies', () => {
      expect(mul(2, 3)).toBe(6)
    })
  })
});

test('parses', async () => {
  expect(await parse("1")).toEqual({ value: 1 });
});
)";

TEST(JavaScriptStructure, ReadsTestsSuitesHooksAndDeclarations) {
  auto units = read_javascript_structure(kJest);
  ASSERT_TRUE(units) << units.error().message;
  std::vector<std::string> keys;
  for (const SourceUnit& u : *units) keys.push_back(u.key.substr(0, u.key.find('\n')));
  ASSERT_EQ(units->size(), 7u) << ::testing::PrintToString(keys);
  EXPECT_EQ((*units)[0].kind, SourceUnit::Kind::import) << "a require is an import";
  EXPECT_EQ((*units)[0].binds, (std::vector<std::string>{"add", "mul"}));
  EXPECT_EQ((*units)[1].kind, SourceUnit::Kind::import);
  EXPECT_EQ((*units)[1].binds, std::vector<std::string>{"parse"});
  EXPECT_EQ((*units)[2].key, "function pair");
  EXPECT_EQ((*units)[3].binds, std::vector<std::string>{"cases"});
  EXPECT_TRUE((*units)[4].key.starts_with("hook ")) << (*units)[4].key;
  const SourceUnit& suite = (*units)[5];
  EXPECT_EQ(suite.kind, SourceUnit::Kind::klass);
  EXPECT_EQ(suite.name, "ops");
  ASSERT_EQ(suite.members.size(), 4u);
  EXPECT_EQ(suite.members[1].key, "test adds");
  EXPECT_EQ(suite.members[2].key, "test adds %i and %i");
  EXPECT_EQ(suite.members[3].members.size(), 1u) << "a nested suite's callback (function () {...}) is read too";
  EXPECT_EQ((*units)[6].key, "test parses");
}

TEST(JavaScriptStructure, TestsSuitesAndHelpersMayBeAdded) {
  std::string added = replaced(kJest, "  describe('mul'", "  it('adds zero', () => {\n    expect(add(0, 0)).toBe(0);\n  });\n\n  describe('mul'");
  added += "\ndescribe('sub', () => {\n  beforeEach(() => { jest.spyOn(console, 'log'); });\n  it.each([[1, 1]])('subtracts', (a, b) => expect(a - b).toBe(0));\n});\n";
  added += "\nfunction triple(a) { return [a, a, a]; }\nconst { sub } = require('../src/ops');\nimport { format } from '../src/format';\n";
  auto c = compare_test_file("tests/ops.test.js", kJest, added);
  EXPECT_TRUE(c.findings.empty()) << joined(c);
  EXPECT_FALSE(c.unreadable) << joined(c);
  EXPECT_EQ(c.added_tests, (std::vector<std::string>{"ops > adds zero", "sub", "sub > subtracts"}));
}

TEST(JavaScriptStructure, EveryChangeToABaseTestOrWhatItUsesIsNamed) {
  const std::string file = "src/__tests__/ops.test.ts";
  EXPECT_TRUE(has(compare_test_file(file, kJest, replaced(kJest, "expect(add(a, b)).toBe(3);", "return;")), "ops > adds", "changed"));
  EXPECT_TRUE(has(compare_test_file(file, kJest, replaced(kJest, "  it('adds'", "  it.skip('adds'")), "ops > adds", "changed"));
  EXPECT_TRUE(has(compare_test_file(file, kJest, replaced(kJest, "describe('ops'", "describe.skip('ops'")), "ops", "changed (its call"));
  EXPECT_TRUE(has(compare_test_file(file, kJest, replaced(kJest, "  it('adds'", "  it('sums'")), "ops > adds", "removed"));
  EXPECT_TRUE(has(compare_test_file(file, kJest, replaced(kJest, "return [a, b];", "return [b, a];")), "pair", "changed"));
  EXPECT_TRUE(has(compare_test_file(file, kJest, replaced(kJest, "[2, 2, 4]", "[2, 2, 5]")), "", "changed"));
  EXPECT_TRUE(has(compare_test_file(file, kJest, replaced(kJest, "expect(mul(2, 3)).toBe(6)", "expect(mul(2, 3)).toBe(mul(2, 3))")),
                  "ops > mul > multiplies", "changed"));
  EXPECT_TRUE(has(compare_test_file(file, kJest, replaced(kJest, "/^\\d+\\+\\d+$/", "/./")), "ops > adds", "changed"))
      << "a regular expression is code";
  EXPECT_TRUE(has(compare_test_file(file, kJest, replaced(kJest, "`${a}+${b}`", "`${b}+${b}`")), "ops > adds", "changed"))
      << "a template literal's ${...} is code";
}

TEST(JavaScriptStructure, NewCodeAroundTheBaseTestsIsNamed) {
  const std::string file = "tests/ops.test.js";
  // A hook at the top or in a base suite runs around the base's tests.
  EXPECT_TRUE(has(compare_test_file(file, kJest, kJest + "\nafterEach(() => { jest.restoreAllMocks(); });\n"), "", "new hook"));
  EXPECT_TRUE(has(compare_test_file(file, kJest, replaced(kJest, "  it('adds'", "  beforeEach(() => { global.x = 1; });\n  it('adds'")), "",
                  "new hook"));
  // A new test that runs alone skips every base test.
  EXPECT_TRUE(has(compare_test_file(file, kJest, kJest + "\ntest.only('new', () => {});\n"), "new", "runs alone"));
  EXPECT_TRUE(has(compare_test_file(file, kJest, kJest + "\ndescribe('n', () => { it.only('x', () => {}); });\n"), "n", "runs alone"));
  EXPECT_TRUE(has(compare_test_file(file, kJest, kJest + "\nfit('x', () => {});\n"), "x", "runs alone"));
  // Code that runs at load, a mock, a rebinding of what the tests use.
  EXPECT_TRUE(has(compare_test_file(file, kJest, kJest + "\njest.mock('../src/ops');\n"), "jest . mock", "runs when the file is loaded"));
  EXPECT_TRUE(has(compare_test_file(file, kJest, kJest + "\nvar expect = () => ({ toBe() {} });\n"), "expect", "read"));
  EXPECT_TRUE(has(compare_test_file(file, kJest, kJest + "\nfunction pair() { return [1, 2]; }\n"), "pair", "already binds"));
  EXPECT_TRUE(has(compare_test_file(file, kJest, kJest + "\nconst { add: plus, ...rest } = require('x'), mul2 = 1;\n"), "", "") ==
              false);
  // A declaration's body ends its statement: a call after it on the same line is a statement.
  EXPECT_TRUE(has(compare_test_file(file, kJest, kJest + "\nfunction helper() {} helper();\n"), "helper", "runs when the file is loaded"));
  EXPECT_TRUE(has(compare_test_file(file, kJest, kJest + "\ntest('t', () => {}) || helper();\n"), "", "runs when the file is loaded"));
  // A new suite's body statement runs at load.
  EXPECT_TRUE(has(compare_test_file(file, kJest, kJest + "\ndescribe('d', () => { Math.random = () => 4; it('r', () => {}); });\n"),
                  "d > ", "statement in a new class"));
}

TEST(JavaScriptStructure, WhatItCannotReadIsJudgedWhole) {
  for (const char* bad : {"it('x', () => {\n", "const s = 'open\n", "/* never closed", "const r = /unterminated\n",
                          "const t = `${a`;\n"}) {
    auto c = compare_test_file("tests/a.test.js", kJest, bad);
    EXPECT_TRUE(c.unreadable) << bad;
  }
  EXPECT_FALSE(structure_language("tests/a.test.jsx")) << "JSX text is not code";
  EXPECT_EQ(structure_language("tests/a.spec.mts"), StructureLanguage::javascript);
}

TEST(JavaScriptStructure, ADivisionIsNotARegularExpression) {
  const std::string base = "const half = total / 2 / count;\ntest('h', () => { expect(f(a) / 2).toBe(b / c); });\n";
  auto units = read_javascript_structure(base);
  ASSERT_TRUE(units) << units.error().message;
  EXPECT_EQ(units->size(), 2u);
  const std::string with_regex = "if (x) /a'b/.test(s);\ntest('t', () => { return /[/]'/.test(y); });\n";
  auto r = read_javascript_structure(with_regex);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->size(), 2u) << "after a condition's parentheses a slash starts a regular expression";
  // After `}` JavaScript reads a regular expression (a block ended) or a division (an object
  // ended): the reader does not guess. `{}/`/1;` is a division and a template that would
  // swallow every base test after it.
  EXPECT_FALSE(read_javascript_structure("if (x) {\n}\n/a/.test(s);\n"));
  EXPECT_FALSE(read_javascript_structure("const junk = {}/`/1;\n"));
  EXPECT_FALSE(read_javascript_structure("t(`${'a'.replace(/`/g, '')}`);\n")) << "a slash in ${...}";
}

// Each way the attack review found to change what a base test does while the comparison said
// nothing: now a finding, or a file judged whole.
TEST(JavaScriptStructure, WhatJavaScriptReadsDifferentlyIsNotGuessed) {
  const std::string file = "tests/ops.test.js";
  auto whole = [&](const std::string& after) { return compare_test_file(file, kJest, after).unreadable.has_value(); };
  // A line comment ends at CR, U+2028 and U+2029 too.
  for (const char* end : {"\r", "\xE2\x80\xA8", "\xE2\x80\xA9"}) {
    auto c = compare_test_file(file, kJest, kJest + "// tidy" + end + "delete process.env.MODE;\n");
    EXPECT_TRUE(has(c, "delete", "runs when the file is loaded")) << joined(c);
  }
  // HTML-like comments are comments only in scripts; an escape in a name hides the name.
  EXPECT_TRUE(whole(kJest + "const z = 1 <!-- ; delete process.env.MODE;\n"));
  EXPECT_TRUE(whole(kJest + "x\n--> delete process.env.MODE;\n"));
  EXPECT_TRUE(whole(replaced(kJest, "  it('adds'", "  const \\u0065xpect = () => ({ toBe() {} });\n  it('adds'")));
  // The BOM and NBSP are white space, so the name is `expect`.
  for (const char* space : {"\xEF\xBB\xBF", "\xC2\xA0"}) {
    auto c = compare_test_file(file, kJest, kJest + "var" + std::string(space) + "expect = () => ({ toBe() {} });\n");
    EXPECT_TRUE(has(c, "", "expect")) << joined(c);
  }
  // Comments that configure the runner or the compiler are code.
  EXPECT_FALSE(compare_test_file(file, kJest, "/** @jest-environment ./lenient.js */\n" + kJest).findings.empty());
  EXPECT_FALSE(compare_test_file(file, kJest, replaced(kJest, "    expect(add(a, b)).toBe(3);", "    // @ts-ignore\n    expect(add(a, b)).toBe(3);"))
                   .findings.empty());
  // Nesting and size are bounded: judged whole, quickly.
  std::string deep;
  for (int i = 0; i < 5000; ++i) deep += "describe('d', () => {\n";
  for (int i = 0; i < 5000; ++i) deep += "});\n";
  EXPECT_TRUE(whole(deep));
  std::string templates = "const t = ";
  for (int i = 0; i < 5000; ++i) templates += "`${";
  EXPECT_TRUE(whole(templates));
  std::string many;
  for (int i = 0; i < 20000; ++i) many += "x" + std::to_string(i) + "();\n";
  EXPECT_TRUE(whole(many));
}

TEST(JavaScriptStructure, DeclarationsThatRunCodeAreStatements) {
  const std::string file = "tests/ops.test.js";
  auto finds = [&](const std::string& added, std::string_view what) {
    auto c = compare_test_file(file, kJest, kJest + added);
    EXPECT_TRUE(has(c, "", what)) << added << "\n" << joined(c);
  };
  finds("const cfg = delete process.env.MODE;\n", "runs when the file is loaded");
  finds("let n = 0, m = (global.x = 1);\n", "runs when the file is loaded");
  finds("const h = beforeEach(() => { global.x = 1; });\n", "runs when the file is loaded");
  finds("const focused = it.only('new', () => {});\n", "runs alone");
  finds("class Fixture { static { delete process.env.MODE; } }\n", "runs when the file is loaded");
  finds("class Fixture { static x = delete process.env.MODE; }\n", "runs when the file is loaded");
  finds("class F extends (delete process.env.MODE, Object) {}\n", "runs when the file is loaded");
  finds("class P extends X({}) {} delete process.env.MODE;\n", "runs when the file is loaded");
  finds("class Probe {\n  @((t, k) => { delete process.env.MODE; })\n  run() {}\n}\n", "runs when the file is loaded");
  finds("function helper(): void {} delete process.env.MODE;\n", "runs when the file is loaded");
  finds("namespace Env { delete process.env.MODE; }\n", "runs when the file is loaded");
  finds("function using(v) {}\nusing(delete process.env.MODE);\n", "runs when the file is loaded");
  finds("type(delete process.env.MODE);\n", "runs when the file is loaded");
  // A suite whose callback is not a plain function is a statement; one with a trailing comma
  // is read as a suite.
  finds("describe('setup', () => (delete process.env.MODE, it('x', () => {})));\n", "runs when the file is loaded");
  finds("describe('setup', () => {\n  delete process.env.MODE;\n  it('x', () => {});\n},);\n", "statement in a new class");
  // Names that are keywords elsewhere are names: shadowing one the tests read is found.
  const std::string lookup = "test('misses', () => {\n  expect(get('x')).toBe(undefined);\n});\n";
  EXPECT_TRUE(has(compare_test_file(file, lookup, lookup + "const undefined = 1;\n"), "undefined", "read"));
  EXPECT_TRUE(has(compare_test_file(file, lookup, lookup + "function get() { return 1; }\n"), "get", "read"));
  auto c = compare_test_file(file, kJest, replaced(kJest, "function pair(a, b) {\n  return [a, b];\n}\n", "") +
                                             "import { from as origin, expect } from './fake-expect.mjs';\n");
  EXPECT_TRUE(has(c, "", "expect")) << joined(c);
  // A require runs its module: its removal is a change even when no test reads its name.
  const std::string installs = "require('./setup');\nconst strict = require('../src/strict');\n" + kJest;
  EXPECT_TRUE(has(compare_test_file(file, installs, replaced(installs, "const strict = require('../src/strict');\n", "")), "strict",
                  "removed"));
}

TEST(JavaScriptStructure, ImportsAndRequiresMayGainNames) {
  const std::string file = "tests/ops.test.mjs";
  auto c = compare_test_file(file, kJest, replaced(replaced(kJest, "const { add, mul } = require", "const { add, mul, sub } = require"),
                                                     "import { parse } from", "import { parse, format } from"));
  EXPECT_TRUE(c.findings.empty()) << joined(c);
  auto renamed = compare_test_file(file, kJest, replaced(kJest, "const { add, mul } = require('../src/ops')", "const { add, mul } = require('../src/fake')"));
  EXPECT_FALSE(renamed.findings.empty()) << "another module is another import";
}

}  // namespace
}  // namespace warden::kernel
