"""Python client of Warden's kernel service (`warden serve`).

    from warden_client import Kernel
    with Kernel("/var/lib/warden/warden.sock") as kernel:
        print(kernel.health(), kernel.checkpoint().root)

The gRPC client code (warden_client._gen) is generated from proto/warden.proto when Warden is
built (CMake target python_client); nothing comes from another package registry.
"""

from warden_client.errors import WardenError  # noqa: F401
from warden_client.executor import Executor  # noqa: F401
from warden_client.kernel import (  # noqa: F401
    Checkpoint, ConsistencyProof, InclusionProof, Kernel, Record, RunEvent, RunSummary, Verdict)
