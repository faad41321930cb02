// The dangerous-operation scan: every rule on a line that should match and on lines that
// should not (comments, strings, methods of the same name, safe variants), safety and lint
// rules and their selection, what a change introduces (before/after counts: re-indented,
// moved, duplicated, renamed), the added-lines fallback, and a pathological line scanned in
// linear time.
#include "kernel/judge/dangerous_ops.h"

#include <chrono>
#include <set>

#include <gtest/gtest.h>

#include "common/canonical_json.h"
#include "kernel/judge/content_rules.h"

namespace warden::kernel {
namespace {

struct Case {
  const char* path;
  const char* line;
  const char* rule;  // "" when nothing should match
};

// Every rule, lint included.
const DangerRules kAll({"safety", "lint"});

std::vector<DangerFinding> scan_all(std::string_view path, std::string_view text) { return scan_source(path, text, kAll); }

std::string rules_of(const std::vector<DangerFinding>& findings) {
  std::string out;
  for (const auto& f : findings) out += (out.empty() ? "" : ",") + f.rule;
  return out;
}

// Each line scanned alone finds exactly its rule ("" for none).
template <size_t N>
void expect_each(const Case (&cases)[N]) {
  for (const Case& c : cases) {
    EXPECT_EQ(rules_of(scan_all(c.path, c.line)), c.rule) << c.path << ": " << c.line;
  }
}

TEST(DangerousOps, EveryRuleMatchesAndItsLookalikesDoNot) {
  const Case cases[] = {
      {"a.py", "x = eval(s)", "py.eval"},
      {"a.py", "v = ast.literal_eval(s)", ""},
      {"a.py", "df.eval(expr)", ""},
      {"a.py", "def eval(self, x):", ""},
      {"a.py", "# never eval(x) here", ""},
      {"a.py", "print('eval(x)')", ""},
      {"a.py", "exec(code)", "py.exec"},
      {"a.py", "pool.exec(job)", ""},
      {"a.py", "c = compile(src, 'f', 'exec')", "py.compile"},
      {"a.py", "r = re.compile(r'x+')", ""},
      {"a.py", "m = __import__(name)", "py.dunder_import"},
      {"a.py", "s = \"__import__('os')\"", ""},
      {"a.py", "os.system('ls')", "py.os_system"},
      {"a.py", "my_os.system(x)", ""},
      {"a.py", "f = os.popen(cmd)", "py.os_popen"},
      {"a.py", "subprocess.run(cmd, shell=True)", "py.subprocess_shell"},
      {"a.py", "subprocess.run(cmd, shell=False)", ""},
      {"a.py", "subprocess.run(['ls', '-l'])", ""},
      {"a.py", "obj = pickle.loads(data)", "py.pickle_load"},
      {"a.py", "obj = pickle.load(f)", "py.pickle_load"},
      {"a.py", "obj = json.loads(data)", ""},
      {"a.py", "code = marshal.loads(blob)", "py.marshal_load"},
      {"a.py", "blob = marshal.dumps(code)", ""},
      {"a.py", "cfg = yaml.load(f)", "py.yaml_load"},
      {"a.py", "cfg = yaml.load(f, Loader=yaml.SafeLoader)", ""},
      {"a.py", "cfg = yaml.safe_load(f)", ""},
      {"a.py", "name = input('who? ')", ""},
      {"a.c", "system(\"ls\");", "c.system"},
      {"a.cc", "std::system(cmd.c_str());", "c.system"},
      {"a.cc", "host->system(cmd);", ""},
      {"a.cc", "os.system(cmd);", ""},
      {"a.c", "int my_system(int x);", ""},
      {"a.c", "FILE* p = popen(cmd, \"r\");", "c.popen"},
      {"a.c", "gets(buf);", "c.gets"},
      {"a.c", "fgets(buf, sizeof buf, stdin);", ""},
      {"a.c", "strcpy(dst, src);", "c.strcpy"},
      {"a.c", "strncpy(dst, src, n);", ""},
      {"a.c", "strcat(dst, src);", "c.strcat"},
      {"a.c", "sprintf(buf, \"%d\", n);", "c.sprintf"},
      {"a.c", "snprintf(buf, sizeof buf, \"%d\", n);", ""},
      {"a.c", "vsprintf(buf, fmt, ap);", "c.vsprintf"},
      {"a.c", "execvp(argv[0], argv);", "c.exec"},
      {"a.c", "execl(\"/bin/sh\", \"sh\", NULL);", "c.exec"},
      {"a.c", "execve(path, argv, envp);", "c.exec"},
      {"a.c", "int execute(int job);", ""},
      {"a.c", "asm(\"nop\");", "c.asm"},
      {"a.h", "__asm__ __volatile__(\"cpuid\" : : : \"memory\");", "c.asm"},
      {"a.c", "// system(\"rm\") would be wrong", ""},
      {"a.c", "/* strcpy(a, b) */ int x = 1;", ""},
      {"a.c", "puts(\"do not call system(1)\");", ""},
      {"a.hpp", "char c = '\"'; strcpy(a, b);", "c.strcpy"},
      {"x.sh", "curl -sSL https://example.com/i.sh | sh", "sh.curl_pipe_sh"},
      {"x.sh", "wget -qO- https://example.com/i | sudo bash", "sh.curl_pipe_sh"},
      {"x.sh", "curl -o out.tgz https://example.com/x.tgz", ""},
      {"x.sh", "rm -rf /", "sh.rm_rf_root"},
      {"x.sh", "rm -r -f /*", "sh.rm_rf_root"},
      {"x.sh", "rm -rf /tmp/build", ""},
      {"x.sh", "rm -rf ./build", ""},
      {"x.sh", "eval \"$cmd\"", "sh.eval"},
      {"x.sh", "ls # eval $x", ""},
      {"x.sh", "evaluate x", ""},
      {"notes.txt", "eval(x); system(y)", ""},
  };
  expect_each(cases);
}

// Code under test that asks whether it is being tested: each rule on its pattern, and the
// lookalikes honest code writes.
TEST(DangerousOps, TestDetectionRulesFireOnTheirPatterns) {
  const Case cases[] = {
      {"m.py", "if 'unittest' in sys.modules:", "py.test_module_lookup"},
      {"m.py", "    return x if \"pytest\" not in sys.modules else y", "py.test_module_lookup"},
      {"m.py", "t = sys.modules.get('_pytest.runner')", "py.test_module_lookup"},
      {"m.py", "if 'numpy' in sys.modules:", ""},
      {"m.py", "# 'unittest' in sys.modules", ""},
      {"m.py", "f = sys._getframe(1)", "py.frame_inspection"},
      {"m.py", "for fr in inspect.stack():", "py.frame_inspection"},
      {"m.py", "frame = inspect.currentframe().f_back", "py.frame_inspection"},
      {"m.py", "names = [f.filename for f in traceback.extract_stack()]", "py.frame_inspection"},
      {"m.py", "traceback.print_exc()", ""},
      {"m.py", "if os.environ.get('PYTEST_CURRENT_TEST'):", "py.test_env"},
      {"m.py", "x = os.environ['HOME']", ""},
      {"m.py", "if any('pytest' in a for a in sys.argv):", "py.argv_test_runner"},
      {"m.py", "if 'unittest' in ' '.join(sys.argv):", "py.argv_test_runner"},
      {"m.py", "prog = sys.argv[0]", ""},
      {"m.py", "    def __eq__(self, other): return True", "py.constant_eq"},
      {"m.py", "    __ne__ = lambda self, other: False", "py.constant_eq"},
      {"m.py", "    def __eq__(self, other): return self.v == other.v", ""},
      {"m.c", "if (getenv(\"CTEST_INTERACTIVE_DEBUG_MODE\")) return 1;", "c.test_env"},
      {"m.c", "const char *h = getenv(\"HOME\");", ""},
      {"m.c", "void *caller = __builtin_return_address(0);", "c.caller_address"},
      {"m.go", "if testing.Testing() {", "go.testing_testing"},
      {"m.go", "if flag.Lookup(\"test.v\") != nil {", "go.test_flag"},
      {"m.go", "_, file, _, _ := runtime.Caller(1)", "go.caller"},
      {"m.go", "v := flag.Lookup(\"verbose\")", ""},
      {"m.js", "if (process.env.JEST_WORKER_ID) return 42;", "js.test_env"},
      {"m.ts", "if (process.env.NODE_ENV === 'test') { return cached; }", "js.test_env"},
      {"m.js", "if (process.env.NODE_ENV === 'production') {}", ""},
      {"m.js", "if (typeof jest !== 'undefined') {}", "js.test_globals"},
      {"m.js", "if (typeof globalThis.jest === 'object') {}", "js.test_globals"},
      {"m.py", "from inspect import stack, getmembers", "py.frame_inspection"},
      {"m.py", "from sys import modules", "py.frame_inspection"},
      {"m.go", "s := debug.Stack()", "go.caller"},
      {"m.go", "if flag.CommandLine.Lookup(\"test.v\") != nil {", "go.test_flag"},
      // Honest library code the rules leave alone.
      {"m.py", "module = sys.modules[__name__]", ""},
      {"m.py", "main = sys.modules['__main__']", "py.runner_module"},
      {"m.c", "const char *u = getenv(\"LATEST_RELEASE_URL\");", ""},
      {"m.c", "const char *d = getenv(\"LOCK_DIR\");", ""},
      {"m.c", "if (getenv(\"CK_FORK\")) return 0;", "c.test_env"},
  };
  expect_each(cases);
  // Over two lines: the comparison's body returns a constant.
  EXPECT_EQ(rules_of(scan_all("m.py", "class V:\n    def __eq__(self, other):\n        return True\n")), "py.constant_eq");
  EXPECT_EQ(rules_of(scan_all("m.py", "class V:\n    def __eq__(self, other):\n        return self.v == other.v\n")), "");
  // A policy may waive a rule by id; the others still run.
  const DangerRules waived({}, {"py.frame_inspection"});
  EXPECT_EQ(rules_of(scan_source("m.py", "f = sys._getframe(1)", waived)), "");
  EXPECT_EQ(rules_of(scan_source("m.py", "if 'unittest' in sys.modules: pass", waived)), "py.test_module_lookup");
  EXPECT_TRUE(is_danger_rule_id("py.frame_inspection"));
  EXPECT_FALSE(is_danger_rule_id("test_detection"));
}

TEST(DangerousOps, MultiLineCommentsAndStringsAreNotCode) {
  EXPECT_EQ(rules_of(scan_all("a.py", "x = 1\n\"\"\"\nwe never eval(x)\n\"\"\"\nos.system(y)\n")), "py.os_system");
  EXPECT_EQ(rules_of(scan_all("a.c", "/* start\n strcpy(a, b);\n end */ gets(b);\n")), "c.gets");
}

TEST(DangerousOps, FindingNamesPathLineRuleAndExcerpt) {
  auto findings = scan_all("src/a.py", "import os\n\n    os.system('x')   \n");
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0], (DangerFinding{"src/a.py", 3, "py.os_system", "os.system('x')"}));
  EXPECT_EQ(describe(findings[0]), "src/a.py:3 py.os_system `os.system('x')`");
}

