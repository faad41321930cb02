// Existing test files judged by structure: what a proposal may add, and every way of changing
// what a base test is or uses, each named.
#include <gtest/gtest.h>

#include <string>

#include "kernel/judge/test_file_change.h"
#include "kernel/judge/test_structure.h"
#include "tests/kernel/test_file_findings.h"

namespace warden::kernel {
namespace {

const std::string kPy = R"(import unittest

from mathy import ops
from mathy.ops import add, sub


def make_pair():
    return (2, 3)


class TestOps(unittest.TestCase):
    """Arithmetic."""

    def setUp(self):
        self.pair = make_pair()

    def test_add(self):
        # two and three
        self.assertEqual(add(*self.pair), 5)

    def test_sub(self):
        self.assertEqual(sub(3, 2), 1)
        self.check_sign(-1)

    def check_sign(self, x):
        self.assertLess(x, 0)


def test_module_level():
    assert ops.add(1, 1) == len([1, 2])


if __name__ == "__main__":
    unittest.main()
)";

// A change to kPy: `from` replaced by `to`, and the finding it must give (on `unit`, saying `what`).
struct Edit {
  std::string name, from, to, unit, what;
};

// A whole proposed version of a file.
struct Version {
  std::string name, after;
};

TEST(PythonStructure, ReadsUnitsMembersAndBindings) {
  auto units = read_python_structure(kPy);
  ASSERT_TRUE(units) << units.error().message;
  std::vector<std::string> keys;
  for (const auto& u : *units) keys.push_back(u.key);
  EXPECT_EQ(keys, (std::vector<std::string>{"import import unittest", "from mathy", "from mathy.ops", "def make_pair",
                                            "class TestOps", "def test_module_level",
                                            "if __name__ == \"__main__\" :\n\tunittest . main ( )\n"}));
  const auto& cls = (*units)[4];
  ASSERT_EQ(cls.members.size(), 5u);
  EXPECT_EQ(cls.members[0].kind, SourceUnit::Kind::docstring);
  EXPECT_EQ(cls.members[1].name, "setUp");
  EXPECT_EQ((*units)[2].binds, (std::vector<std::string>{"add", "sub"}));
}

TEST(PythonStructure, RefusesWhatItCannotReadWithConfidence) {
  EXPECT_FALSE(read_python_structure("x = 'open\n"));
  EXPECT_FALSE(read_python_structure("def f(:\n    pass\n"));
  EXPECT_FALSE(read_python_structure("x = (1,\n"));
  EXPECT_FALSE(read_python_structure("def f():\n        a = 1\n    b = 2\n"));
  EXPECT_FALSE(read_python_structure("class A:\n"));
  EXPECT_FALSE(read_python_structure("x = \"\"\"never ends\n"));
  EXPECT_TRUE(read_python_structure("s = r'\\'' + b\"x\" + f'''{a}\n'''\nt = \\\n  1\n"));
}

TEST(TestFileChange, TestsHelpersAndImportsMayBeAdded) {
  std::string after = replaced(kPy, "    def check_sign(self, x):",
                               "    def test_mul(self):\n        self.assertEqual(ops.mul(2, 3), 6)\n\n"
                               "    def _triple(self):\n        return (1, 2, 3)\n\n    def check_sign(self, x):");
  after = replaced(after, "from mathy.ops import add, sub", "from mathy.ops import add, mul, sub\nimport math");
  after = replaced(after, "\nif __name__", "\nclass TestMore(unittest.TestCase):\n    def test_pow(self):\n"
                                           "        self.assertEqual(math.pow(2, 2), 4)\n\n\nTABLE = [1, 2]\n\n\nif __name__");
  auto c = compare_test_file("tests/test_ops.py", kPy, after);
  EXPECT_TRUE(c.findings.empty()) << joined(c);
  EXPECT_FALSE(c.unreadable);
  EXPECT_EQ(c.added_tests, (std::vector<std::string>{"TestOps.test_mul", "TestMore", "TestMore.test_pow"}));
}

TEST(TestFileChange, CommentsBlankLinesDocstringsAndSpacingDoNotCount) {
  std::string after = replaced(kPy, "        # two and three\n", "");
  after = replaced(after, "\"\"\"Arithmetic.\"\"\"", "\"\"\"Arithmetic, checked.\"\"\"");
  after = replaced(after, "sub(3, 2), 1)", "sub(3,2),  1)  # one");
  after = replaced(after, "    def test_sub(self):\n", "    def test_sub(self):\n        \"\"\"Subtraction.\"\"\"\n\n");
  auto c = compare_test_file("tests/test_ops.py", kPy, after);
  EXPECT_TRUE(c.findings.empty()) << joined(c);
}

TEST(TestFileChange, WhatNothingReadsMayGo) {
  const std::string base = "import gc\nimport os\nfrom x import a, b\n\n\ndef unused_helper():\n    return 1\n\n\n"
                           "def test_a():\n    assert a() and os.sep\n";
  auto c = compare_test_file("tests/test_x.py", base,
                             "import os\nfrom x import a\n\n\ndef test_a():\n    assert a() and os.sep\n");
  EXPECT_TRUE(c.findings.empty()) << joined(c);
  auto used = compare_test_file("tests/test_x.py", base, "import gc\nfrom x import a, b\n\n\ndef unused_helper():\n    return 1\n\n\n"
                                                         "def test_a():\n    assert a() and os.sep\n");
  EXPECT_TRUE(has(used, "import os", "removed")) << joined(used);
}

TEST(TestFileChange, EveryChangeToABaseTestIsNamed) {
  const Edit cases[] = {
      {"early return", "        self.assertEqual(sub(3, 2), 1)\n", "        return\n        self.assertEqual(sub(3, 2), 1)\n",
       "TestOps.test_sub", "changed"},
      {"skipTest", "        # two and three\n", "        self.skipTest('later')\n", "TestOps.test_add", "changed"},
      {"assertion weakened", "assertEqual(add(*self.pair), 5)", "assertTrue(add(*self.pair))", "TestOps.test_add", "changed"},
      {"decorator", "    def test_sub(self):", "    @unittest.skip('flaky')\n    def test_sub(self):", "TestOps.test_sub",
       "changed"},
      {"expected failure", "    def test_add(self):", "    @unittest.expectedFailure\n    def test_add(self):",
       "TestOps.test_add", "changed"},
      {"renamed", "def test_module_level():", "def test_module_level_renamed():", "test_module_level", "removed"},
      {"removed", "    def test_sub(self):\n        self.assertEqual(sub(3, 2), 1)\n        self.check_sign(-1)\n", "",
       "TestOps.test_sub", "removed"},
      {"helper changed", "    return (2, 3)", "    return (0, 0)", "make_pair", "changed"},
      {"method helper changed", "self.assertLess(x, 0)", "pass", "TestOps.check_sign", "changed"},
      {"setUp changed", "self.pair = make_pair()", "self.pair = (5, 0)", "TestOps.setUp", "changed"},
      {"class bases changed", "class TestOps(unittest.TestCase):", "class TestOps(object):", "TestOps", "changed"},
      {"import narrowed", "from mathy.ops import add, sub", "from mathy.ops import add", "`from mathy . ops import add , sub`", "changed"},
  };
  for (const auto& k : cases) {
    auto c = compare_test_file("tests/test_ops.py", kPy, replaced(kPy, k.from, k.to));
    EXPECT_TRUE(has(c, k.unit, k.what)) << k.name << ":\n" << joined(c);
  }
}

TEST(TestFileChange, NewCodeMayNotRedefineWhatBaseTestsUse) {
  const Edit cases[] = {
      {"rebinding at the end of the file", "\nif __name__", "\ndef make_pair():\n    return (5, 0)\n\n\nif __name__",
       "make_pair", "already binds"},
      {"rebinding a name by assignment", "\nif __name__", "\nadd = lambda a, b: a + b\n\nif __name__", "`add = lambda a , b : a + b`",
       "already binds"},
      {"a shadowed builtin the tests read", "\nif __name__", "\ndef len(x):\n    return 0\n\nif __name__", "len", ""},
      {"a new setUp in an existing class", "    def test_add(self):",
       "    def setUpClass(cls):\n        pass\n\n    def test_add(self):", "TestOps.setUpClass", "test runner"},
      {"an overriding assertion", "    def test_add(self):",
       "    def assertEqual(self, a, b):\n        pass\n\n    def test_add(self):", "TestOps.assertEqual", ""},
      {"a method the base calls by attribute", "class TestOps(unittest.TestCase):",
       "class Base:\n    pass\n\n\nclass TestOps(unittest.TestCase):", "Base", ""},
      {"a class attribute the runner reads", "    def test_add(self):", "    maxDiff = None\n\n    def test_add(self):",
       "TestOps.`maxDiff = None`", "test runner"},
      {"an autouse fixture", "\nif __name__",
       "\n@pytest.fixture(autouse=True)\ndef env():\n    yield\n\nif __name__", "env", "autouse"},
      {"a module hook", "\nif __name__", "\ndef setUpModule():\n    pass\n\nif __name__", "setUpModule", "test runner"},
      {"a monkeypatch at import", "\nif __name__", "\nops.add = lambda a, b: 5\n\nif __name__", "`ops . add = lambda a , b : 5`",
       "assigns into"},
      {"a call at import", "\nif __name__", "\npatch_everything()\n\nif __name__", "`patch_everything ( )`", "runs when"},
      {"a wildcard import", "import unittest\n", "import unittest\nfrom mathy.fakes import *\n", "`from mathy . fakes import *`", "wildcard"},
      {"pytestmark", "\nif __name__", "\npytestmark = pytest.mark.skip\n\nif __name__", "`pytestmark = pytest . mark . skip`",
       "test runner"},
  };
  for (const auto& k : cases) {
    auto c = compare_test_file("tests/test_ops.py", kPy, replaced(kPy, k.from, k.to));
    if (k.name == "a method the base calls by attribute") {
      // `Base` is new and unused: fine. A method named like one the base calls on self is not.
      EXPECT_TRUE(c.findings.empty()) << joined(c);
      auto m = compare_test_file("tests/test_ops.py", kPy,
                                 replaced(kPy, "    def test_add(self):", "    def mul(self):\n        pass\n\n    def test_add(self):"));
      EXPECT_TRUE(m.findings.empty()) << joined(m);
      continue;
    }
    EXPECT_TRUE(has(c, k.unit, k.what)) << k.name << ":\n" << joined(c);
  }
}

TEST(TestFileChange, AnInheritedHelperOverriddenInAClassIsNamed) {
  const std::string base = "class TestX(Mixin, unittest.TestCase):\n    def test_a(self):\n        self.check(1)\n";
  auto c = compare_test_file("tests/test_x.py", base,
                             base + "\n    def check(self, x):\n        pass\n");
  EXPECT_TRUE(has(c, "TestX.check", "a name the base's tests read")) << joined(c);
}

// An attacker's review: each of these changes what a base test does while looking additive.
TEST(TestFileChange, AdditionsThatChangeWhatBaseTestsDoAreNamed) {
  const std::string base = "import unittest\nimport mylib\n\n\nclass TestOps(unittest.TestCase):\n    def test_add(self):\n"
                           "        self.assertEqual(mylib.add(2, 3), 5)\n";
  const Version cases[] = {
      {"an f-string where a docstring stands runs",
       "import unittest\nimport mylib\n\n\nclass TestOps(unittest.TestCase):\n    def test_add(self):\n"
       "        f\"{setattr(mylib, 'add', lambda a, b: a + b)}\"\n        self.assertEqual(mylib.add(2, 3), 5)\n"},
      {"a unittest internal overridden", base + "\n    def _baseAssertEqual(self, *a, **k):\n        pass\n"},
      {"a binding that calls setattr", base + "\n\n_ok = setattr(mylib, 'add', lambda a, b: a + b)\n"},
      {"two statements on one line", base + "\n\nX = 1; mylib.add = None\n"},
      {"a statement in a new class body", base + "\n\nclass TestZ(unittest.TestCase):\n    mylib.add = None\n"},
      {"an autouse fixture through an alias", base + "\n\n_auto = pytest.fixture(autouse=True)\n"},
      {"a main guard that is true on import", base + "\n\nif __name__ == '__main__' or True:\n    mylib.add = lambda a, b: a + b\n"},
      {"a guard on the module's own name", base + "\n\nif __name__ == 'tests.test_ops':\n    mylib.add = lambda a, b: a + b\n"},
      {"a main guard with an else", base + "\n\nif __name__ == '__main__':\n    unittest.main()\nelse:\n    mylib.add = None\n"},
      {"an import moved above the path it needs",
       "import sys\nimport mylib\nsys.path.insert(0, 'src')\n\n\nclass TestOps(unittest.TestCase):\n    def test_add(self):\n"
       "        self.assertEqual(mylib.add(2, 3), 5)\n"},
  };
  const std::string with_path = "import sys\nsys.path.insert(0, 'src')\nimport mylib\n\n\nclass TestOps(unittest.TestCase):\n"
                                "    def test_add(self):\n        self.assertEqual(mylib.add(2, 3), 5)\n";
  for (const auto& k : cases) {
    const std::string& before = k.name == "an import moved above the path it needs" ? with_path : base;
    auto c = compare_test_file("tests/test_ops.py", before, k.after);
    EXPECT_FALSE(c.findings.empty() && !c.unreadable) << k.name;
  }
  // A test inherited from another class of the file, overridden in the class that runs it.
  const std::string contract = "import unittest\n\n\nclass Contract:\n    def test_add(self):\n        assert add(2, 3) == 5\n\n\n"
                               "class TestOps(Contract, unittest.TestCase):\n    def test_other(self):\n        pass\n";
  auto over = compare_test_file("tests/test_ops.py", contract, contract + "\n    def test_add(self):\n        pass\n");
  EXPECT_TRUE(has(over, "TestOps.test_add", "inherits from a class of the base file")) << joined(over);
  // Where the base imports *, a new name may replace what it brought.
  auto star = compare_test_file("tests/test_ops.py", "from contract import *\n", "from contract import *\n\n\nclass TestContract:\n    pass\n");
  EXPECT_TRUE(has(star, "TestContract", "imports *")) << joined(star);
  // pytest passes fixtures by parameter name: a new fixture named like a base test's parameter.
  const std::string fixture_base = "def test_add(calc):\n    assert calc.add(2, 3) == 5\n";
  auto fixture = compare_test_file("tests/test_ops.py", fixture_base,
                                   fixture_base + "\n\n@pytest.fixture\ndef calc():\n    return Fake()\n");
  EXPECT_TRUE(has(fixture, "calc", "read")) << joined(fixture);
  // A removed base fixture is never "unused", whatever reads it.
  auto removed = compare_test_file("tests/test_ops.py", "@pytest.fixture(autouse=True)\ndef env():\n    yield\n\n\n" + fixture_base,
                                   fixture_base);
  EXPECT_TRUE(has(removed, "env", "removed")) << joined(removed);
}

TEST(TestFileChange, HonestAdditionsAreAccepted) {
  const std::string base = "import os\nimport unittest\nimport mylib\n\n\nclass TestOps(unittest.TestCase):\n    def test_add(self):\n"
                           "        self.assertTrue(os.path.exists('.'))\n";
  const Version cases[] = {
      {"if __name__ == '__main__'", base + "\n\nif __name__ == '__main__':\n    unittest.main()\n"},
      {"a submodule of an imported package", "import mylib.extras\n" + base},
      {"a member named like an attribute the file reads elsewhere", base + "\n    def exists(self):\n        return True\n"},
      {"a class with pass", base + "\n\nclass TestMore(unittest.TestCase):\n    pass\n"},
  };
  for (const auto& k : cases) {
    auto c = compare_test_file("tests/test_ops.py", base, k.after);
    EXPECT_TRUE(c.findings.empty()) << k.name << ":\n" << joined(c);
  }
}

TEST(CStructure, DirectivesAndSideEffectsInNewCodeAreNamed) {
  // A conditional opened and closed around a base test compiles it out: each new directive is
  // named, though the test's own text is unchanged.
  {
    const std::string c = "static void test_a(void) { TEST_ASSERT(1); }\nint main(void) { RUN_TEST(test_a); return 0; }\n";
    auto wrapped = compare_test_file("tests/t.c", c, "#if 0\n" + std::string(c).insert(c.find("int main"), "#endif\n"));
    EXPECT_TRUE(has(wrapped, "#if 0", "conditional")) << joined(wrapped);
    EXPECT_TRUE(has(wrapped, "#endif", "conditional")) << joined(wrapped);
  }
  const std::string base = "#include \"unity.h\"\nstatic void test_add(void) { TEST_ASSERT_EQUAL(5, add(2, 3)); }\n"
                           "int main(void) {\n  UNITY_BEGIN();\n  RUN_TEST(test_add);\n  return UNITY_END();\n}\n";
  auto in_body = compare_test_file("tests/t.c", base, std::string(base).insert(base.find("int main"),
                                   "static void helper_new(void) {\n#define add(a, b) ((a) + (b))\n}\n"));
  EXPECT_FALSE(in_body.findings.empty()) << "a #define inside a new function";
  std::string registered = base;
  registered.insert(registered.find("int main"), "static void test_new(void) {}\n");
  registered.replace(registered.find("  return UNITY_END"), 0, "  RUN_TEST((lenient = 1, test_new));\n");
  auto effect = compare_test_file("tests/t.c", base, registered);
  EXPECT_TRUE(has(effect, "main", "changed")) << "a registration line with a side effect: " << joined(effect);
  // Honest: a new fixture struct, a Criterion test.
  auto fixture = compare_test_file("tests/t.cc", "#include <gtest/gtest.h>\nTEST(A, B) {}\n",
                                   "#include <gtest/gtest.h>\nTEST(A, B) {}\nstruct Fix : ::testing::Test { int x = 1; };\nTEST_F(Fix, C) {}\n");
  EXPECT_TRUE(fixture.findings.empty()) << joined(fixture);
  auto criterion = compare_test_file("tests/t.c", "#include <criterion/criterion.h>\nTest(ops, add) { cr_assert(1); }\n",
                                     "#include <criterion/criterion.h>\nTest(ops, add) { cr_assert(1); }\nTest(ops, sub) { cr_assert(1); }\n");
  EXPECT_TRUE(criterion.findings.empty()) << joined(criterion);
}

TEST(GoStructure, AnImportBlockMayGainAPackage) {
  const std::string base = "package ops\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {}\n";
  auto c = compare_test_file("ops_test.go", base,
                             "package ops\n\nimport (\n\t\"strings\"\n\t\"testing\"\n)\n\nfunc TestAdd(t *testing.T) {}\n\n"
                             "func TestUpper(t *testing.T) { _ = strings.ToUpper(\"a\") }\n");
  EXPECT_TRUE(c.findings.empty()) << joined(c);
}

TEST(TestFileChange, UnreadableFilesAreJudgedWhole) {
  auto c = compare_test_file("tests/test_ops.py", kPy, kPy + "\nx = 'unterminated\n");
  ASSERT_TRUE(c.unreadable);
  EXPECT_NE(c.unreadable->find("proposed version"), std::string::npos) << *c.unreadable;
  EXPECT_TRUE(compare_test_file("tests/app.test.jsx", "test('a', () => <p>Don't</p>)", "").unreadable);
}

const std::string kC = R"(#include <string.h>
#include "unity/src/unity.h"
#include "common.h"

static cJSON item[1];

static void parse_array_should_parse_empty_arrays(void)
{
    assert_is_array(item);
    TEST_ASSERT_NULL(item->child);
}

static void assert_not_array(const char *json)
{
    TEST_ASSERT_FALSE(parse_array(item, json));
}

int CJSON_CDECL main(void)
{
    /* initialize cJSON item */
    memset(item, 0, sizeof(cJSON));
    UNITY_BEGIN();
    RUN_TEST(parse_array_should_parse_empty_arrays);
    return UNITY_END();
}
)";

