#include "kernel/judge/test_file_change.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "kernel/judge/source_text.h"
#include "kernel/judge/test_structure.h"

namespace warden::kernel {
namespace {

using Kind = SourceUnit::Kind;

constexpr size_t kMaxComparedUnits = 10'000;

// Names a test runner gives a meaning to, where they are bound.
bool special_module_name(StructureLanguage lang, std::string_view name) {
  static const std::set<std::string_view> kPython = {
      "setUpModule", "tearDownModule", "load_tests", "setup_module", "teardown_module", "setup_function",
      "teardown_function", "setup", "teardown", "pytestmark", "pytest_plugins", "__test__", "__getattr__", "__builtins__"};
  switch (lang) {
    case StructureLanguage::python: return kPython.contains(name) || name.starts_with("pytest_");
    case StructureLanguage::go: return name == "TestMain" || name == "init";
    case StructureLanguage::c_family: return name == "main" || name == "setUp" || name == "tearDown" || name == "suiteSetUp" ||
                                             name == "suiteTearDown" || name == "SetUp" || name == "TearDown";
    case StructureLanguage::javascript: {
      // The runner's globals and the module system's: a binding of one shadows it for the file.
      static const std::set<std::string_view> kJs = {
          "describe", "it", "test", "expect", "beforeEach", "afterEach", "beforeAll", "afterAll", "before", "after",
          "jest", "vi", "require", "module", "exports", "global", "globalThis", "process", "suite", "context", "specify"};
      return kJs.contains(name);
    }
  }
  return false;
}

bool special_member_name(std::string_view name) {
  // unittest.TestCase's and IsolatedAsyncioTestCase's own attributes (Python 3.11) and
  // pytest's class hooks: a member of that name in a test class replaces the framework's.
  static const std::set<std::string_view> kNames = {
      "setUp", "tearDown", "setUpClass", "tearDownClass", "asyncSetUp", "asyncTearDown", "setup_method", "teardown_method",
      "setup_class", "teardown_class", "setup", "teardown", "run", "debug", "maxDiff", "longMessage", "failureException",
      "pytestmark", "addCleanup", "addClassCleanup", "addAsyncCleanup", "doCleanups", "doClassCleanups", "subTest", "id",
      "shortDescription", "countTestCases", "defaultTestResult", "skipTest", "enterContext", "enterClassContext",
      "enterAsyncContext", "addTypeEqualityFunc", "_addExpectedFailure", "_addUnexpectedSuccess", "_baseAssertEqual",
      "_deprecate", "_diffThreshold", "_formatMessage", "_getAssertEqualityFunc", "_truncateMessage", "_classSetupFailed",
      "_class_cleanups", "_setupAsyncioRunner", "_tearDownAsyncioRunner", "_callAsync", "_callMaybeAsync"};
  return kNames.contains(name) || name.starts_with("assert") || name.starts_with("fail") || name.starts_with("_call") ||
         name.starts_with("_test") || name.starts_with("_outcome") || name.starts_with("_cleanup") ||
         (name.size() > 4 && name.starts_with("__") && name.ends_with("__"));
}

bool test_name(StructureLanguage lang, std::string_view name) {
  switch (lang) {
    case StructureLanguage::python: return name.starts_with("test") || name.starts_with("Test");
    case StructureLanguage::go:
      return name.starts_with("Test") || name.starts_with("Benchmark") || name.starts_with("Example") || name.starts_with("Fuzz");
    case StructureLanguage::c_family: return name.find('(') != std::string_view::npos || name.starts_with("test");
    case StructureLanguage::javascript: return false;  // a test is a call, known by its key (is_test_unit)
  }
  return false;
}

// Macros and functions that register a test function with its framework.
bool registration_call(std::string_view name) {
  static const std::set<std::string_view> kNames = {
      "RUN_TEST", "RUN_TEST_CASE", "RUN_TEST_GROUP", "cmocka_unit_test", "cmocka_unit_test_setup_teardown",
      "cmocka_unit_test_prestate", "tcase_add_test", "g_test_add_func", "g_test_add_data_func", "CU_add_test", "CU_ADD_TEST",
      "ADD_TEST", "TEST_ADD", "UnityDefaultTestRun", "suite_add_test", "greatest_run_test", "RUN_TESTp", "RUN_TEST1",
      "MU_RUN_TEST", "mu_run_test", "TCase_add"};
  return kNames.contains(name);
}

// The non-empty lines of normalized text.
std::vector<std::string> lines_of(std::string_view text) {
  std::vector<std::string> out;
  for (std::string_view line : split_lines(text)) {
    if (!line.empty()) out.emplace_back(line);
  }
  return out;
}

// The callee of a line that is one call statement, `NAME ( ... ) ;`; else empty.
std::string_view call_name(std::string_view line) {
  size_t sp = line.find(' ');
  if (sp == std::string_view::npos || !line.substr(sp).starts_with(" (") || !line.ends_with(") ;")) return {};
  return line.substr(0, sp);
}

// A C function that registers tests, changed only by registration lines of the macros it
// already uses, each naming a function the proposal adds.
bool only_registers(const SourceUnit& before, const SourceUnit& after, const std::set<std::string>& added_functions) {
  const std::vector<std::string> old_lines = lines_of(before.text), new_lines = lines_of(after.text);
  std::set<std::string_view> macros;
  for (const std::string& l : old_lines) {
    std::string_view callee = call_name(l);
    if (!callee.empty() && registration_call(callee)) macros.insert(callee);
  }
  if (macros.empty()) return false;
  size_t k = 0;
  for (const std::string& l : new_lines) {
    if (k < old_lines.size() && l == old_lines[k]) {
      ++k;
      continue;
    }
    std::string_view callee = call_name(l);
    if (callee.empty() || !macros.contains(callee)) return false;
    // `MACRO ( new_test ) ;` or `MACRO ( new_test , literal ... ) ;`: the first argument names a
    // function the proposal adds, and nothing else on the line runs.
    std::string_view args = std::string_view(l).substr(callee.size() + 3);  // past " ( "
    args.remove_suffix(4);                                                     // " ) ;"
    const std::string_view first = args.substr(0, args.find(' '));
    if (!added_functions.contains(std::string(first))) return false;
    if (args.find_first_of("()=") != std::string_view::npos) return false;
  }
  return k == old_lines.size();
}

class Comparer {
 public:
  Comparer(StructureLanguage lang, std::vector<TestFileFinding>& findings, std::vector<std::string>& added_tests)
      : lang_(lang), findings_(findings), added_tests_(added_tests) {}