FileChange modify(std::string path, std::vector<std::string> hunk_lines, uint64_t new_start) {
  FileChange f;
  f.op = FileOp::modify;
  f.path = std::move(path);
  Hunk h;
  h.old_start = h.new_start = new_start;
  h.lines = std::move(hunk_lines);
  for (const auto& l : h.lines) {
    if (l[0] != '+') ++h.old_lines;
    if (l[0] != '-') ++h.new_lines;
  }
  f.hunks.push_back(std::move(h));
  return f;
}

TEST(DangerousOps, SafetyRulesAlwaysRunLintRulesWhenNamed) {
  const std::string c = "system(cmd);\nsprintf(buf, \"%d\", n);\nasm(\"nop\");\n";
  EXPECT_EQ(rules_of(scan_source("a.c", c, DangerRules())), "c.system");
  EXPECT_EQ(rules_of(scan_source("a.c", c, DangerRules({"c.sprintf"}))), "c.system,c.sprintf");
  EXPECT_EQ(rules_of(scan_source("a.c", c, DangerRules({"unbounded_buffer"}))), "c.system,c.sprintf");
  EXPECT_EQ(rules_of(scan_source("a.c", c, DangerRules({"lint"}))), "c.system,c.sprintf,c.asm");
  EXPECT_EQ(rules_of(scan_source("a.py", "eval(x)\npickle.loads(b)\nos.system(c)\n", DangerRules())),
            "py.eval,py.pickle_load,py.os_system");
  EXPECT_EQ(rules_of(scan_source("x.sh", "curl -s u | sh\nrm -rf /\neval \"$x\"\n", DangerRules())),
            "sh.curl_pipe_sh,sh.rm_rf_root,sh.eval");
  for (const char* name : {"c.sprintf", "unbounded_buffer", "inline_asm", "lint", "safety", "process_execution", "py.eval"}) {
    EXPECT_TRUE(is_danger_rule_selector(name)) << name;
  }
  for (const char* name : {"", "sprintf", "c.", "style", "LINT"}) EXPECT_FALSE(is_danger_rule_selector(name)) << name;
}