TEST(CStructure, ATestAndItsRegistrationMayBeAdded) {
  std::string after = replaced(kC, "int CJSON_CDECL main(void)",
                               "static void parse_array_should_fail_on_garbage(void)\n{\n    assert_not_array(\"[\");\n}\n\n"
                               "int CJSON_CDECL main(void)");
  after = replaced(after, "    return UNITY_END();", "    RUN_TEST(parse_array_should_fail_on_garbage);\n    return UNITY_END();");
  auto c = compare_test_file("tests/parse_array.c", kC, after);
  EXPECT_TRUE(c.findings.empty()) << joined(c);
  EXPECT_EQ(c.added_tests, std::vector<std::string>{"parse_array_should_fail_on_garbage"});
}

TEST(CStructure, ChangesToBaseTestsAndRegistrationsAreNamed) {
  auto weakened = compare_test_file("tests/parse_array.c", kC, replaced(kC, "TEST_ASSERT_NULL(item->child);", ""));
  EXPECT_TRUE(has(weakened, "parse_array_should_parse_empty_arrays", "changed")) << joined(weakened);
  EXPECT_TRUE(weakened.findings.at(0).is_test);
  auto unregistered = compare_test_file("tests/parse_array.c", kC,
                                        replaced(kC, "    RUN_TEST(parse_array_should_parse_empty_arrays);\n", ""));
  EXPECT_TRUE(has(unregistered, "main", "changed")) << joined(unregistered);
  auto twice = compare_test_file("tests/parse_array.c", kC,
                                 replaced(kC, "    return UNITY_END();", "    RUN_TEST(parse_array_should_parse_empty_arrays);\n    return UNITY_END();"));
  EXPECT_TRUE(has(twice, "main", "changed")) << "a registration of no new test: " << joined(twice);
  auto early = compare_test_file("tests/parse_array.c", kC, replaced(kC, "    UNITY_BEGIN();", "    return 0;\n    UNITY_BEGIN();"));
  EXPECT_TRUE(has(early, "main", "changed")) << joined(early);
  auto redefined = compare_test_file("tests/parse_array.c", kC, replaced(kC, "static cJSON item[1];", "static cJSON item[1];\n#define TEST_ASSERT_NULL(x) (void)(x)"));
  EXPECT_TRUE(has(redefined, "`#define TEST_ASSERT_NULL(x) (void)(x)`", "a name the base's tests read")) << joined(redefined);
  auto helper = compare_test_file("tests/parse_array.c", kC, replaced(kC, "TEST_ASSERT_FALSE(parse_array(item, json));", ""));
  EXPECT_TRUE(has(helper, "assert_not_array", "changed")) << joined(helper);
  EXPECT_FALSE(helper.findings.at(0).is_test);
  // A helper declared through an export macro is named by its own parameter list.
  auto exported = compare_test_file("tests/common.c", "CJSON_PUBLIC(char *) read_file(const char *f) { return 0; }\n",
                                    "CJSON_PUBLIC(char *) read_file(const char *f) { return f; }\n");
  EXPECT_TRUE(has(exported, "read_file", "changed")) << joined(exported);
  EXPECT_FALSE(exported.findings.at(0).is_test);
  auto comments = compare_test_file("tests/parse_array.c", kC, replaced(kC, "/* initialize cJSON item */", "/* set up */\n\n"));
  EXPECT_TRUE(comments.findings.empty()) << joined(comments);
}

