// The kernel's own scan for dangerous operations (policy "dangerous_operations"): what a
// change introduces, judged by comparing each file's occurrences before and after it. Patterns
// are per language, chosen by the file's extension (source_text.h), and run as one RE2::Set
// per language: one linear-time pass per line, whatever the line. Comments and string contents
// are removed first (Python, C family), so `# never eval(x)` or "os.system(" in a message do
// not count.
//
// Rules (id: what it matches on one line of code), by class and category:
//   safety — what the change makes a machine do; every scan runs them:
//     process_execution  py.os_system, py.os_popen, py.subprocess_shell (subprocess.<f>(...
//                        shell=True on the same line), c.system, c.popen, c.exec (execl execlp
//                        execle execv execvp execve execvpe)
//     code_execution     py.eval, py.exec, py.compile, py.dunder_import (eval( exec( compile(
//                        __import__( not called as a method), sh.eval
//     deserialization    py.pickle_load (pickle/cPickle load(s)), py.marshal_load, py.yaml_load
//                        (yaml.load( without SafeLoader on the line)
//     network            sh.curl_pipe_sh (curl|wget ... | sh/bash: fetch and run)
//     filesystem         sh.rm_rf_root (rm with flags on / or /*)
//     test_detection     code that asks whether it is being tested: py.test_module_lookup
//                        ("unittest"/"pytest"/"doctest" looked up in sys.modules),
//                        py.frame_inspection (sys._getframe, inspect.stack/currentframe/
//                        getouterframes, traceback.extract_stack/walk_stack, .f_back),
//                        py.test_env (PYTEST_CURRENT_TEST and the like), py.argv_test_runner
//                        (sys.argv beside a test runner's name), py.constant_eq (__eq__ or
//                        __ne__ that returns a constant, on its line or the next), c.test_env
//                        (getenv of a test runner's variable), c.caller_address
//                        (__builtin_return_address, backtrace, dladdr), go.testing_testing,
//                        go.test_flag (flag.Lookup("test.…"), os.Args with ".test"), go.caller
//                        (runtime.Caller/Callers/Stack), js.test_env (JEST_WORKER_ID, VITEST,
//                        NODE_ENV === 'test'), js.test_globals (typeof jest/describe/it ...).
//                        Rules marked raw match the line as written, strings included (the
//                        name looked up is a string), when the line holds code
//     test_tampering     py.patch_test_framework (assigning to an attribute of unittest,
//                        TestCase, TestResult, pytest), py.setattr_test_framework, py.os_exit,
//                        py.runner_module (sys.modules[...], import __main__: the runner),
//                        py.replace_std_stream (sys.stdout = ...), c.constructor
//                        (__attribute__((constructor/destructor)), [[gnu::constructor]]),
//                        c.exit_process (exit, _exit, _Exit, quick_exit): the code under test
//                        runs in the tests' process and can end it with a report of its own;
//                        decide() does not hold test files themselves to these
//   lint — how the code is written; run only when a policy names them:
//     unbounded_buffer   c.gets, c.strcpy, c.strcat, c.sprintf, c.vsprintf
//     inline_asm         c.asm (asm/__asm__ blocks)
// In C, calls through '.' or '->' are methods of the same name and do not count.
//
// "Introduced" means: for each file and rule, the post-image has more occurrences than the
// pre-image (the file's base content; a renamed file's is its source's, an added or copied
// file has none). A call that was already there — moved, re-indented, reformatted, or in a
// renamed file — is matched to itself and is not new; a call moved to another file is new
// there. Both images are scanned whole, so a line inside a block comment or docstring opened
// on an unchanged line is known as such.
//
// Not handled: calls split over several lines (shell=True on the next line), aliases
// (`from os import system` then `system(`), getattr tricks, and the lexer gaps of source_text.h.
//
// Everything here is a pure function of its arguments; the rule tables are immutable and
// compiled once, and the functions are safe to call from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "diff/diff.h"

namespace warden::kernel {

struct DangerFinding {
  std::string path;
  uint64_t line = 0;    // 1-based, in the post-image (counted from the hunk's new_start without one)
  std::string rule;     // "py.eval", "c.system", ...
  std::string excerpt;  // the line as written, trimmed and capped, valid UTF-8
  bool operator==(const DangerFinding&) const = default;
};

// Which rules a scan runs: every safety rule, and the lint rules a policy selects by name.
// A plain value.
class DangerRules {
 public:
  DangerRules();  // the safety rules alone
  // The safety rules and those `selectors` name: a rule id ("c.sprintf"), a category
  // ("unbounded_buffer") or a class ("lint", "safety"). A selector that names nothing selects
  // nothing; policies refuse one when they are parsed (is_danger_rule_selector).
  // `waived`: rule ids a policy turns off (is_danger_rule_id), whatever the selectors say.
  explicit DangerRules(const std::vector<std::string>& selectors, const std::vector<std::string>& waived = {});
  bool runs(std::string_view rule) const { return ids_.contains(rule); }

 private:
  std::set<std::string, std::less<>> ids_;
};

// Whether `name` is a rule id of the tables above.
bool is_danger_rule_id(std::string_view name);

// Whether `name` is a rule id, a category or a class of the tables above.
bool is_danger_rule_selector(std::string_view name);

// What the change to one file introduces (see above): for each rule whose count grows, the
// post-image's occurrences that match none of the pre-image's (the same code, whitespace
// aside), those on `added_lines` first, as many as the count grew by, in line order.
// `added_lines` are the post-image's line numbers the diff writes (added_lines()).
std::vector<DangerFinding> introduced_operations(std::string_view path, std::string_view pre_image, std::string_view post_image,
                                                 const std::set<uint64_t>& added_lines, const DangerRules& rules);

// The post-image line numbers `file` writes: every line for whole content, else the hunks'
// '+' lines numbered from each hunk's new_start. Empty for a removal.
std::set<uint64_t> added_lines(const FileChange& file);

// Without a post-image (the diff does not apply to its base): the lines `file` adds, each
// seen alone — every line of after_content, or the hunks' '+' lines.
std::vector<DangerFinding> scan_added_lines(const FileChange& file, const DangerRules& rules);

// Every occurrence in `text`, as the language of `path`, one finding per line and rule.
std::vector<DangerFinding> scan_source(std::string_view path, std::string_view text, const DangerRules& rules);

// The rule's category ("test_tampering", ...); empty for an unknown rule.
std::string_view danger_rule_category(std::string_view rule);

// "src/a.py:3 py.eval `x = eval(s)`".
std::string describe(const DangerFinding& finding);

}  // namespace warden::kernel