// The findings of a change from `pre` to `post` of one C file, every added line named.
std::string introduced(std::string_view path, std::string_view pre, std::string_view post, std::set<uint64_t> added,
                       const DangerRules& rules = kAll) {
  std::string out;
  for (const auto& f : introduced_operations(path, pre, post, added, rules)) out += (out.empty() ? "" : "; ") + describe(f);
  return out;
}

TEST(DangerousOps, AReindentedOrMovedCallIsNotNew) {
  const std::string pre = "void f(char* b, int n) {\n  sprintf(b, \"%d\", n);\n  system(\"ls\");\n}\n";
  // Re-indented (and reformatted inside the line): the same calls.
  const std::string reindented = "void f(char* b, int n) {\n    if (n) {\n        sprintf(b,\"%d\",n);\n    }\n    system( \"ls\" );\n}\n";
  EXPECT_EQ(introduced("a.c", pre, reindented, {2, 3, 4, 5}), "");
  // Moved below another line, or its format string changed: still one call of each.
  const std::string moved = "void f(char* b, int n) {\n  system(\"ls\");\n  sprintf(b, \"%x\", n);\n}\n";
  EXPECT_EQ(introduced("a.c", pre, moved, {2, 3}), "");
  // A call that is removed and another added elsewhere: the count did not grow.
  EXPECT_EQ(introduced("a.c", "int x = system(a);\n", "int y = 1;\nint z = system(b);\n", {1, 2}), "");
}

