"""Remote executors: a long-lived Python process that proposes changes over gRPC.

Subclass Executor, implement propose(step, context) -> str (a Diff JSON or a patch), and
optionally learn(refusal) and replan(request) -> str; then run(kernel, label=...) attaches it
to the next run started with executor "remote" and that label (or to run_id), answers every
proposal request, and returns the run's summary once the run ends. The kernel trusts nothing
it answers: it re-hashes, applies and tests every proposal in its sandbox.
"""

import json
import queue
import threading
from typing import Optional

import grpc

from warden_client import errors
from warden_client._gen import warden_pb2
from warden_client.kernel import Kernel, RunSummary, proposal_message


class Executor:
    """Base class of remote executors; one instance serves one run at a time."""

    def propose(self, step: dict, context: dict) -> str:
        """The change for `step` (the plan's BuildStep) given `context` ({"attempt", "plan_sha256",
        "base_commit", "files": {path: {"sha256", "content"}}, "refusals": [...]}): a Diff JSON
        or a patch. An exception becomes a failed attempt carrying its message."""
        raise NotImplementedError

    def learn(self, refusal: dict) -> None:
        """The kernel refused the last proposal: `refusal` is its RefusalReport."""

    def replan(self, request: dict) -> str:
        """A replacement BuildPlan (JSON text) after a step ran out of retries. `request` is
        {"plan", "failed_step", "completed_steps", "refusals"}; raising declines."""
        raise NotImplementedError("this executor cannot replan")

    def run(self, kernel: Kernel, run_id: Optional[str] = None, label: Optional[str] = None,
            heartbeat_s: float = 10.0) -> Optional[RunSummary]:
        """Serves one run: `run_id`, or the next run started for `label`. Returns the run's
        summary after it ends (None if the stream ended before attaching)."""
        if not run_id and not label:
            raise ValueError("give run_id or label")
        outbox: "queue.Queue" = queue.Queue()
        outbox.put(warden_pb2.ExecutorMessage(attach=warden_pb2.AttachRequest(run_id=run_id or "", label=label or "")))
        done = threading.Event()

        def messages():
            while True:
                message = outbox.get()
                if message is None:
                    return
                yield message

        def heartbeats():
            while not done.wait(heartbeat_s):
                outbox.put(warden_pb2.ExecutorMessage(heartbeat=warden_pb2.Heartbeat()))

        threading.Thread(target=heartbeats, daemon=True).start()
        attached = None
        try:
            for message in kernel._executor.Attach(messages(), metadata=kernel._metadata):
                kind = message.WhichOneof("message")
                if kind == "attached":
                    attached = message.attached.run_id
                elif kind == "proposal_request":
                    outbox.put(warden_pb2.ExecutorMessage(answer=self._answer(message.proposal_request)))
                elif kind == "refusal":
                    self.learn(json.loads(message.refusal.report_json))
                elif kind == "replan":
                    outbox.put(warden_pb2.ExecutorMessage(answer=self._replan(message.replan)))
                elif kind == "run_ended":
                    done.set()
                    outbox.put(None)  # half-close: the server ends the stream
        except grpc.RpcError as e:
            raise errors.from_rpc_error(e) from None
        finally:
            done.set()
            outbox.put(None)
        return kernel.run(attached) if attached else None

    def _answer(self, request) -> "warden_pb2.ProposalAnswer":
        try:
            text = self.propose(json.loads(request.step_json), json.loads(request.context_json))
            return warden_pb2.ProposalAnswer(request_id=request.request_id, proposal=proposal_message(text))
        except Exception as e:  # the executor's failure is the attempt's, not the stream's
            return warden_pb2.ProposalAnswer(request_id=request.request_id, error=f"{type(e).__name__}: {e}")

    def _replan(self, request) -> "warden_pb2.ProposalAnswer":
        try:
            plan = self.replan({"plan": json.loads(request.plan_json), "reason": request.reason})
            return warden_pb2.ProposalAnswer(request_id=request.request_id, plan_json=plan)
        except Exception as e:
            return warden_pb2.ProposalAnswer(request_id=request.request_id, error=f"{type(e).__name__}: {e}")
