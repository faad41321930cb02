"""Run by python_client_test against a live `warden serve`: the warden_client package's calls
and its exception classes. Prints one line per check; exits non-zero on the first failure."""

import hashlib
import sys
from types import SimpleNamespace

from warden_client import Kernel, errors
from warden_client.kernel import _checked_checkpoint

socket_path, expected_records, verifier_key, other_key = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]

with Kernel(socket_path) as kernel:
    assert kernel.health() == "SERVING", kernel.health()
    assert kernel.health("warden.v1.Ledger") == "SERVING"
    print("health ok")

    records = list(kernel.records())
    assert [r.seq for r in records] == list(range(expected_records)), [r.seq for r in records]
    assert all(r.payload == {"n": r.seq} for r in records), records
    assert [r.seq for r in kernel.records(kind="odd")] == [s for s in range(expected_records) if s % 2]
    print("records ok")

    cp = kernel.checkpoint(verifier_key=verifier_key)
    assert cp.size == expected_records and len(cp.root) == 64, cp
    print("checkpoint ok")

    # What a lying server could send: the note signed by someone else, fields that disagree
    # with the signed note, a note whose text was changed after signing.
    def refused(call):
        try:
            call()
        except errors.VerificationFailed as e:
            return str(e)
        raise AssertionError("accepted")

    refused(lambda: kernel.checkpoint(verifier_key=other_key))
    raw = SimpleNamespace(size=cp.size, root=cp.root, note=cp.note, origin=cp.origin, verifier_key=cp.verifier_key)
    _checked_checkpoint(raw, verifier_key)
    refused(lambda: _checked_checkpoint(SimpleNamespace(**{**vars(raw), "root": "00" * 32}), None))
    refused(lambda: _checked_checkpoint(SimpleNamespace(**{**vars(raw), "size": cp.size + 1}), None))
    edited = cp.note.replace("\n%d\n" % cp.size, "\n%d\n" % (cp.size + 1), 1)
    assert edited != cp.note
    refused(lambda: _checked_checkpoint(SimpleNamespace(**{**vars(raw), "note": edited, "size": cp.size + 1}),
                                        verifier_key))
    print("lies refused")

    # An inclusion proof recomputed here (RFC 9162 2.1.3.2) reaches the checkpoint's root.
    def node(left, right):
        return hashlib.sha256(b"\x01" + bytes.fromhex(left) + bytes.fromhex(right)).hexdigest()

    def root_from(index, size, leaf, path):
        fn, sn, r = index, size - 1, leaf
        for p in path:
            if sn == 0:
                return None
            if fn & 1 or fn == sn:
                r = node(p, r)
                while fn & 1 == 0 and fn != 0:
                    fn >>= 1
                    sn >>= 1
            else:
                r = node(r, p)
            fn >>= 1
            sn >>= 1
        return r if sn == 0 else None

    for seq in range(expected_records):
        p = kernel.prove(seq, cp.size)
        assert p.leaf_hash == records[seq].hash
        assert root_from(seq, cp.size, p.leaf_hash, p.proof) == cp.root, (seq, p)
    print("proofs ok")

    for call, expected in [
        (lambda: kernel.blob("sha256:" + "0" * 64), errors.NotFound),
        (lambda: kernel.blob("not a digest"), errors.InvalidArgument),
        (lambda: kernel.prove(expected_records + 5), errors.InvalidArgument),
        (lambda: list(kernel.records(run_id="no-such-run")), errors.NotFound),
    ]:
        try:
            call()
        except expected as e:
            assert e.message, e
        else:
            raise AssertionError("no %s" % expected.__name__)
    print("errors ok")