  void compare_file(const std::vector<SourceUnit>& before, const std::vector<SourceUnit>& after) {
    collect_reads(before, base_reads_);
    for (const SourceUnit& u : before) {
      if (u.kind == Kind::klass) {
        ClassInfo& info = classes_[u.name];
        for (const SourceUnit& m : u.members) info.members.insert(m.binds.begin(), m.binds.end());
        for (const std::string& r : u.reads) {
          if (r != u.name && !r.starts_with(".")) info.bases.insert(r);
        }
      }
      if (u.kind == Kind::import && u.import_module.empty() && u.text.find(" as ") == std::string::npos) {
        base_import_roots_.insert(u.binds.begin(), u.binds.end());
      }
    }
    collect_reads(after, after_reads_);
    for (const SourceUnit& u : after) {
      if (u.kind == Kind::function) after_functions_.insert(u.name);
    }
    for (const SourceUnit& u : before) {
      if (u.kind == Kind::function) before_functions_.insert(u.name);
    }
    if (lang_ == StructureLanguage::c_family) {
      note_registrations(before);
      note_registrations(after);  // the tests the proposal registers are tests too
    }
    compare_scope(before, after, "", true);
  }

 private:
  static void collect_reads(const std::vector<SourceUnit>& units, std::set<std::string>& reads) {
    for (const SourceUnit& u : units) {
      reads.insert(u.reads.begin(), u.reads.end());
      collect_reads(u.members, reads);
    }
  }

  void add(std::string unit, bool is_test, std::string what) { findings_.push_back({std::move(unit), is_test, false, std::move(what)}); }
  void add(std::string unit, bool is_test, bool is_new, std::string what) {
    findings_.push_back({std::move(unit), is_test, is_new, std::move(what)});
  }

