"""The Python client against a real `warden serve` (python3 -m unittest, run by ctest).

Environment: WARDEN_BUILD_DIR (where warden-grpc is built), WARDEN_SOURCE_DIR (the examples),
WARDEN_CLIENT_EXPECTED_DIR (optional: the directory the warden_client under test must come from).
CTest runs these tests twice: service.python_client_unittest with clients/python on PYTHONPATH,
service.python_client_installed with the package pip installed into a fresh virtualenv
(clients/python/tests/installed-test).
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

import warden_client
from warden_client import Executor, Kernel, errors

BUILD = os.environ["WARDEN_BUILD_DIR"]
SOURCE = os.environ["WARDEN_SOURCE_DIR"]
sys.path.insert(0, os.path.join(SOURCE, "examples", "calculator"))
import agent_grpc  # noqa: E402  (the example executor itself)


class TestPackage(unittest.TestCase):
    def test_the_package_under_test_is_the_expected_one(self):
        expected = os.environ.get("WARDEN_CLIENT_EXPECTED_DIR")
        if not expected:
            self.skipTest("WARDEN_CLIENT_EXPECTED_DIR is not set")
        where = os.path.realpath(warden_client.__file__)
        self.assertTrue(where.startswith(os.path.realpath(expected) + os.sep),
                        f"warden_client imported from {where}, not from under {expected}")


class Served(unittest.TestCase):
    """One server per test class over a fresh state directory; stopped with SIGTERM."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="warden-py-")
        cls.state = os.path.join(cls.tmp, "state")
        blueprints = os.path.join(cls.tmp, "blueprints")
        os.makedirs(blueprints)
        os.symlink(os.path.join(SOURCE, "examples", "calculator"), os.path.join(blueprints, "calculator"))
        cls.socket = os.path.join(cls.state, "warden.sock")
        cls.server = subprocess.Popen([os.path.join(BUILD, "warden-grpc"), "serve", "--state", cls.state,
                                       "--blueprints", blueprints], stderr=subprocess.PIPE)
        deadline = time.monotonic() + 60
        while True:
            if os.path.exists(cls.socket):
                try:
                    with Kernel(cls.socket, timeout=2) as k:
                        if k.health() == "SERVING":
                            break
                except errors.WardenError:
                    pass
            if cls.server.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the server did not start: " + cls.server.stderr.read().decode())
            time.sleep(0.05)
        cls.kernel = Kernel(cls.socket)

    @classmethod
    def tearDownClass(cls):
        cls.kernel.close()
        cls.server.send_signal(signal.SIGTERM)
        code = cls.server.wait(timeout=60)
        cls.server.stderr.close()
        shutil.rmtree(cls.tmp, ignore_errors=True)
        assert code == 0, f"the server exited {code}"


class TestRuns(Served):
    def test_a_run_is_started_watched_and_summarized(self):
        run_id = self.kernel.start_run("calculator", repository="plan")
        events = list(self.kernel.watch(run_id))
        self.assertEqual(events[0].type, "run_started")
        self.assertEqual(events[-1].type, "run_completed")
        seqs = [e.ledger_seq for e in events]
        self.assertEqual(seqs, sorted(set(seqs)), "events repeated or out of order")
        # Resuming after any event gives exactly the rest.
        middle = len(events) // 2
        rest = list(self.kernel.watch(run_id, from_seq=events[middle].ledger_seq + 1))
        self.assertEqual([e.event_id for e in rest], [e.event_id for e in events[middle + 1:]])
        run = self.kernel.run(run_id)
        self.assertEqual((run.status, run.steps_done, run.steps_total), ("completed", 5, 5))
        self.assertIn(run_id, [r.run_id for r in self.kernel.runs(kind="build")])

    def test_errors_are_one_class_per_status(self):
        with self.assertRaises(errors.NotFound):
            self.kernel.run("run-nobody")
        with self.assertRaises(errors.InvalidArgument):
            self.kernel.start_run("../etc")
        with self.assertRaises(errors.NotFound):
            self.kernel.start_run("no-such-blueprint")
        with self.assertRaises(ValueError):
            self.kernel.start_run()

    def test_a_committed_plan_is_built_by_its_digest(self):
        blueprint = json.dumps({
            "format": "warden.blueprint/v1", "name": "tiny", "language": "python",
            "repository": {"seed": None, "base": "HEAD"}, "goals": ["a constant"], "policy": "python",
            "intent": {"name": "python_package", "artifacts": ["module"]},
            "modules": [{"name": "tiny", "path": "src/tiny/__init__.py", "content": "X = 1\n"}]})
        plan_json, digest = self.kernel.generate_plan(blueprint)
        self.assertEqual(self.kernel.verify_plan(plan_json), [])
        self.assertEqual(self.kernel.commit_plan(plan_json), digest)
        run_id = self.kernel.start_run(plan_sha256=digest, repository="from-plan")
        self.assertEqual(list(self.kernel.watch(run_id))[-1].type, "run_completed")
        with self.assertRaises(errors.NotFound):
            self.kernel.start_run(plan_sha256="sha256:" + "b" * 64)
        with self.assertRaises(ValueError):
            self.kernel.start_run("calculator", plan_sha256=digest)

    def test_cancel(self):
        run_id = self.kernel.start_run("calculator", repository="cancelled")
        run = self.kernel.cancel(run_id, wait_s=30)
        self.assertEqual(run.status, "cancelled")
        self.assertEqual(list(self.kernel.watch(run_id))[-1].type, "run_cancelled")
        with self.assertRaises(errors.FailedPrecondition):
            self.kernel.cancel(run_id)

    def test_receipt_of_the_accepted_tip(self):
        run_id = self.kernel.start_run("calculator", repository="receipt")
        list(self.kernel.watch(run_id))
        commits = [r.payload["commit"] for r in self.kernel.records(kind="commit", run_id=run_id)]
        receipt = self.kernel.receipt(commits[-1])
        self.assertEqual(receipt["format"], "warden.receipt/v1")
        with open(os.path.join(self.state, "ledger", "signer.pub")) as f:
            verifier = f.read().strip()
        path = os.path.join(self.tmp, "receipt.json")
        with open(path, "w") as f:
            json.dump(receipt, f)
        verified = subprocess.run([os.path.join(BUILD, "warden"), "receipt", "verify", path, "--key", verifier],
                                  capture_output=True, text=True)
        self.assertEqual(verified.returncode, 0, verified.stderr)


