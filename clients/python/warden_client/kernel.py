"""A small typed client of the kernel service (`warden serve`, proto/warden.proto)."""

import base64
import hashlib
import json
from dataclasses import dataclass, field
from typing import Iterator, List, Optional

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
    """

    def __init__(self, address: str, token: Optional[str] = None, timeout: float = 30.0):
        self._channel = grpc.insecure_channel(_address(address))
        self._metadata = (("authorization", "Bearer " + token),) if token else ()
        self._timeout = timeout
        self._ledger = warden_pb2_grpc.LedgerStub(self._channel)
        self._health = health_pb2_grpc.HealthStub(self._channel)

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