  std::string label(const SourceUnit& u, const std::string& prefix) const {
    if (!u.name.empty()) return prefix + u.name;
    std::string first = u.text.substr(0, u.text.find('\n'));
    if (first.size() > 60) first = first.substr(0, 57) + "...";
    return prefix.empty() ? "`" + first + "`" : prefix + "`" + first + "`";
  }

  bool is_test_unit(const SourceUnit& u, bool module_level) const {
    if (u.kind != Kind::function && u.kind != Kind::klass) return false;
    if (lang_ == StructureLanguage::c_family) return test_name(lang_, u.name) || registered_.contains(u.name);
    if (lang_ == StructureLanguage::javascript) return u.key.starts_with("test ") || u.key.starts_with("suite ");
    return test_name(lang_, u.name) || (!module_level && u.kind == Kind::function && u.name.starts_with("test"));
  }

  void compare_scope(const std::vector<SourceUnit>& before, const std::vector<SourceUnit>& after, const std::string& prefix,
                     bool module_level) {
    std::set<std::string> scope_binds;
    for (const SourceUnit& u : before) scope_binds.insert(u.binds.begin(), u.binds.end());

    // Each base unit to the first unmatched unit of the proposal with its key.
    std::vector<bool> matched(after.size(), false);
    std::vector<std::optional<size_t>> placed(before.size());  // where each base unit went
    for (size_t bi = 0; bi < before.size(); ++bi) {
      const SourceUnit& b = before[bi];
      if (b.kind == Kind::docstring) continue;
      size_t found = after.size();
      for (size_t k = 0; k < after.size(); ++k) {
        if (!matched[k] && after[k].key == b.key) {
          found = k;
          break;
        }
      }
      if (found == after.size()) {
        if (!unused(b, module_level)) add(label(b, prefix), is_test_unit(b, module_level), "removed");
        if (b.kind == Kind::klass) compare_scope(b.members, {}, member_prefix(prefix + b.name), false);  // its tests went with it
        continue;
      }
      matched[found] = true;
      placed[bi] = found;
      compare_unit(b, after[found], prefix, module_level, scope_binds);
    }
    for (size_t k = 0; k < after.size(); ++k) {
      if (!matched[k]) judge_new(after[k], prefix, module_level, scope_binds);
    }
    judge_order(before, placed, prefix, module_level);
  }

  // A base unit nothing reads any more (an unused import, a helper no test calls): its
  // removal changes no test. Tests, statements and names the runner gives a meaning to are
  // never unused.
  bool unused(const SourceUnit& u, bool module_level) const {
    if (is_test_unit(u, module_level) || u.binds.empty()) return false;
    // A JavaScript import or require runs its module, which may install what the tests rely on.
    if (lang_ == StructureLanguage::javascript && (u.kind == Kind::import || u.text.find(" (") != std::string::npos)) return false;
    if (u.text.starts_with("@")) return false;  // a decorator may register it (a fixture, a hook)
    if (u.kind != Kind::import && u.kind != Kind::binding && u.kind != Kind::function) return false;
    for (const std::string& b : u.binds) {
      if (b == "*" || after_reads_.contains(b) || after_reads_.contains("." + b)) return false;
      if (module_level ? special_module_name(lang_, b) : special_member_name(b)) return false;
    }
    return true;
  }

  // A statement of the base (an import, a call, an assignment into something) runs in its place
  // among the others: `sys.path.insert` before an import decides what the import finds. The
  // units around each one must stay on their sides of it; definitions among themselves may move.
  void judge_order(const std::vector<SourceUnit>& before, const std::vector<std::optional<size_t>>& placed,
                   const std::string& prefix, bool module_level) {
    for (size_t s = 0; s < before.size(); ++s) {
      const Kind k = before[s].kind;
      if (!placed[s] || (k != Kind::statement && k != Kind::mutation && k != Kind::import)) continue;
      for (size_t o = 0; o < before.size(); ++o) {
        if (o == s || !placed[o]) continue;
        const Kind ko = before[o].kind;
        if (k == Kind::import && ko == Kind::import) continue;  // imports among themselves may be sorted
        if ((o < s) != (*placed[o] < *placed[s])) {
          add(label(before[s], prefix), is_test_unit(before[s], module_level), "moved past " + label(before[o], prefix));
          break;
        }
      }
    }
  }

