"""Shared by the Warden check programs (not a check program itself).

Every program in this folder runs in the sandbox as
`python3 /warden/checks/<program> <args>` with the workspace root as the current
directory; Python puts the program's own folder first on sys.path, so they import
this module by name. It holds what every program needs in the same form: which
files make up the workspace, how a Python file maps to a module name, how a
source file that does not parse becomes a finding, how C source is stripped of
comments and literals, and how findings are printed and turned into an exit code.

Output contract: one finding per line, "path:line: message", with workspace
relative paths, sorted; exit 0 when the invariant is proven, 1 when it is not,
2 on a usage error (argparse's own exit status).
"""

import argparse
import ast
import os
import re
import sys
from collections.abc import Callable

sys.dont_write_bytecode = True  # the workspace is the tree under judgement: leave it as found

# Directories that are never part of the project's sources.
SKIPPED_DIRS = {"__pycache__", "node_modules", "build"}

C_SOURCE_SUFFIXES = (".c", ".h", ".cc", ".cpp", ".cxx", ".hh", ".hpp", ".hxx")


class Findings:
    """Findings collected by a program; finish() prints them sorted and exits."""

    def __init__(self) -> None:
        self._items: set[tuple[str, int, str]] = set()

    def add(self, path: str, line: int, message: str) -> None:
        self._items.add((path, line, message))

    def finish(self) -> None:
        for path, line, message in sorted(self._items):
            print(f"{path}:{line}: {message}")
        sys.exit(1 if self._items else 0)


def argument_parser(description: str) -> argparse.ArgumentParser:
    return argparse.ArgumentParser(description=description)


def run_check(description: str, by_language: dict[str, Callable[[Findings], None]]) -> None:
    """A check program's main: --lang picks the function that gathers the findings
    (optional when there is one language), then print and exit."""
    languages = tuple(by_language)
    parser = argument_parser(description)
    parser.add_argument("--lang", choices=languages, required=len(languages) > 1, default=languages[0])
    findings = Findings()
    by_language[parser.parse_args().lang](findings)
    findings.finish()


def workspace_files(suffixes: tuple[str, ...]) -> list[str]:
    """Workspace-relative POSIX paths of the files ending in `suffixes`, sorted.

    Hidden directories (.git, .venv, ...), caches and build outputs are skipped;
    symlinks are not followed out of the tree."""
    found = []
    for dirpath, dirnames, filenames in os.walk("."):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d not in SKIPPED_DIRS)
        for name in filenames:
            path = os.path.join(dirpath, name)
            if name.endswith(suffixes) and not name.startswith(".") and os.path.isfile(path):
                found.append(os.path.relpath(path, ".").replace(os.sep, "/"))
    return sorted(found)


def python_files() -> list[str]:
    return workspace_files((".py",))


def is_test_file(path: str) -> bool:
    """tests/**, test_*.py, *_test.py and conftest.py are test code."""
    name = path.rsplit("/", 1)[-1]
    return (path.startswith("tests/") or name.startswith("test_") or name.endswith("_test.py")
            or name == "conftest.py")


def read_text(path: str) -> str:
    with open(path, "rb") as f:
        return f.read().decode("utf-8", errors="replace")


def parse_python(path: str, findings: Findings) -> ast.Module | None:
    """The file's AST, or None after recording why it does not parse."""
    try:
        with open(path, "rb") as f:
            source = f.read()
        return ast.parse(source, filename=path)
    except SyntaxError as e:
        findings.add(path, e.lineno or 1, f"does not parse: {e.msg}")
    except (ValueError, UnicodeDecodeError) as e:  # null bytes, undecodable source
        findings.add(path, 1, f"does not parse: {e}")
    return None


def parse_python_files(paths: list[str], findings: Findings) -> dict[str, ast.Module]:
    trees = {}
    for path in paths:
        tree = parse_python(path, findings)
        if tree is not None:
            trees[path] = tree
    return trees


def module_name(path: str) -> str:
    """Dotted module name of a workspace file: src/ layout honoured, a package's
    __init__.py is the package itself ("src/calc/__init__.py" -> "calc")."""
    if path.startswith("src/"):
        path = path[len("src/"):]
    parts = path[: -len(".py")].split("/")
    if parts[-1] == "__init__" and len(parts) > 1:
        parts.pop()
    return ".".join(parts)


def is_package(path: str) -> bool:
    return path.endswith("/__init__.py")


def relative_import_base(importer: str, level: int) -> str | None:
    """The package a relative import of `level` dots starts from, or None when it
    climbs above the top."""
    parts = module_name(importer).split(".")
    if not is_package(importer):
        parts.pop()
    drop = level - 1
    if drop > len(parts):
        return None
    return ".".join(parts[: len(parts) - drop])


def type_checking_only(node: ast.AST) -> bool:
    """`if TYPE_CHECKING:` (or typing.TYPE_CHECKING) guards imports that never run."""
    if not isinstance(node, ast.If):
        return False
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def runtime_imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement that can run, in source order (TYPE_CHECKING blocks skipped)."""
    found = []
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        for field, value in reversed(list(ast.iter_fields(node))):
            if type_checking_only(node) and field == "body":
                continue
            children = value if isinstance(value, list) else [value]
            stack.extend(c for c in reversed(children) if isinstance(c, ast.AST))
    return found


# C: comments and literals blanked out (newlines kept, so line numbers stay right), in
# one left-to-right pass of a single regular expression, which is linear in the input.
_C_LEXEME = re.compile(r'//[^\n]*|/\*.*?(?:\*/|\Z)|"(?:\\.|[^"\\\n])*"?|\'(?:\\.|[^\'\\\n])*\'?', re.S)


def strip_c(text: str, keep_strings: bool = False) -> str:
    def blank(match: re.Match[str]) -> str:
        lexeme = match.group(0)
        if lexeme[0] in "\"'":
            if keep_strings:
                return lexeme
            return lexeme[0] + re.sub(r"[^\n]", " ", lexeme[1:-1]) + lexeme[0]
        return re.sub(r"[^\n]", " ", lexeme)

    return _C_LEXEME.sub(blank, text)


_C_TOKEN = re.compile(r"[A-Za-z_]\w*|\d[\w.]*|->|::|\S")


def c_tokens(stripped: str) -> list[tuple[str, int]]:
    """(token, line) pairs of comment- and literal-free C source."""
    tokens = []
    line = 1
    position = 0
    for match in _C_TOKEN.finditer(stripped):
        line += stripped.count("\n", position, match.start())
        position = match.start()
        tokens.append((match.group(0), line))
    return tokens


_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*([<"])([^>"\n]+)[>"]', re.M)


def c_includes(text: str) -> list[tuple[str, str, int]]:
    """(kind '<' or '"', name, line) of every #include outside comments."""
    stripped = strip_c(text, keep_strings=True)
    return [(m.group(1), m.group(2).strip(), stripped.count("\n", 0, m.start()) + 1)
            for m in _INCLUDE.finditer(stripped)]


def resolve_quoted_include(including: str, name: str, files: set[str]) -> str | None:
    """The workspace file a #include "name" in `including` names: relative to the
    including file first, then include/ and src/ (the usual -I paths)."""
    directory = os.path.dirname(including)
    for base in (directory, "include", "src"):
        candidate = os.path.normpath(os.path.join(base, name)).replace(os.sep, "/")
        if candidate in files:
            return candidate
    return None
