"""Python client of Warden's kernel service (`warden serve`).

    from warden_client import Kernel
    with Kernel("/var/lib/warden/warden.sock") as kernel:
        print(kernel.health(), kernel.checkpoint().root)

Install it with `pip install ./clients/python` (clients/python/README.md). The gRPC client code
(warden_client._gen) is generated from proto/ by clients/python/regenerate and committed.
"""

from warden_client.errors import WardenError  # noqa: F401
from warden_client.executor import Executor  # noqa: F401
from warden_client.kernel import (  # noqa: F401
    Checkpoint, ConsistencyProof, InclusionProof, Kernel, Record, RunEvent, RunSummary, Verdict)