  void note_registrations(const std::vector<SourceUnit>& units) {
    for (const SourceUnit& u : units) {
      for (const std::string& l : lines_of(u.text)) {
        std::string_view callee = call_name(l);
        if (callee.empty() || !registration_call(callee)) continue;
        std::string ident;
        for (char c : l.substr(callee.size()) + " ") {
          if (std::isalnum(static_cast<unsigned char>(c)) || c == '_') {
            ident += c;
          } else {
            if (!ident.empty()) registered_.insert(ident);
            ident.clear();
          }
        }
      }
    }
  }

  void compare_unit(const SourceUnit& b, const SourceUnit& a, const std::string& prefix, bool module_level,
                    const std::set<std::string>& scope_binds) {
    const std::string name = label(b, prefix);
    if (b.kind == Kind::klass && a.kind == Kind::klass) {
      if (b.text != a.text) {
        add(name, is_test_unit(b, module_level),
            lang_ == StructureLanguage::javascript ? "changed (its call, outside its callback's statements)" : "changed (its decorators or bases)");
      }
      compare_scope(b.members, a.members, member_prefix(prefix + b.name), false);
      return;
    }
    if (b.text == a.text) return;
    if (b.kind == Kind::import && a.kind == Kind::import && !b.import_module.empty() && b.import_module == a.import_module &&
        std::all_of(b.binds.begin(), b.binds.end(), [&](const std::string& n) {
          return std::find(a.binds.begin(), a.binds.end(), n) != a.binds.end() || (!after_reads_.contains(n) && n != "*");
        })) {
      // A from-import that gained names (each new name is a new binding) or lost names nothing
      // reads any more.
      std::set<std::string> old_binds(b.binds.begin(), b.binds.end());
      for (const std::string& n : a.binds) {
        if (!old_binds.contains(n)) judge_binding(n, "`from " + a.import_module + " import " + n + "`", prefix, module_level, scope_binds);
      }
      return;
    }
    if (lang_ == StructureLanguage::c_family && b.kind == Kind::function && a.kind == Kind::function) {
      std::set<std::string> added;
      for (const std::string& f : after_functions_) {
        if (!before_functions_.contains(f)) added.insert(f);
      }
      if (only_registers(b, a, added)) return;
    }
    add(name, is_test_unit(b, module_level), "changed");
  }

  void judge_binding(const std::string& bound, const std::string& unit, const std::string& prefix, bool module_level,
                     const std::set<std::string>& scope_binds) {
    if (scope_binds.contains("*") && bound != "*") {
      add(unit, false, true, "binds " + prefix + bound + " where the base imports * (it may replace what the base's tests use)");
    } else if (!module_level && inherited(prefix, bound)) {
      add(unit, false, true, "binds " + prefix + bound + ", which the class inherits from a class of the base file (it overrides it)");
    } else if (bound == "*") {
      add(unit, false, true, "is a wildcard import, which may rebind any name the base's tests read");
    } else if (lang_ == StructureLanguage::python && unit.starts_with("`import ") && unit.find(" as ") == std::string::npos &&
               base_import_roots_.contains(bound)) {
      // `import pkg.extra` beside the base's `import pkg`: the same package, one more submodule.
    } else if (scope_binds.contains(bound)) {
      add(unit, false, true, "binds " + prefix + bound + " again, which the base already binds");
    } else if (base_reads_.contains(bound) || (!module_level && base_reads_.contains("." + bound))) {
      add(unit, false, true, "binds " + prefix + bound + ", a name the base's tests read");
    } else if (module_level ? special_module_name(lang_, bound) : special_member_name(bound)) {
      add(unit, false, true, "defines " + prefix + bound + ", which the test runner calls or reads for the base's tests");
    }
  }

