"""Run by tls_test against a live `warden serve --listen` (TLS, or mutual TLS when client
files are given): the warden_client package's TLS channel. Prints one line per check; exits
non-zero on the first failure.

Arguments: ADDRESS TOKEN CA_PEM OTHER_CA_PEM [CLIENT_CERT CLIENT_KEY OTHER_CLIENT_CERT OTHER_CLIENT_KEY]"""

import sys

from warden_client import Kernel, errors

address, token, ca, other_ca = sys.argv[1:5]
mutual = len(sys.argv) > 5


def read(path):
    with open(path, "rb") as f:
        return f.read()


def client_files(cert, key):
    return {"certificate_chain": read(cert), "private_key": read(key)}


def refused(expected, **kwargs):
    with Kernel(address, token, timeout=10, **kwargs) as kernel:
        try:
            list(kernel.records())
        except expected:
            return
    raise AssertionError("no %s with %s" % (expected.__name__, sorted(kwargs)))


mine = client_files(sys.argv[5], sys.argv[6]) if mutual else {}
with Kernel(address, token, root_certificates=read(ca), **mine) as kernel:
    assert kernel.health() == "SERVING"
    assert [r.seq for r in kernel.records()] == [0, 1, 2, 3, 4]
print("tls ok")

with Kernel(address, "not-a-token", root_certificates=read(ca), **mine) as kernel:
    try:
        list(kernel.records())
    except errors.Unauthenticated:
        pass
    else:
        raise AssertionError("a wrong token was accepted")
print("token checked over tls")

refused(errors.Unavailable, root_certificates=read(other_ca), **mine)
refused(errors.Unavailable)  # plaintext to a TLS port
print("wrong ca refused")

if mutual:
    refused(errors.Unavailable, root_certificates=read(ca))
    refused(errors.Unavailable, root_certificates=read(ca), **client_files(sys.argv[7], sys.argv[8]))
    print("client certificates checked")

for bad in [{"root_certificates": ca}, {"private_key": b"k"}]:
    try:
        Kernel(address, **bad)
    except (TypeError, ValueError):
        continue
    raise AssertionError("accepted %s" % sorted(bad))
print("arguments checked")
