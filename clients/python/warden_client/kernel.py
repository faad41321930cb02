"""A small typed client of the kernel service (`warden serve`, proto/warden.proto)."""

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

    def checkpoint(self) -> Checkpoint:
        """The newest signed checkpoint of the server's ledger."""
        c = self._call(self._ledger.GetCheckpoint, warden_pb2.GetCheckpointRequest())
        return Checkpoint(c.size, c.root, c.note, c.origin, c.verifier_key)

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