  void judge_new(const SourceUnit& u, const std::string& prefix, bool module_level, const std::set<std::string>& scope_binds) {
    const std::string name = label(u, prefix);
    const size_t before = findings_.size();
    const bool if_main = lang_ == StructureLanguage::python && module_level && main_guard(u.text);
    if (!if_main) {
      for (const std::string& bound : u.binds) judge_binding(bound, name, prefix, module_level, scope_binds);
    }
    judge_new_code(u, name);
    switch (u.kind) {
      case Kind::docstring:
        break;
      case Kind::mutation:
        add(name, false, true, "is new and assigns into or removes something that exists");
        break;
      case Kind::statement:
        if (is_hook(u)) {
          add(name, false, true, "is a new hook, which runs around the base's tests");
        } else if (!if_main) {
          add(name, false, true, "is a new statement that runs when the file is loaded");
        }
        break;
      case Kind::klass:
        // A new class's body runs when the file is loaded: its statements are judged too.
        // A JavaScript suite's hooks run around its own tests only.
        for (const SourceUnit& m : u.members) {
          if ((m.kind == Kind::statement || m.kind == Kind::mutation) && !is_hook(m)) {
            add(label(m, member_prefix(prefix + u.name)), false, true, "is a statement in a new class, run when the file is loaded");
          }
          judge_new_code(m, label(m, member_prefix(prefix + u.name)));
        }
        break;
      case Kind::import:
      case Kind::function:
      case Kind::binding:
        break;
    }
    if (findings_.size() == before && is_test_unit(u, module_level)) added_tests_.push_back(prefix + u.name);
    if (u.kind == Kind::klass && findings_.size() == before) {
      for (const SourceUnit& m : u.members) {
        if (m.kind == Kind::function && (test_name(lang_, m.name) || is_test_unit(m, false))) added_tests_.push_back(member_prefix(prefix + u.name) + m.name);
      }
    }
  }

  // `if __name__ == "__main__":` exactly, with no elif or else: its body runs only when the file
  // is run as a program, never when a test runner imports it. Any other condition
  // (`... or True`, the module's own name) or clause runs at import.
  static bool main_guard(const std::string& text) {
    const std::vector<std::string> lines = lines_of(text);
    if (lines.empty() || (lines[0] != "if __name__ == \"__main__\" :" && lines[0] != "if __name__ == '__main__' :")) return false;
    return std::all_of(lines.begin() + 1, lines.end(), [](const std::string& l) { return l.starts_with("\t"); });
  }

  // What a new unit's code does when the file is loaded, whatever its kind.
  void judge_new_code(const SourceUnit& u, const std::string& name) {
    if (lang_ == StructureLanguage::python) {
      if (u.text.find("autouse") != std::string::npos ||
          (u.text.find("fixture") != std::string::npos && u.text.find("**") != std::string::npos)) {
        add(name, false, true, "is or makes an autouse fixture, which runs around the base's tests");
      }
      if (u.kind != Kind::function && u.kind != Kind::klass) {
        for (std::string_view risky : {"setattr (", "delattr (", "globals (", "__dict__", ":="}) {
          if (u.text.find(risky) != std::string::npos) {
            add(name, false, true, "runs `" + std::string(risky) + "` when the file is loaded");
            break;
          }
        }
        if (u.text.find(" ; ") != std::string::npos) add(name, false, true, "holds several statements on one line");
      }
    }
    if (lang_ == StructureLanguage::javascript && runs_alone(u)) {
      add(name, false, true, "runs alone (.only, fit, fdescribe): the runner would skip the base's tests");
    }
    if (lang_ == StructureLanguage::c_family) {
      // A directive in or beside new code can redefine what the base's tests expand, or compile
      // them out: only #include <...> and conditionals that open and close inside the new unit.
      int depth = 0;
      bool balanced = true;
      for (const std::string& line : lines_of(u.text)) {
        if (!line.starts_with("#") || line.starts_with("#include <")) continue;
        std::string_view word = std::string_view(line).substr(1);
        while (word.starts_with(" ")) word.remove_prefix(1);
        if (word.starts_with("if")) {
          ++depth;
        } else if (word.starts_with("endif")) {
          balanced = balanced && --depth >= 0;
        } else if (!word.starts_with("else") && !word.starts_with("elif")) {
          add(name, false, true, "holds a preprocessor directive (`" + line.substr(0, 40) +
                                     "`), which can redefine what the base's tests use");
          return;
        }
      }
      if (!balanced || depth != 0) add(name, false, true, "opens or closes a preprocessor conditional around other code");
    }
  }

