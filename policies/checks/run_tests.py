"""A deterministic Python test runner that reports in TAP version 13.

Discovers tests/**/test_*.py and tests/**/*_test.py (sorted by path), imports
each with the workspace's src/ and root (and the test's own folder) on
sys.path, and runs, in each file:
- unittest.TestCase subclasses through unittest itself (one suite per file, so
  setUpModule/setUpClass/setUp and their tearDowns, skip decorators,
  expectedFailure and subTest behave as under `python -m unittest`), methods in
  unittest's order (by name);
- pytest-style tests: top-level functions named test*, and methods named test*
  of classes named Test* that are not TestCases and define no __init__ (a fresh
  instance per test; setup_module/teardown_module, setup_class/teardown_class
  and setup_method/teardown_method are called as pytest calls them), in
  definition order. pytest's skip, skipif (with a boolean condition) and xfail
  marks and pytest.skip()/unittest.SkipTest are honoured.

Ids are "path::function" and "path::Class::method". Each test is one TAP line,
"ok N - id", "ok N - id # SKIP reason", "not ok N - id # TODO expected failure"
or "not ok N - id", a failure followed by a YAML block naming the exception type,
its message, the workspace line that raised it and, for subTest, the subtest: no
traceback, no absolute path, no timing, so the same tree always prints the same
bytes. A test file that cannot be imported is one failed test, "<file>::<import>";
a failing class or module fixture is "<file>::<Class>::<setUpClass>" (and so on),
and every test it kept from running fails as "did not run". A collected test that
never reported (a patched framework) fails the same way. Whatever tests print
goes to stderr. The plan line comes first; exit 1 when any test failed, 0
otherwise.

The report channel: run by Warden for a check that declares
"authenticated_report", the runner hands this program two descriptors, named by
WARDEN_NONCE_FD (a pipe holding a fresh 32-byte nonce) and WARDEN_REPORT_FD.
The nonce is read and its descriptor closed before any tested code is imported;
the report is written to WARDEN_REPORT_FD, ending with the line
"# warden-report-hmac-sha256: <hex>" (HMAC-SHA256 keyed by the nonce over
everything before that line), which the runner verifies. Stdout then carries a
copy for people only: the code under test shares stdout, so the runner never
reads it as the report. Without those variables the report goes to stdout.

Limits: pytest fixtures (a test function with parameters), parametrize and
other marks are not supported: such a test fails, saying so, rather than pass
unexamined. A test that hangs is ended by the sandbox's timeout.
"""

import contextlib
import hashlib
import hmac
import importlib.util
import inspect
import json
import os
import re
import sys
import traceback
import unittest
from collections.abc import Callable

import checklib

NONCE_BYTES = 32
MAC_PREFIX = "# warden-report-hmac-sha256: "


class Outcome:
    """How one test ended: status is ok, fail, skip or xfail; error explains a fail."""

    def __init__(self, status: str, error: BaseException | None = None, reason: str = "", subtest: str = "") -> None:
        self.status = status
        self.error = error
        self.reason = reason
        self.subtest = subtest


DID_NOT_RUN = "did not run"


class NotRun(Exception):
    """Stands for a collected test that never reported an outcome."""


# -- the report channel -------------------------------------------------------------------


class Channel:
    """Where the report goes: stdout, or the runner's report descriptor with a MAC."""

    def __init__(self) -> None:
        self._mac = None
        self._fd = None
        nonce_fd = os.environ.get("WARDEN_NONCE_FD")
        report_fd = os.environ.get("WARDEN_REPORT_FD")
        if nonce_fd is None and report_fd is None:
            return
        if nonce_fd is None or report_fd is None or not nonce_fd.isdigit() or not report_fd.isdigit():
            sys.exit("run_tests.py: WARDEN_NONCE_FD and WARDEN_REPORT_FD must both name descriptors")
        nonce = b""
        with os.fdopen(int(nonce_fd), "rb", buffering=0) as pipe:
            while len(nonce) <= NONCE_BYTES:
                chunk = pipe.read(NONCE_BYTES + 1 - len(nonce))
                if not chunk:
                    break
                nonce += chunk
        if len(nonce) != NONCE_BYTES:
            sys.exit(f"run_tests.py: the nonce channel gave {len(nonce)} bytes, not {NONCE_BYTES}")
        # The key lives on only inside the HMAC object; the tested code's child processes
        # do not inherit the report descriptor.
        self._mac = hmac.new(nonce, digestmod=hashlib.sha256)
        del nonce
        self._fd = int(report_fd)
        os.set_inheritable(self._fd, False)

    def send(self, body: str) -> None:
        if self._fd is not None:
            data = body.encode("utf-8", errors="replace")
            self._mac.update(data)
            data += f"{MAC_PREFIX}{self._mac.hexdigest()}\n".encode()
            view = memoryview(data)
            while view:
                view = view[os.write(self._fd, view):]
            os.close(self._fd)
        sys.stdout.write(body)
        sys.stdout.flush()


