"""A deterministic Python test runner that reports in TAP version 13.

Discovers tests/**/test_*.py and tests/**/*_test.py (sorted by path), imports
each with the workspace's src/ and root (and the test's own folder) on
sys.path, and runs every top-level function named test_* defined in it, in
definition order. Each test is one TAP line, "ok N - tests/test_x.py::test_y"
or "not ok N - ...", a failure followed by a YAML block naming the exception
type, its message and the workspace line that raised it: no traceback, no
absolute path, no timing, so the same tree always prints the same bytes. A
test file that cannot be imported is one failed test, "<file>::<import>".
Whatever tests print goes to stderr, keeping stdout pure TAP. The plan line
comes first; exit 1 when any test failed, 0 otherwise (no tests: "1..0").

Limits: plain functions only (no fixtures, classes or parametrization); a test
that hangs is ended by the sandbox's timeout, not by this runner.
"""

import contextlib
import importlib.util
import inspect
import json
import os
import sys
import traceback
from collections.abc import Callable

import checklib


def test_files() -> list[str]:
    return [p for p in checklib.python_files()
            if p.startswith("tests/") and (p.rsplit("/", 1)[-1].startswith("test_") or p.endswith("_test.py"))]


def location(error: BaseException) -> str | None:
    """path:line of the innermost traceback frame inside the workspace."""
    root = os.getcwd()
    for frame in reversed(traceback.extract_tb(error.__traceback__)):
        path = os.path.abspath(frame.filename)
        if path.startswith(root + os.sep):
            return f"{os.path.relpath(path, root)}:{frame.lineno}"
    return None


def diagnostic(error: BaseException) -> str:
    lines = ["  ---", f"  exception: {type(error).__name__}", f"  message: {json.dumps(str(error))}"]
    where = location(error)
    if where:
        lines.append(f"  at: {json.dumps(where)}")
    lines.append("  ...")
    return "\n".join(lines)


def load(path: str) -> tuple[list[tuple[str, Callable[[], object]]], BaseException | None]:
    """The test functions of one file in definition order, or the import error."""
    name = "warden_test_" + path[: -len(".py")].replace("/", "_").replace(".", "_")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        with contextlib.redirect_stdout(sys.stderr):
            spec.loader.exec_module(module)
    except (Exception, SystemExit) as error:
        return [], error
    tests = [(n, f) for n, f in vars(module).items()
             if n.startswith("test_") and inspect.isfunction(f) and f.__module__ == name]
    return tests, None


def main() -> None:
    checklib.argument_parser(__doc__.splitlines()[0]).parse_args()
    root = os.getcwd()
    sys.path[:0] = [os.path.join(root, "src"), root]
    cases: list[tuple[str, Callable[[], object] | None, BaseException | None]] = []
    for path in test_files():
        sys.path.insert(0, os.path.join(root, os.path.dirname(path)))
        tests, error = load(path)
        sys.path.pop(0)
        if error is not None:
            cases.append((f"{path}::<import>", None, error))
        cases.extend((f"{path}::{n}", f, None) for n, f in tests)

    print("TAP version 13")
    print(f"1..{len(cases)}")
    failed = 0
    for number, (title, function, error) in enumerate(cases, start=1):
        if function is not None:
            try:
                with contextlib.redirect_stdout(sys.stderr):
                    function()
            except (Exception, SystemExit) as raised:
                error = raised
        if error is None:
            print(f"ok {number} - {title}")
        else:
            failed += 1
            print(f"not ok {number} - {title}")
            print(diagnostic(error))
    sys.stdout.flush()
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
