"""Proves that every public function of the project is exercised by a test that ran.

The tests that ran come from the runner: a check declaring "tests_from" gets the
ids of the tests that passed in the named checks of the same run as a read-only
JSON file, {"checks": {"tests": ["tests/test_ops.py::TestOps::test_mul", ...]}},
on the descriptor named by WARDEN_TESTS_FROM_FD (or, run by hand, the file named
by --tests-ran). Without either it is a usage error: a file merely named like a
test proves nothing.

--lang python: every top-level function (def or async def at module level, name
not starting with "_") of a non-test module must be referenced by name inside
the body of a passed test, found by its run_tests.py id "path::function" or
"path::Class::method" (a method a class inherits from another class of the same
file is found there). A reference is the name used as a Name or an Attribute;
a name the test file imported under another name (`from m import f as g`)
refers to the original. Code outside those bodies (module level, helpers,
fixtures, conftest.py, files that were never run) proves nothing.
--lang c: TAP ids of C tests are free descriptions that name no function, so
the rule is by file: every function defined without `static` in src/**/*.c
must be called (its name followed by "(") from some C/C++ file under tests/,
and only when the named checks passed at least one test; a passing run with no
tests, or a failed one, proves no call.

Limits: references are by name, not by resolved binding, so two functions with
the same name in different modules are covered by one reference; a helper the
test calls is not followed; methods are not required to have tests; a name
mentioned but never called still counts for Python; for C, a file under tests/
that the test build does not compile still counts. Meant for the final
verification of a build, when the tests exist.
"""

import ast
import json
import os
import sys

import checklib


def usage_error(message: str) -> None:
    print(f"all_functions_have_tests.py: {message}", file=sys.stderr)
    sys.exit(2)


def passed_test_ids(path: str | None) -> set[str]:
    """Every passed id of every named check, from --tests-ran or WARDEN_TESTS_FROM_FD."""
    fd = os.environ.get("WARDEN_TESTS_FROM_FD")
    if path is None and fd is None:
        usage_error("needs the ids of the tests that ran (a check with \"tests_from\", or --tests-ran FILE)")
    try:
        with (open(path, "rb") if path is not None else os.fdopen(int(fd), "rb")) as f:
            document = json.loads(f.read())
        return {test_id for ids in document["checks"].values() for test_id in ids}
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
        usage_error(f"unreadable list of tests that ran: {error}")


def test_bodies(tree: ast.Module, names: list[str]) -> list[ast.AST]:
    """The function the id's names lead to in `tree`: a top-level function, or a method of a
    top-level class (or of a same-file class it inherits from)."""
    top = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    if len(names) == 1:
        node = top.get(names[0])
        return [node] if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else []
    if len(names) != 2:
        return []
    pending, seen = [names[0]], set()
    while pending:
        cls = top.get(pending.pop(0))
        if not isinstance(cls, ast.ClassDef) or cls.name in seen:
            continue
        seen.add(cls.name)
        for node in cls.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == names[1]:
                return [node]
        pending.extend(b.id for b in cls.bases if isinstance(b, ast.Name))
    return []


def import_aliases(tree: ast.Module) -> dict[str, str]:
    """Local name -> imported name, for `from m import f as g` anywhere in the file."""
    aliases = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                aliases[alias.asname or alias.name] = alias.name
    return aliases


def python_uncovered(findings: checklib.Findings, ran: set[str]) -> None:
    paths = checklib.python_files()
    trees = checklib.parse_python_files(paths, findings)
    by_file: dict[str, list[list[str]]] = {}
    for test_id in ran:
        path, _, rest = test_id.partition("::")
        if rest:
            by_file.setdefault(path, []).append(rest.split("::"))
    referenced: set[str] = set()
    for path, ids in by_file.items():
        tree = trees.get(path)
        if tree is None:
            continue
        aliases = import_aliases(tree)
        for names in ids:
            for body in test_bodies(tree, names):
                for node in ast.walk(body):
                    # A test covers a function it calls, or hands to a call (assertRaises(E, f, x),
                    # map(f, xs)); merely naming it (`triple` alone) exercises nothing.
                    if not isinstance(node, ast.Call):
                        continue
                    for used in [node.func, *node.args, *(k.value for k in node.keywords)]:
                        name = used.id if isinstance(used, ast.Name) else used.attr if isinstance(used, ast.Attribute) else None
                        if name is not None:
                            referenced.update({name, aliases.get(name, name)})
    for path, tree in trees.items():
        if checklib.is_test_file(path):
            continue
        for node in tree.body:
            if (isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not node.name.startswith("_")
                    and node.name not in referenced):
                findings.add(path, node.lineno, f"function {node.name} is not referenced by any test that ran")


def c_definitions(tokens: list[tuple[str, int]]) -> list[tuple[str, int]]:
    """(name, line) of the non-static functions defined at file scope: a name, a
    parenthesized list, then "{" at brace depth 0."""
    found = []
    depth = 0
    statement_start = 0  # first token of the current file-scope declaration
    i = 0
    while i < len(tokens):
        token = tokens[i][0]
        if token == "{":
            depth += 1
        elif token == "}":
            depth -= 1
            if depth == 0:
                statement_start = i + 1
        elif depth == 0 and token == ";":
            statement_start = i + 1
        elif depth == 0 and token == "(" and i > 0 and (tokens[i - 1][0][0].isalpha() or tokens[i - 1][0][0] == "_"):
            close, nesting = i, 0
            while close < len(tokens):
                nesting += {"(": 1, ")": -1}.get(tokens[close][0], 0)
                if nesting == 0:
                    break
                close += 1
            if close + 1 < len(tokens) and tokens[close + 1][0] == "{":
                declaration = {t for t, _ in tokens[statement_start:i]}
                if "static" not in declaration:
                    found.append(tokens[i - 1])
            i = close
        i += 1
    return found


def without_preprocessor(text: str) -> str:
    """Directive lines (and their continuations) blanked; newlines kept."""
    lines = text.split("\n")
    continued = False
    for n, line in enumerate(lines):
        if continued or line.lstrip().startswith("#"):
            continued = line.endswith("\\")
            lines[n] = ""
    return "\n".join(lines)


def c_uncovered(findings: checklib.Findings, ran: set[str]) -> None:
    paths = checklib.workspace_files(checklib.C_SOURCE_SUFFIXES)
    called: set[str] = set()
    for path in paths:
        if path.startswith("tests/") and ran:
            tokens = checklib.c_tokens(checklib.strip_c(checklib.read_text(path)))
            called.update(tokens[i - 1][0] for i in range(1, len(tokens)) if tokens[i][0] == "(")
    for path in paths:
        if not (path.startswith("src/") and path.endswith(".c")):
            continue
        stripped = without_preprocessor(checklib.strip_c(checklib.read_text(path)))
        for name, line in c_definitions(checklib.c_tokens(stripped)):
            if name not in called:
                findings.add(path, line, f"function {name} is not called from any test that ran")


def main() -> None:
    parser = checklib.argument_parser(__doc__.splitlines()[0])
    parser.add_argument("--lang", choices=("python", "c"), required=True)
    parser.add_argument("--tests-ran", metavar="FILE", help="the runner's JSON list of passed test ids")
    arguments = parser.parse_args()
    ran = passed_test_ids(arguments.tests_ran)
    findings = checklib.Findings()
    {"python": python_uncovered, "c": c_uncovered}[arguments.lang](findings, ran)
    findings.finish()


if __name__ == "__main__":
    main()