TEST(CStructure, GoogleTestMacrosAndNamespacesAreUnits) {
  const std::string base = "#include <gtest/gtest.h>\nnamespace x {\nnamespace {\nTEST(Ops, Add) {\n  EXPECT_EQ(1 + 1, 2);\n}\n}  // namespace\n}  // namespace x\n";
  auto added = compare_test_file("tests/ops_test.cc", base,
                                 replaced(base, "}  // namespace\n", "TEST(Ops, Sub) {\n  EXPECT_EQ(1 - 1, 0);\n}\n}  // namespace\n"));
  EXPECT_TRUE(added.findings.empty()) << joined(added);
  auto changed = compare_test_file("tests/ops_test.cc", base, replaced(base, "EXPECT_EQ(1 + 1, 2);", "GTEST_SKIP();"));
  ASSERT_EQ(changed.findings.size(), 1u) << joined(changed);
  EXPECT_TRUE(changed.findings[0].is_test);
  EXPECT_NE(changed.findings[0].unit.find("TEST ( Ops , Add )"), std::string::npos) << joined(changed);
}

TEST(GoStructure, TestsMayBeAddedAndInitMayNot) {
  const std::string base = "package ops\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(1, 1) != 2 {\n\t\tt.Fatal(`no`)\n\t}\n}\n";
  auto added = compare_test_file("ops_test.go", base, base + "\nfunc TestSub(t *testing.T) {\n\tif Sub(1, 1) != 0 {\n\t\tt.Fatal(\"no\")\n\t}\n}\n");
  EXPECT_TRUE(added.findings.empty()) << joined(added);
  EXPECT_EQ(added.added_tests, std::vector<std::string>{"TestSub"});
  auto skipped = compare_test_file("ops_test.go", base, replaced(base, "\tif Add", "\tt.Skip()\n\tif Add"));
  EXPECT_TRUE(has(skipped, "TestAdd", "changed")) << joined(skipped);
  auto init = compare_test_file("ops_test.go", base, base + "\nfunc init() {\n\tAdd = func(a, b int) int { return 2 }\n}\n");
  EXPECT_FALSE(init.findings.empty()) << joined(init);
  auto main = compare_test_file("ops_test.go", base, base + "\nfunc TestMain(m *testing.M) {\n}\n");
  EXPECT_TRUE(has(main, "TestMain", "test runner")) << joined(main);
}

}  // namespace
}  // namespace warden::kernel
