"""A small typed client of the kernel service (`warden serve`, proto/warden.proto)."""

import base64
import hashlib
import json
from dataclasses import dataclass, field
from typing import Iterator, List, Optional, Tuple

import grpc

from warden_client import errors
from warden_client._gen import warden_pb2, warden_pb2_grpc
from warden_client._gen.health.v1 import health_pb2, health_pb2_grpc


@dataclass(frozen=True)
class Record:
    seq: int
    kind: str
    ts: int
    prev: str
    hash: str
    payload: dict


@dataclass(frozen=True)
class Checkpoint:
    size: int
    root: str
    note: str
    origin: str
    verifier_key: str


@dataclass(frozen=True)
class InclusionProof:
    seq: int
    tree_size: int
    leaf_hash: str
    root: str
    proof: List[str] = field(default_factory=list)


@dataclass(frozen=True)
class RunSummary:
    run_id: str
    kind: str          # build, propose, pipeline
    status: str        # live, completed, failed, cancelled, timeout
    started_ms: int
    steps_done: int
    steps_total: int
    reason: str        # why it failed or was cancelled


@dataclass(frozen=True)
class RunEvent:
    event_id: str
    run_id: str
    type: str          # run_started, step_started, tool_output, ..., run_completed
    timestamp_ms: int
    step_index: Optional[int]
    tool_name: str
    data: dict
    ledger_seq: int    # watch(run_id, from_seq=ledger_seq + 1) resumes after this event


@dataclass(frozen=True)
class Verdict:
    accepted: bool
    refusal_codes: List[str]
    report: Optional[dict]   # the refusal report, for a refusal
    commit: str              # the accepted commit, when accepted
    decision_seq: int


TERMINAL_EVENTS = ("run_completed", "run_failed", "run_cancelled")


def _summary(r) -> RunSummary:
    kind = warden_pb2.RunKind.Name(r.kind).replace("RUN_KIND_", "").lower()
    status = warden_pb2.RunStatus.Name(r.status).replace("RUN_STATUS_", "").lower()
    return RunSummary(r.run_id, kind, status, r.started_ms, r.steps_done, r.steps_total, r.reason)


def proposal_message(text: str):
    """A Proposal: a Diff JSON when `text` starts with '{' or '[' (after blanks), else a patch."""
    if text.lstrip()[:1] in ("{", "["):
        return warden_pb2.Proposal(diff_json=text)
    return warden_pb2.Proposal(patch=text)


@dataclass(frozen=True)
class ConsistencyProof:
    size1: int
    size2: int
    root1: str
    root2: str
    proof: List[str] = field(default_factory=list)


_SIGNATURE_PREFIX = "\u2014 "  # an em dash and a space: C2SP signed-note signature lines


def _verify_note(note: str, verifier_key: str) -> None:
    """Raises VerificationFailed unless `verifier_key` ("name+hash+base64 key", C2SP) signed
    `note`'s text."""
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    try:
        name, key_hash_hex, key_b64 = verifier_key.strip().split("+", 2)  # base64 may hold "+"
        key = base64.b64decode(key_b64, validate=True)
    except ValueError as e:
        raise errors.InvalidArgument("verifier key %r: %s" % (verifier_key, e)) from None
    if len(key) != 33 or key[0] != 1:
        raise errors.InvalidArgument("verifier key %r: not an Ed25519 key" % verifier_key)
    key_hash = hashlib.sha256(name.encode() + b"\n" + key).digest()[:4]
    if key_hash.hex() != key_hash_hex:
        raise errors.InvalidArgument("verifier key %r: its hash does not match its key" % verifier_key)
    text, sep, signatures = note.rpartition("\n\n")
    if not sep:
        raise errors.VerificationFailed("the checkpoint note has no signature lines")
    text += "\n"
    for line in signatures.splitlines():
        if not line.startswith(_SIGNATURE_PREFIX):
            continue
        signer, _, sig_b64 = line[len(_SIGNATURE_PREFIX):].rpartition(" ")
        try:
            sig = base64.b64decode(sig_b64, validate=True)
        except ValueError:
            continue
        if signer != name or len(sig) != 68 or sig[:4] != key_hash:
            continue
        try:
            Ed25519PublicKey.from_public_bytes(key[1:]).verify(sig[4:], text.encode())
            return
        except InvalidSignature:
            raise errors.VerificationFailed("the checkpoint's signature by %s does not verify" % name) from None
    raise errors.VerificationFailed("the checkpoint is not signed by %s" % name)