def _fields(data: bytes):
    """(field number, bytes) for each length-delimited field of a protobuf message."""
    i = 0
    while i < len(data):
        key, i = _varint(data, i)
        wire = key & 7
        if wire == 2:
            n, i = _varint(data, i)
            yield key >> 3, data[i:i + n]
            i += n
        elif wire == 0:
            _, i = _varint(data, i)
        else:
            raise ValueError(f"wire type {wire}")


def _varint(data: bytes, i: int):
    shift = value = 0
    while True:
        b = data[i]
        i += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return value, i


class TestReflection(Served):
    def test_a_reflection_client_lists_the_services(self):
        # grpc.reflection.v1alpha: ServerReflectionRequest{list_services: ""} (field 7), raw bytes,
        # as a generic tool (grpcurl) sends it; no generated code for it is needed.
        import grpc
        with grpc.insecure_channel("unix:" + self.socket) as channel:
            info = channel.stream_stream("/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
                                         request_serializer=None, response_deserializer=None)
            responses = list(info(iter([b"\x3a\x00"]), timeout=10))
        self.assertEqual(len(responses), 1)
        listed = [field for number, field in _fields(responses[0]) if number == 6]
        self.assertEqual(len(listed), 1, "no list_services_response")
        names = {dict(_fields(service))[1].decode() for number, service in _fields(listed[0]) if number == 1}
        for service in ("warden.v1.Kernel", "warden.v1.Executor", "warden.v1.Ledger", "warden.v1.Pipeline",
                        "grpc.health.v1.Health"):
            self.assertIn(service, names)


class TestExecutor(Served):
    def test_the_example_executor_builds_the_calculator(self):
        run_id = self.kernel.start_run("calculator", executor="remote", label="py", repository="remote")
        summary = agent_grpc.CalculatorAgent().run(self.kernel, run_id=run_id)
        self.assertEqual(summary.status, "completed")
        proposals = list(self.kernel.records(kind="proposal", run_id=run_id))
        self.assertTrue(proposals)
        for p in proposals:
            self.assertEqual(p.payload["executor"], "remote:py")
            self.assertEqual(p.payload["executor_identity"], "local")

    def test_an_executor_that_raises_fails_the_attempt_and_learns(self):
        class Flaky(agent_grpc.CalculatorAgent):
            def __init__(self):
                self.failed = False
                self.learned = []

            def propose(self, step, context):
                if not self.failed:
                    self.failed = True
                    raise RuntimeError("model unavailable")
                return super().propose(step, context)

            def learn(self, refusal):
                self.learned.append(refusal)

        run_id = self.kernel.start_run("calculator", executor="remote", label="flaky", repository="flaky")
        flaky = Flaky()
        self.assertEqual(flaky.run(self.kernel, run_id=run_id).status, "completed")
        self.assertTrue(any("model unavailable" in json.dumps(r) for r in flaky.learned), flaky.learned)

    def test_the_documented_executor_works_as_shown(self):
        with open(os.path.join(SOURCE, "docs", "service.md")) as f:
            page = f.read()
        start = page.index("```python\nimport hashlib, json")
        code = page[start + len("```python\n"):page.index("```\n", start + 10)]
        self.assertLess(len(code.strip().splitlines()), 25, "the documented executor should stay short")
        code = code.replace('"/var/lib/warden/warden.sock"', repr(self.socket))
        code = code.replace('label="my-agent")', 'label="my-agent", repository="readme")')
        scope = {}
        exec(compile(code, "docs/service.md", "exec"), scope)  # prints the run's summary
        self.assertEqual(self.kernel.run(scope["run_id"]).status, "completed")

    def test_propose_is_idempotent(self):
        run_id = self.kernel.start_run("calculator", executor="remote", label="unary", repository="unary")
        for _ in range(100):  # the run records its plan just after it starts
            plans = list(self.kernel.records(kind="plan_proposal", run_id=run_id))
            if plans:
                break
            time.sleep(0.1)
        plan = plans[0].payload["plan"]
        step = plan["steps"][0]
        diff = agent_grpc.CalculatorAgent().propose(step, {"files": {}, "refusals": []})
        for _ in range(100):
            try:
                verdict = self.kernel.propose(run_id, step["id"], 1, diff, idempotency_key="once")
                break
            except errors.FailedPrecondition as e:  # the run has not asked yet
                last = e
                time.sleep(0.1)
        else:
            self.fail(f"never awaited: {last}")
        self.assertTrue(verdict.accepted)
        again = self.kernel.propose(run_id, step["id"], 1, diff, idempotency_key="once")
        self.assertEqual((again.decision_seq, again.commit), (verdict.decision_seq, verdict.commit))
        self.assertEqual(len(list(self.kernel.records(kind="proposal", run_id=run_id))), 1)
        self.kernel.cancel(run_id)


if __name__ == "__main__":
    unittest.main()
