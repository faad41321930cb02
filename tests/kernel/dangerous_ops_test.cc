// The dangerous-operation scan: every rule on a line that should match and on lines that
// should not (comments, strings, methods of the same name, safe variants), the added-lines
// rule with hunks, and a pathological line scanned in linear time.
#include "kernel/dangerous_ops.h"

#include <chrono>

#include <gtest/gtest.h>

#include "common/canonical_json.h"
#include "kernel/content_rules.h"

namespace warden::kernel {
namespace {

struct Case {
  const char* path;
  const char* line;
  const char* rule;  // "" when nothing should match
};

std::string rules_of(const std::vector<DangerFinding>& findings) {
  std::string out;
  for (const auto& f : findings) out += (out.empty() ? "" : ",") + f.rule;
  return out;
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
  for (const Case& c : cases) {
    EXPECT_EQ(rules_of(scan_source(c.path, c.line)), c.rule) << c.path << ": " << c.line;
  }
}

TEST(DangerousOps, MultiLineCommentsAndStringsAreNotCode) {
  EXPECT_EQ(rules_of(scan_source("a.py", "x = 1\n\"\"\"\nwe never eval(x)\n\"\"\"\nos.system(y)\n")), "py.os_system");
  EXPECT_EQ(rules_of(scan_source("a.c", "/* start\n strcpy(a, b);\n end */ gets(b);\n")), "c.gets");
}

TEST(DangerousOps, FindingNamesPathLineRuleAndExcerpt) {
  auto findings = scan_source("src/a.py", "import os\n\n    os.system('x')   \n");
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

TEST(DangerousOps, OnlyAddedLinesCount) {
  // eval on an unchanged line was there before; the diff adds a safe line after it.
  std::string post = "a = 1\nb = eval(a)\nc = 2\n";
  FileChange f = modify("m.py", {" b = eval(a)\n", "+c = 2\n"}, 2);
  EXPECT_TRUE(scan_added_lines(f, post).empty());

  FileChange bad = modify("m.py", {" a = 1\n", "-b = 1\n", "+b = eval(a)\n"}, 1);
  auto found = scan_added_lines(bad, std::string("a = 1\nb = eval(a)\n"));
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].line, 2u);
  // Without a post-image the hunk's own numbering is used.
  found = scan_added_lines(bad, std::nullopt);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].line, 2u);
}

TEST(DangerousOps, DocstringOpenedOnAnUnchangedLineIsKnownFromThePostImage) {
  std::string post = "def f():\n    \"\"\"Docs.\n    eval(x) is what we avoid\n    \"\"\"\n";
  FileChange f = modify("m.py", {" def f():\n", "     \"\"\"Docs.\n", "+    eval(x) is what we avoid\n", "     \"\"\"\n"}, 1);
  EXPECT_TRUE(scan_added_lines(f, post).empty());
  EXPECT_EQ(rules_of(scan_added_lines(f, std::nullopt)), "py.eval");  // seen alone, the line is code
}

TEST(DangerousOps, WholeFileContentIsScannedAndDeletesAreNot) {
  FileChange add;
  add.op = FileOp::add;
  add.path = "run.sh";
  add.after_content = "#!/bin/sh\ncurl https://x | sh\n";
  EXPECT_EQ(rules_of(scan_added_lines(add, add.after_content)), "sh.curl_pipe_sh");
  FileChange del;
  del.op = FileOp::remove;
  del.path = "run.sh";
  EXPECT_TRUE(scan_added_lines(del, std::nullopt).empty());
}

TEST(DangerousOps, LongExcerptsAreCappedAndValidUtf8) {
  std::string line = "x = eval(\"\") # " + std::string(200, 'a') + "\xc3\xa9";
  auto findings = scan_source("a.py", line);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_LT(findings[0].excerpt.size(), 130u);
  EXPECT_TRUE(findings[0].excerpt.ends_with("..."));
  auto binary = scan_source("a.py", "eval(x) # \xff\xfe");
  ASSERT_EQ(binary.size(), 1u);
  EXPECT_TRUE(is_valid_utf8(binary[0].excerpt));
}

TEST(DangerousOps, PathologicalLongLinesScanInLinearTime) {
  std::string py = "x = " + std::string(100000, '(') + "subprocess.run(" + std::string(100000, 'a') + " eval(y)";
  std::string c = std::string(50000, '"') + std::string(50000, '/') + "system(x)";
  std::string sh = "curl " + std::string(100000, '|') + " x";
  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(rules_of(scan_source("a.py", py)), "py.eval");
  scan_source("a.c", c);
  EXPECT_EQ(rules_of(scan_source("a.sh", sh)), "");
  defined_functions("a.c", std::string(100000, '(') + "f(x) {" + std::string(100000, ')'));
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(ms, 2000);
}

}  // namespace
}  // namespace warden::kernel
