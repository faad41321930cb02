"""Proves that every Python function outside the tests is fully type-annotated.

Every def and async def in a non-test file (methods and nested functions
included) must annotate each parameter, *args and **kwargs included, and its
return type (`-> None` too, __init__ included). The first parameter of a
function defined directly in a class body is exempt when it is named self or
cls. Test files (tests/**, test_*.py, *_test.py, conftest.py) are exempt as a
whole: test functions take no arguments and return nothing by convention.

Limits: lambdas cannot carry annotations and are not checked; annotations are
required to be present, not to be correct (that is a type checker's job).
"""

import ast

import checklib


def check_function(path: str, node: ast.FunctionDef | ast.AsyncFunctionDef, in_class: bool,
                   findings: checklib.Findings) -> None:
    args = node.args
    positional = args.posonlyargs + args.args
    if in_class and positional and positional[0].arg in ("self", "cls"):
        positional = positional[1:]
    missing = [a.arg for a in positional + args.kwonlyargs if a.annotation is None]
    if args.vararg and args.vararg.annotation is None:
        missing.append("*" + args.vararg.arg)
    if args.kwarg and args.kwarg.annotation is None:
        missing.append("**" + args.kwarg.arg)
    if missing:
        findings.add(path, node.lineno, f"function {node.name}: parameter(s) without a type hint: {', '.join(missing)}")
    if node.returns is None:
        findings.add(path, node.lineno, f"function {node.name}: no return type hint")


def check_tree(path: str, tree: ast.Module, findings: checklib.Findings) -> None:
    stack: list[tuple[ast.AST, bool]] = [(tree, False)]
    while stack:
        node, in_class = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            check_function(path, node, in_class, findings)
        for child in ast.iter_child_nodes(node):
            stack.append((child, isinstance(node, ast.ClassDef)))


def check_workspace(findings: checklib.Findings) -> None:
    paths = [p for p in checklib.python_files() if not checklib.is_test_file(p)]
    for path, tree in checklib.parse_python_files(paths, findings).items():
        check_tree(path, tree, findings)


def main() -> None:
    checklib.run_check(__doc__.splitlines()[0], {"python": check_workspace})


if __name__ == "__main__":
    main()