  // How a member of class or suite `name` is named: "OpsTest.test_add", "ops > adds".
  std::string member_prefix(const std::string& name) const { return name + (lang_ == StructureLanguage::javascript ? " > " : "."); }

  bool is_hook(const SourceUnit& u) const { return lang_ == StructureLanguage::javascript && u.key.starts_with("hook "); }

  // New JavaScript code that makes the runner run only some tests: `.only` anywhere (a test, a
  // suite, a value bound to one), `fit`, `fdescribe`, or a member of a suite that does.
  static bool runs_alone(const SourceUnit& u) {
    const std::string& t = u.text;
    auto word = [&](std::string_view w) {
      for (size_t at = t.find(w); at != std::string::npos; at = t.find(w, at + 1)) {
        if (at == 0 || t[at - 1] == ' ' || t[at - 1] == '\n') return true;
      }
      return false;
    };
    if (t.find(". only (") != std::string::npos || t.find(". only .") != std::string::npos || word("fit (") || word("fdescribe (")) {
      return true;
    }
    return std::any_of(u.members.begin(), u.members.end(), runs_alone);
  }

  StructureLanguage lang_;
  std::vector<TestFileFinding>& findings_;
  std::vector<std::string>& added_tests_;
  std::set<std::string> base_reads_, after_reads_;
  // The base file's classes: their members and the names in their headers (their bases).
  struct ClassInfo {
    std::set<std::string> members, bases;
  };
  std::map<std::string, ClassInfo> classes_;

  // Whether the class `prefix` names ("TestOps.") inherits `name` from a class of the base file.
  bool inherited(const std::string& prefix, const std::string& name) const {
    std::set<std::string> seen;
    std::vector<std::string> todo;
    if (auto it = classes_.find(prefix.substr(0, prefix.size() - 1)); it != classes_.end()) {
      todo.assign(it->second.bases.begin(), it->second.bases.end());
    }
    while (!todo.empty()) {
      std::string c = todo.back();
      todo.pop_back();
      if (!seen.insert(c).second) continue;
      auto it = classes_.find(c);
      if (it == classes_.end()) continue;
      if (it->second.members.contains(name)) return true;
      todo.insert(todo.end(), it->second.bases.begin(), it->second.bases.end());
    }
    return false;
  }
  std::set<std::string> base_import_roots_;  // what the base's plain `import a.b` lines bind
  std::set<std::string> registered_;
  std::set<std::string> before_functions_, after_functions_;
};

}  // namespace

std::string TestFileFinding::describe() const {
  if (is_new) return "new " + unit + " " + what;
  if (is_test) return "test " + unit + " " + what;
  return unit + " (the base's tests use it) " + what;
}

bool has_structure_reader(std::string_view path) { return structure_language(path).has_value(); }

TestFileComparison compare_test_file(std::string_view path, std::string_view before, std::string_view after) {
  TestFileComparison out;
  std::optional<StructureLanguage> lang = structure_language(path);
  if (!lang) {
    out.unreadable = "the kernel has no reader for this kind of file";
    return out;
  }
  auto old_units = read_structure(*lang, before);
  if (!old_units) {
    out.unreadable = "its base version cannot be read (" + old_units.error().message + ")";
    return out;
  }
  auto new_units = read_structure(*lang, after);
  if (!new_units) {
    out.unreadable = "the proposed version cannot be read (" + new_units.error().message + ")";
    return out;
  }
  // Comparing costs the product of the two versions' sizes: a file far past any real test file
  // is judged whole instead.
  if (old_units->size() > kMaxComparedUnits || new_units->size() > kMaxComparedUnits) {
    out.unreadable = "more than " + std::to_string(kMaxComparedUnits) + " top-level units";
    return out;
  }
  Comparer(*lang, out.findings, out.added_tests).compare_file(*old_units, *new_units);
  return out;
}

}  // namespace warden::kernel