def _checked_checkpoint(c, verifier_key: Optional[str]) -> "Checkpoint":
    """The checkpoint as its signed note says it: size and root are read from the note's text,
    and the server's separate fields must agree (they are a convenience, not evidence)."""
    if verifier_key is not None:
        _verify_note(c.note, verifier_key)
    lines = c.note.split("\n")
    try:
        origin, size, root = lines[0], int(lines[1]), base64.b64decode(lines[2], validate=True).hex()
    except (IndexError, ValueError):
        raise errors.VerificationFailed("the checkpoint note is not a tlog checkpoint") from None
    if (origin, size, root) != (c.origin, c.size, c.root):
        raise errors.VerificationFailed(
            "the server's checkpoint fields (%s, %d, %s) disagree with its signed note (%s, %d, %s)"
            % (c.origin, c.size, c.root, origin, size, root))
    return Checkpoint(size, root, c.note, origin, c.verifier_key)


def _address(address: str) -> str:
    # A bare path is the server's unix socket.
    if address.startswith("/"):
        return "unix:" + address
    return address


class Kernel:
    """A connection to a kernel service.

    `address` is the server's socket path (`/var/lib/warden/warden.sock`) or a gRPC target
    (`unix:PATH`, `HOST:PORT`). Every method raises a warden_client.errors.WardenError
    subclass named after the status code when the server refuses the call.

    Over TCP (`warden serve --listen`), give `root_certificates`: the PEM bytes of the CA that
    issued the server's certificate (read the file yourself: `open("ca.pem", "rb").read()`);
    the channel is then TLS and the server's certificate must name the host in `address`. For
    mutual TLS (`--client-ca`) give also `private_key` and `certificate_chain`, the PEM bytes
    of this client's key and certificate. Without `root_certificates` the channel is
    plaintext, which a server allows only on its unix socket and on loopback
    (`--insecure-listen`). A server that refuses the handshake makes calls raise Unavailable.
    """

    def __init__(self, address: str, token: Optional[str] = None, timeout: float = 30.0, *,
                 root_certificates: Optional[bytes] = None, private_key: Optional[bytes] = None,
                 certificate_chain: Optional[bytes] = None):
        if (private_key is None) != (certificate_chain is None):
            raise ValueError("private_key and certificate_chain go together: the client's key and its certificate")
        if private_key is not None and root_certificates is None:
            raise ValueError("a client certificate is for TLS: give root_certificates too")
        for name, value in (("root_certificates", root_certificates), ("private_key", private_key),
                            ("certificate_chain", certificate_chain)):
            if value is not None and not isinstance(value, bytes):
                raise TypeError("%s: the PEM bytes, not %s (read the file: open(path, 'rb').read())"
                                % (name, type(value).__name__))
        if root_certificates is None:
            self._channel = grpc.insecure_channel(_address(address))
        else:
            credentials = grpc.ssl_channel_credentials(root_certificates=root_certificates, private_key=private_key,
                                                       certificate_chain=certificate_chain)
            self._channel = grpc.secure_channel(_address(address), credentials)
        self._metadata = (("authorization", "Bearer " + token),) if token else ()
        self._timeout = timeout
        self._ledger = warden_pb2_grpc.LedgerStub(self._channel)
        self._health = health_pb2_grpc.HealthStub(self._channel)
        self._kernel = warden_pb2_grpc.KernelStub(self._channel)
        self._executor = warden_pb2_grpc.ExecutorStub(self._channel)

    def close(self):
        self._channel.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _call(self, method, request):
        try:
            return method(request, timeout=self._timeout, metadata=self._metadata)
        except grpc.RpcError as e:
            raise errors.from_rpc_error(e) from None

    def health(self, service: str = "") -> str:
        """SERVING, NOT_SERVING or UNKNOWN for the server ("") or one service."""
        response = self._call(self._health.Check, health_pb2.HealthCheckRequest(service=service))
        return health_pb2.HealthCheckResponse.ServingStatus.Name(response.status)

    def checkpoint(self, verifier_key: Optional[str] = None) -> Checkpoint:
        """The newest signed checkpoint of the server's ledger, its size and root read from the
        signed note. Give `verifier_key` (your own copy of the ledger's, not the one the server
        reports) to have the note's signature checked too; VerificationFailed when it does not
        hold."""
        c = self._call(self._ledger.GetCheckpoint, warden_pb2.GetCheckpointRequest())
        return _checked_checkpoint(c, verifier_key)

    def prove(self, seq: int, tree_size: int = 0) -> InclusionProof:
        """The inclusion proof of record `seq` in the tree of `tree_size` (0: the current size)."""
        p = self._call(self._ledger.ProveInclusion, warden_pb2.ProveInclusionRequest(seq=seq, tree_size=tree_size))
        return InclusionProof(p.seq, p.tree_size, p.leaf_hash, p.root, list(p.proof))

    def prove_consistency(self, size1: int, size2: int = 0) -> ConsistencyProof:
        """The consistency proof between two tree sizes (size2 0: the current size)."""
        p = self._call(self._ledger.ProveConsistency, warden_pb2.ProveConsistencyRequest(size1=size1, size2=size2))
        return ConsistencyProof(p.size1, p.size2, p.root1, p.root2, list(p.proof))

    def records(self, kind: str = "", run_id: str = "", from_seq: int = 0, to_seq: int = 0) -> Iterator[Record]:
        """The ledger's records [from_seq, to_seq), optionally of one kind or one run."""
        request = warden_pb2.ListRecordsRequest(from_seq=from_seq, to_seq=to_seq, kind=kind, run_id=run_id)
        try:
            for r in self._ledger.ListRecords(request, timeout=self._timeout, metadata=self._metadata):
                yield Record(r.seq, r.kind, r.ts, r.prev, r.hash, json.loads(r.payload_json))
        except grpc.RpcError as e:
            raise errors.from_rpc_error(e) from None

    def blob(self, digest: str) -> bytes:
        """A blob's bytes, verified by the server against `digest` (sha256:<hex>)."""
        return self._call(self._ledger.GetBlob, warden_pb2.GetBlobRequest(digest=digest)).data

    def receipt(self, commit: str) -> dict:
        """The acceptance receipt of an accepted commit (40 hex): verify it offline with
        `warden receipt verify` and the ledger's verifier key."""
        return json.loads(self._call(self._ledger.GetReceipt, warden_pb2.GetReceiptRequest(commit=commit)).receipt_json)

    # Plans -------------------------------------------------------------------------------

    def generate_plan(self, blueprint_json: str) -> Tuple[str, str]:
        """The plan the server generates from a self-contained blueprint: (plan_json, plan_sha256)."""
        r = self._call(self._kernel.GeneratePlan, warden_pb2.GeneratePlanRequest(blueprint_json=blueprint_json))
        return r.plan_json, r.plan_sha256

    def verify_plan(self, plan_json: str, policy: str = "") -> List[str]:
        """What keeps the plan from being committed under `policy` (a built-in name or a policy's
        JSON; default the plan's): empty when nothing does."""
        r = self._call(self._kernel.VerifyPlan, warden_pb2.VerifyPlanRequest(plan_json=plan_json, policy=policy))
        return [] if r.ok else list(r.findings)

    def commit_plan(self, plan_json: str, policy: str = "") -> str:
        """Commits the plan to the server's ledger and returns its digest, for
        start_run(plan_sha256=...). A plan the policy refuses is recorded as refused and raises
        FailedPrecondition."""
        r = self._call(self._kernel.CommitPlan, warden_pb2.CommitPlanRequest(plan_json=plan_json, policy=policy))
        return r.plan_sha256

    # Runs --------------------------------------------------------------------------------

    def start_run(self, blueprint: Optional[str] = None, *, blueprint_json: Optional[str] = None,
                  plan_sha256: Optional[str] = None, repository: str = "", executor: str = "plan", label: str = "",
                  policy: str = "", clock: str = "", step_timeout_s: float = 0, executor_identity: str = "") -> str:
        """Starts a build run and returns its id once the run is recorded.

        Give one of: `blueprint`, a name the server serves (`warden serve --blueprints DIR`);
        `blueprint_json`, a self-contained one; `plan_sha256`, a plan committed to the server's
        ledger (commit_plan). `executor` is "plan", "command:CMD" (role admin) or "remote": then
        a warden_client.Executor attached with `label` proposes, with the token named
        `executor_identity` (default: this client's own)."""
        if sum(x is not None for x in (blueprint, blueprint_json, plan_sha256)) != 1:
            raise ValueError("give one of blueprint, blueprint_json or plan_sha256")
        request = warden_pb2.StartRunRequest(repository=repository, executor=executor, executor_label=label,
                                             policy=policy, clock=clock, step_timeout_ms=int(step_timeout_s * 1000),
                                             executor_identity=executor_identity)
        if blueprint is not None:
            request.blueprint = blueprint
        elif blueprint_json is not None:
            request.blueprint_json = blueprint_json
        else:
            request.plan_sha256 = plan_sha256
        return self._call(self._kernel.StartRun, request).run_id

    def run(self, run_id: str) -> RunSummary:
        """The run as the ledger records it now."""
        return _summary(self._call(self._kernel.GetRun, warden_pb2.GetRunRequest(run_id=run_id)))

    def runs(self, kind: str = "", live_only: bool = False) -> List[RunSummary]:
        """Every run of the server's ledger (optionally of one kind: build, propose, pipeline)."""
        k = warden_pb2.RunKind.Value("RUN_KIND_" + kind.upper()) if kind else 0
        response = self._call(self._kernel.ListRuns, warden_pb2.ListRunsRequest(kind=k, live_only=live_only))
        return [_summary(r) for r in response.runs]

    def cancel(self, run_id: str, reason: str = "", wait_s: Optional[float] = None) -> RunSummary:
        """Cancels a live run and returns it once its cancellation is recorded. The server waits
        wait_s seconds for that (default and most: 30); a run not ended by then raises
        DeadlineExceeded, and the cancel request stands."""
        request = warden_pb2.CancelRunRequest(run_id=run_id, reason=reason)
        if wait_s is not None:
            request.wait_ms = max(0, min(int(wait_s * 1000), 30_000))
        return _summary(self._call(self._kernel.CancelRun, request))

    def watch(self, run_id: str, from_seq: int = 0) -> Iterator[RunEvent]:
        """The run's events: its history first, then live, ending after the terminal event.
        After a disconnect, watch(run_id, last.ledger_seq + 1) misses nothing and repeats
        nothing."""
        request = warden_pb2.WatchRunRequest(run_id=run_id, from_seq=from_seq)
        try:
            for e in self._kernel.WatchRun(request, metadata=self._metadata):
                yield RunEvent(e.event_id, e.run_id, e.type, e.timestamp_ms, e.step_index if e.step_index >= 0 else None,
                               e.tool_name, json.loads(e.data_json or "{}"), e.ledger_seq)
        except grpc.RpcError as e:
            raise errors.from_rpc_error(e) from None

    def propose(self, run_id: str, step_id: str, attempt: int, proposal: str,
                idempotency_key: Optional[str] = None) -> Verdict:
        """Answers the proposal request run `run_id` waits on (step `step_id`, attempt
        `attempt`) with a Diff JSON or a patch, and returns the kernel's verdict. Retrying with
        the same `idempotency_key` returns the first verdict and records nothing more."""
        request = warden_pb2.ProposeRequest(run_id=run_id, step_id=step_id, attempt=attempt,
                                            proposal=proposal_message(proposal), idempotency_key=idempotency_key or "")
        try:
            v = self._executor.Propose(request, metadata=self._metadata)
        except grpc.RpcError as e:
            raise errors.from_rpc_error(e) from None
        return Verdict(v.accepted, list(v.refusal_codes), json.loads(v.report_json) if v.report_json else None,
                       v.commit, v.decision_seq)