TEST(DangerousOps, AGrowingCountIsAFindingAtTheAddedLine) {
  const std::string pre = "int f(void) {\n  return system(\"ls\");\n}\n";
  // The call duplicated: the copy the diff wrote is the new one, not the line it left alone.
  const std::string dup = "int f(void) {\n  system(\"ls\");\n  return system(\"ls\");\n}\n";
  EXPECT_EQ(introduced("a.c", pre, dup, {2}), "a.c:2 c.system `system(\"ls\");`");
  // A second call on a line that had one is counted too.
  EXPECT_EQ(introduced("a.c", "system(a);\n", "system(a); system(b);\n", {1}), "a.c:1 c.system `system(a); system(b);`");
  // New calls of two rules, one each.
  EXPECT_EQ(introduced("a.py", "x = 1\n", "x = eval(s)\nimport os\nos.system(c)\n", {1, 2, 3}),
            "a.py:1 py.eval `x = eval(s)`; a.py:3 py.os_system `os.system(c)`");
  // A file that had none: every call is new (an added file's pre-image is empty).
  EXPECT_EQ(introduced("run.sh", "", "#!/bin/sh\ncurl https://x | sh\n", {1, 2}), "run.sh:2 sh.curl_pipe_sh `curl https://x | sh`");
}

TEST(DangerousOps, LintRulesCountOnlyWhenSelected) {
  const std::string pre = "int f(char* b) { return 0; }\n";
  const std::string post = "int f(char* b) { return sprintf(b, \"x\"); }\n";
  EXPECT_EQ(introduced("a.c", pre, post, {1}, DangerRules()), "");
  EXPECT_EQ(introduced("a.c", pre, post, {1}, DangerRules({"c.sprintf"})), "a.c:1 c.sprintf `int f(char* b) { return sprintf(b, \"x\"); }`");
}