# -- discovery -----------------------------------------------------------------------------


def test_files() -> list[str]:
    return [p for p in checklib.python_files()
            if p.startswith("tests/") and (p.rsplit("/", 1)[-1].startswith("test_") or p.endswith("_test.py"))]


def load(path: str) -> tuple[object | None, BaseException | None]:
    name = "warden_test_" + path[: -len(".py")].replace("/", "_").replace(".", "_")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        with contextlib.redirect_stdout(sys.stderr):
            spec.loader.exec_module(module)
    except (Exception, SystemExit) as error:
        return None, error
    return module, None


def is_test_case(value: object) -> bool:
    return inspect.isclass(value) and issubclass(value, unittest.TestCase)


def pytest_class_tests(cls: type) -> list[str]:
    """test* methods of a pytest-style class, inherited ones included, in definition order."""
    names = dict.fromkeys(n for klass in reversed(cls.__mro__) for n in vars(klass))
    return [n for n in names if n.startswith("test") and callable(getattr(cls, n, None))]


class FileTests:
    """One test file's tests in report order, and how to run them."""

    def __init__(self, path: str, module: object) -> None:
        self.path = path
        self.module = module
        self.ids: list[str] = []
        self.functions: dict[str, Callable[[], object]] = {}  # id -> call (pytest style)
        self.cases: list[unittest.TestCase] = []
        self.case_ids: dict[int, str] = {}
        self.pytest_classes: dict[str, tuple[type, list[str]]] = {}
        loader = unittest.TestLoader()
        for name, value in vars(module).items():
            if getattr(value, "__module__", None) != module.__name__:
                continue
            if is_test_case(value):
                for method in loader.getTestCaseNames(value):
                    case = value(method)
                    self._add(f"{path}::{name}::{method}")
                    self.case_ids[id(case)] = self.ids[-1]
                    self.cases.append(case)
            elif inspect.isclass(value) and name.startswith("Test") and "__init__" not in vars(value):
                methods = pytest_class_tests(value)
                self.pytest_classes[name] = (value, methods)
                for method in methods:
                    self._add(f"{path}::{name}::{method}")
            elif inspect.isfunction(value) and name.startswith("test"):
                self._add(f"{path}::{name}")
                self.functions[self.ids[-1]] = value

    def _add(self, test_id: str) -> None:
        self.ids.append(test_id)


# -- running -------------------------------------------------------------------------------


def skip_reason(error: BaseException) -> str | None:
    """The reason when `error` is unittest's or pytest's way of skipping, else None."""
    if isinstance(error, unittest.SkipTest):
        return str(error)
    if type(error).__name__ == "Skipped" and type(error).__module__.startswith("_pytest"):
        return str(getattr(error, "msg", "") or error)
    return None


def marks(function: object) -> list[object]:
    return list(getattr(function, "pytestmark", []))


