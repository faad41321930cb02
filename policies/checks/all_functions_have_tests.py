"""Proves that every public function of the project is exercised by some test.

--lang python: every top-level function (def or async def at module level, name
not starting with "_") of a non-test module must be referenced by name in at
least one test file. Test files are tests/**, test_*.py, *_test.py and
conftest.py; a reference is the name used as a Name or an Attribute anywhere in
a test's AST, or imported by name (`from m import f as g` refers to f).
--lang c: every function defined without `static` in src/**/*.c must be called
(its name followed by "(") from some C/C++ file under tests/.

Limits: references are by name, not by resolved binding, so two functions with
the same name in different modules are covered by one reference; methods are
not required to have tests; a name mentioned but never called still counts for
Python. Meant for the final verification of a build, when the tests exist.
"""

import ast

import checklib


def python_uncovered(findings: checklib.Findings) -> None:
    paths = checklib.python_files()
    trees = checklib.parse_python_files(paths, findings)
    referenced: set[str] = set()
    for path, tree in trees.items():
        if not checklib.is_test_file(path):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Name):
                referenced.add(node.id)
            elif isinstance(node, ast.Attribute):
                referenced.add(node.attr)
            elif isinstance(node, ast.ImportFrom):
                referenced.update(alias.name for alias in node.names)
    for path, tree in trees.items():
        if checklib.is_test_file(path):
            continue
        for node in tree.body:
            if (isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not node.name.startswith("_")
                    and node.name not in referenced):
                findings.add(path, node.lineno, f"function {node.name} is not referenced by any test")


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


def c_uncovered(findings: checklib.Findings) -> None:
    paths = checklib.workspace_files(checklib.C_SOURCE_SUFFIXES)
    called: set[str] = set()
    for path in paths:
        if path.startswith("tests/"):
            tokens = checklib.c_tokens(checklib.strip_c(checklib.read_text(path)))
            called.update(tokens[i - 1][0] for i in range(1, len(tokens)) if tokens[i][0] == "(")
    for path in paths:
        if not (path.startswith("src/") and path.endswith(".c")):
            continue
        stripped = without_preprocessor(checklib.strip_c(checklib.read_text(path)))
        for name, line in c_definitions(checklib.c_tokens(stripped)):
            if name not in called:
                findings.add(path, line, f"function {name} is not called from any test")


def main() -> None:
    checklib.run_check(__doc__.splitlines()[0], {"python": python_uncovered, "c": c_uncovered})


if __name__ == "__main__":
    main()