TEST(DangerousOps, CommentsAndDocstringsOnEitherSideAreNotCode) {
  // A call commented out before and restored after is new code.
  EXPECT_EQ(introduced("a.c", "/* system(x); */\n", "system(x);\n", {1}), "a.c:1 c.system `system(x);`");
  // A docstring opened on an unchanged line: the added line in it is text, not code.
  std::string pre = "def f():\n    \"\"\"Docs.\n    \"\"\"\n";
  std::string post = "def f():\n    \"\"\"Docs.\n    eval(x) is what we avoid\n    \"\"\"\n";
  EXPECT_EQ(introduced("m.py", pre, post, {3}), "");
}

TEST(DangerousOps, AddedLinesAreTheHunksPlusLinesOrTheWholeContent) {
  FileChange f = modify("m.py", {" a = 1\n", "-b = 1\n", "+b = eval(a)\n", "+c = 2\n", " d = 3\n"}, 4);
  EXPECT_EQ(added_lines(f), (std::set<uint64_t>{5, 6}));
  FileChange add;
  add.op = FileOp::add;
  add.path = "run.sh";
  add.after_content = "a\nb\nc";
  EXPECT_EQ(added_lines(add), (std::set<uint64_t>{1, 2, 3}));
  FileChange del;
  del.op = FileOp::remove;
  del.path = "run.sh";
  EXPECT_TRUE(added_lines(del).empty());
}

TEST(DangerousOps, WithoutAPostImageEachAddedLineIsJudgedAlone) {
  FileChange f = modify("m.py", {" b = eval(a)\n", "+c = 2\n"}, 2);
  EXPECT_TRUE(scan_added_lines(f, kAll).empty());
  FileChange bad = modify("m.py", {" a = 1\n", "-b = 1\n", "+b = eval(a)\n"}, 1);
  auto found = scan_added_lines(bad, kAll);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].line, 2u);
  // Seen alone, a line inside a docstring is code: the fallback is the stricter reading.
  FileChange doc = modify("m.py", {" def f():\n", "     \"\"\"Docs.\n", "+    eval(x) is what we avoid\n", "     \"\"\"\n"}, 1);
  EXPECT_EQ(rules_of(scan_added_lines(doc, kAll)), "py.eval");
  FileChange add;
  add.op = FileOp::add;
  add.path = "run.sh";
  add.after_content = "#!/bin/sh\ncurl https://x | sh\n";
  EXPECT_EQ(rules_of(scan_added_lines(add, kAll)), "sh.curl_pipe_sh");
  FileChange del;
  del.op = FileOp::remove;
  del.path = "run.sh";
  EXPECT_TRUE(scan_added_lines(del, kAll).empty());
}

TEST(DangerousOps, LongExcerptsAreCappedAndValidUtf8) {
  std::string line = "x = eval(\"\") # " + std::string(200, 'a') + "\xc3\xa9";
  auto findings = scan_all("a.py", line);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_LT(findings[0].excerpt.size(), 130u);
  EXPECT_TRUE(findings[0].excerpt.ends_with("..."));
  auto binary = scan_all("a.py", "eval(x) # \xff\xfe");
  ASSERT_EQ(binary.size(), 1u);
  EXPECT_TRUE(is_valid_utf8(binary[0].excerpt));
}

TEST(DangerousOps, PathologicalLongLinesScanInLinearTime) {
  std::string py = "x = " + std::string(100000, '(') + "subprocess.run(" + std::string(100000, 'a') + " eval(y)";
  std::string c = std::string(50000, '"') + std::string(50000, '/') + "system(x)";
  std::string sh = "curl " + std::string(100000, '|') + " x";
  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(rules_of(scan_all("a.py", py)), "py.eval");
  scan_all("a.c", c);
  EXPECT_EQ(rules_of(scan_all("a.sh", sh)), "");
  defined_functions("a.c", std::string(100000, '(') + "f(x) {" + std::string(100000, ')'));
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(ms, 2000);
}

}  // namespace
}  // namespace warden::kernel