def unsupported(function: Callable[..., object], call_args: int) -> str | None:
    """Why this runner cannot run `function` faithfully, or None."""
    required = [p.name for p in list(inspect.signature(function).parameters.values())[call_args:]
                if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    if required:
        return f"pytest fixtures are not supported (needs {', '.join(required)})"
    for mark in marks(function):
        if mark.name not in ("skip", "skipif", "xfail"):
            return f"pytest mark {mark.name} is not supported"
    return None


def call(function: Callable[[], object]) -> BaseException | None:
    try:
        with contextlib.redirect_stdout(sys.stderr):
            function()
    except (Exception, SystemExit) as raised:
        return raised
    except BaseException as raised:  # pytest's outcomes (skip, fail) derive from BaseException
        if type(raised).__module__.startswith("_pytest"):
            return raised
        raise
    return None


def run_pytest_style(function: Callable[..., object], invoke: Callable[[], object], call_args: int) -> Outcome:
    why = unsupported(function, call_args)
    if why:
        return Outcome("fail", NotImplementedError(why))
    expect_failure = None
    for mark in marks(function):
        if mark.name == "skip" or (mark.name == "skipif" and mark.args and mark.args[0] is True):
            return Outcome("skip", reason=str(mark.kwargs.get("reason", "")))
        if mark.name == "skipif" and mark.args and not isinstance(mark.args[0], bool):
            return Outcome("fail", NotImplementedError("pytest skipif needs a boolean condition here"))
        if mark.name == "xfail":
            expect_failure = mark
    error = call(invoke)
    if error is not None and skip_reason(error) is not None:
        return Outcome("skip", reason=skip_reason(error))
    if expect_failure is not None:
        if error is not None:
            return Outcome("xfail")
        if expect_failure.kwargs.get("strict"):
            return Outcome("fail", AssertionError("unexpected success of a strict xfail"))
        return Outcome("ok")
    return Outcome("ok" if error is None else "fail", error)


def fixture(owner: object, name: str, *args: object) -> BaseException | None:
    hook = getattr(owner, name, None)
    return call(lambda: hook(*args)) if callable(hook) else None


class Recorder(unittest.TestResult):
    """unittest's results, by this runner's ids."""

    def __init__(self, tests: FileTests, outcomes: dict[str, Outcome]) -> None:
        super().__init__()
        self._tests = tests
        self._outcomes = outcomes

    def _id(self, test: unittest.TestCase) -> str:
        return self._tests.case_ids.get(id(test)) or self._fixture_id(test)

    def _fixture_id(self, test: object) -> str:
        # unittest's _ErrorHolder for a failing class or module fixture: "setUpClass (module.Class)".
        match = re.fullmatch(r"(\w+) \(([\w.]+)\)", str(test))
        if not match:
            return f"{self._tests.path}::<{type(test).__name__}>"
        kind, target = match.groups()
        if target == self._tests.module.__name__:
            return f"{self._tests.path}::<{kind}>"
        return f"{self._tests.path}::{target.rsplit('.', 1)[-1]}::<{kind}>"

    def _fail(self, test: object, err: tuple, subtest: str = "") -> None:
        key = self._id(test)
        if key not in self._outcomes or self._outcomes[key].status != "fail":
            self._outcomes[key] = Outcome("fail", err[1], subtest=subtest)

    def addSuccess(self, test):  # noqa: N802 - unittest's names
        self._outcomes.setdefault(self._id(test), Outcome("ok"))

    def addFailure(self, test, err):  # noqa: N802
        self._fail(test, err)

    def addError(self, test, err):  # noqa: N802
        self._fail(test, err)

    def addSubTest(self, test, subtest, err):  # noqa: N802
        if err is not None:
            self._fail(test, err, subtest._subDescription())

    def addSkip(self, test, reason):  # noqa: N802
        self._outcomes[self._id(test)] = Outcome("skip", reason=reason)

    def addExpectedFailure(self, test, err):  # noqa: N802
        self._outcomes[self._id(test)] = Outcome("xfail")

    def addUnexpectedSuccess(self, test):  # noqa: N802
        self._outcomes[self._id(test)] = Outcome("fail", AssertionError("unexpected success of an expectedFailure"))


def run_file(tests: FileTests, outcomes: dict[str, Outcome]) -> None:
    if tests.cases:
        with contextlib.redirect_stdout(sys.stderr):
            unittest.TestSuite(tests.cases).run(Recorder(tests, outcomes))
    module = tests.module
    module_error = fixture(module, "setup_module", module)
    for test_id, function in tests.functions.items():
        outcomes[test_id] = Outcome("fail", module_error) if module_error else run_pytest_style(function, function, 0)
    for name, (cls, methods) in tests.pytest_classes.items():
        class_error = module_error or fixture(cls, "setup_class")
        for method in methods:
            test_id = f"{tests.path}::{name}::{method}"
            if class_error:
                outcomes[test_id] = Outcome("fail", class_error)
                continue
            outcomes[test_id] = run_instance(cls, method)
        if not class_error:
            record_fixture_error(outcomes, f"{tests.path}::{name}::<teardown_class>", fixture(cls, "teardown_class"))
    if not module_error:
        record_fixture_error(outcomes, f"{tests.path}::<teardown_module>", fixture(module, "teardown_module", module))


def run_instance(cls: type, method: str) -> Outcome:
    try:
        instance = cls()
    except Exception as error:
        return Outcome("fail", error)
    bound = getattr(instance, method)
    setup_error = fixture(instance, "setup_method", bound)
    if setup_error:
        return Outcome("fail", setup_error)
    outcome = run_pytest_style(getattr(cls, method), bound, 1)
    teardown_error = fixture(instance, "teardown_method", bound)
    if teardown_error and outcome.status != "fail":
        return Outcome("fail", teardown_error)
    return outcome


def record_fixture_error(outcomes: dict[str, Outcome], test_id: str, error: BaseException | None) -> None:
    if error is not None:
        outcomes[test_id] = Outcome("fail", error)


# -- reporting -----------------------------------------------------------------------------


def location(error: BaseException) -> str | None:
    """path:line of the innermost traceback frame inside the workspace."""
    root = os.getcwd()
    for frame in reversed(traceback.extract_tb(error.__traceback__)):
        path = os.path.abspath(frame.filename)
        if path.startswith(root + os.sep):
            return f"{os.path.relpath(path, root)}:{frame.lineno}"
    return None


def diagnostic(outcome: Outcome) -> str:
    error = outcome.error if outcome.error is not None else NotRun(DID_NOT_RUN)
    lines = ["  ---", f"  exception: {type(error).__name__}", f"  message: {json.dumps(str(error))}"]
    where = location(error)
    if where:
        lines.append(f"  at: {json.dumps(where)}")
    if outcome.subtest:
        lines.append(f"  subtest: {json.dumps(outcome.subtest)}")
    lines.append("  ...")
    return "\n".join(lines)


def tap(results: list[tuple[str, Outcome]]) -> str:
    lines = ["TAP version 13", f"1..{len(results)}"]
    for number, (test_id, outcome) in enumerate(results, start=1):
        if outcome.status == "ok":
            lines.append(f"ok {number} - {test_id}")
        elif outcome.status == "skip":
            reason = " ".join(outcome.reason.split())
            lines.append(f"ok {number} - {test_id} # SKIP{' ' + reason if reason else ''}")
        elif outcome.status == "xfail":
            lines.append(f"not ok {number} - {test_id} # TODO expected failure")
        else:
            lines.append(f"not ok {number} - {test_id}")
            lines.append(diagnostic(outcome))
    return "\n".join(lines) + "\n"


def main() -> None:
    checklib.argument_parser(__doc__.splitlines()[0]).parse_args()
    channel = Channel()  # before any tested code is imported
    root = os.getcwd()
    sys.path[:0] = [os.path.join(root, "src"), root]
    files: list[FileTests] = []
    results: list[tuple[str, Outcome]] = []
    for path in test_files():
        sys.path.insert(0, os.path.join(root, os.path.dirname(path)))
        module, error = load(path)
        sys.path.pop(0)
        if error is not None:
            results.append((f"{path}::<import>", Outcome("fail", error)))
        else:
            files.append(FileTests(path, module))

    outcomes: dict[str, Outcome] = {}
    for tests in files:
        run_file(tests, outcomes)
    reported = {test_id for test_id, _ in results}
    for tests in files:
        for test_id in tests.ids:
            results.append((test_id, outcomes.get(test_id, Outcome("fail"))))
            reported.add(test_id)
    # Fixture failures, which are not collected tests, in a stable order after them.
    results.extend((test_id, outcomes[test_id]) for test_id in sorted(outcomes) if test_id not in reported)
    results.sort(key=lambda item: item[0].split("::", 1)[0])  # by file, stable inside one
    channel.send(tap(results))
    sys.exit(1 if any(o.status == "fail" for _, o in results) else 0)


if __name__ == "__main__":
    main()
