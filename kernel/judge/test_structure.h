// Test files read as structure: the top-level pieces of a file (functions, classes, imports,
// statements, preprocessor lines) and, in a Python class, its members, each with a key that
// names it across versions, its code normalized (comments, blank lines, docstrings and runs
// of whitespace do not count), the names it binds and the identifiers it reads. The oracle's
// comparison of a test file's base and proposed versions (test_file_change.h) works on these.
//
// Readers, by the file's extension:
//   .py                                   Python: logical lines (brackets, backslashes,
//                                         strings of every prefix and quoting), blocks by
//                                         indentation, decorators joined to what they decorate
//   .c .h .cc .cpp .cxx .hpp .hh .hxx     C and C++: top-level declarations and function
//                                         definitions (by braces), each preprocessor line alone
//   .go                                   Go: top-level declarations, ending at a newline
//                                         outside brackets
//   .js .mjs .cjs .ts .mts .cts           JavaScript and TypeScript: statements (at `;`, at
//                                         a newline that completes one, after a declaration's
//                                         body); test(...)/it(...) calls are tests named by
//                                         their title, describe(...) calls are classes whose
//                                         members are their callback's statements, hooks
//                                         (beforeEach, ...) are statements
// A reader gives an error when the text is not what it can read with confidence (an
// unterminated string or comment, brackets that do not balance, a dedent to no enclosing
// level): such a file is judged whole. Other kinds of file (JSX and TSX, whose text content
// is not code; data) have no reader.
//
// Pure functions over borrowed text; safe from any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"

namespace warden::kernel {

enum class StructureLanguage { python, c_family, go, javascript };

// The reader for `path`, by its extension; none when no reader knows the kind.
std::optional<StructureLanguage> structure_language(std::string_view path);

struct SourceUnit {
  enum class Kind {
    function,     // def / a C or Go function definition (a test macro's body included) / a
                  // JavaScript function or class declaration, or a test(...) call
    klass,        // a Python class or a JavaScript describe(...) call; `members` holds its body
    import,       // import / from-import / #include / a Go import
    binding,      // a statement that binds names only: `x = ...`, `x: T = ...`, a C declaration,
                  // #define, Go var/const/type
    mutation,     // assigns into or deletes something that exists: `a.b = ...`, `d[k] = ...`,
                  // `del x`, #undef
    statement,    // anything else that runs: a call, an if/for/try/with block, a Go init
    docstring,    // a string literal alone at the top of a module, class or function body; `pass`
  };
  Kind kind = Kind::statement;
  std::string name;   // a function's or class's name ("test_add", "TEST(Ops, Add)"), a JavaScript test's or
                      // suite's title; else empty
  std::string key;    // how the same unit is found in another version of the file
  std::string text;   // normalized code, decorators included, docstrings excluded
  std::vector<std::string> binds;  // names bound at this level ("*" for a wildcard import)
  // Identifiers the unit's code reads (a function's parameters included: pytest passes fixtures
  // by them); Python: an attribute of self or cls as ".name"; C: a member as ".name".
  std::vector<std::string> reads;
  std::vector<SourceUnit> members;  // a class's body (Python)
  // Python: `from M import a, b as c` as M and its (name, alias) pairs, so an import that only
  // gains names is told from one that changes.
  std::string import_module;
  std::vector<std::string> imported;  // "a", "b as c"
  int line = 0;  // 1-based, where the unit starts (its first decorator)
};

Result<std::vector<SourceUnit>> read_structure(StructureLanguage language, std::string_view text);

Result<std::vector<SourceUnit>> read_python_structure(std::string_view text);
Result<std::vector<SourceUnit>> read_c_structure(std::string_view text);
Result<std::vector<SourceUnit>> read_go_structure(std::string_view text);
Result<std::vector<SourceUnit>> read_javascript_structure(std::string_view text);

}  // namespace warden::kernel
