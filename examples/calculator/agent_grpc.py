#!/usr/bin/env python3
"""The calculator built by a Python executor over gRPC: agent.py's proposals, served by a
long-lived process attached to `warden serve` instead of a command started per proposal.

    warden serve --state STATE --blueprints examples &
    python3 examples/calculator/agent_grpc.py STATE/warden.sock

It starts a run of the served blueprint "calculator" with executor "remote", attaches to it,
proposes every step as agent.py would (the same bytes: the ledger's decisions are the same as
with `--executor 'command:python3 agent.py'`), and prints the run's summary. Needs the
warden_client package (build/clients/python) on PYTHONPATH.
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import agent  # noqa: E402  (the proposals themselves)
from warden_client import Executor, Kernel  # noqa: E402


class CalculatorAgent(Executor):
    def propose(self, step: dict, context: dict) -> str:
        existing = context.get("files", {})
        proposal = agent.choose(step, context.get("refusals", []))
        files = [agent.file_change(path, proposal[path], existing.get(path)) for path in sorted(proposal)
                 if existing.get(path, {}).get("content") != proposal[path]]
        return json.dumps({"step_id": step["id"], "files": files}, sort_keys=True, ensure_ascii=False) + "\n"


def main() -> int:
    address = sys.argv[1] if len(sys.argv) > 1 else "warden.sock"
    token = os.environ.get("WARDEN_TOKEN")
    clock = os.environ.get("WARDEN_CLOCK", "")
    with Kernel(address, token=token) as kernel:
        run_id = kernel.start_run("calculator", executor="remote", label="calculator-py", clock=clock,
                                  repository=os.environ.get("WARDEN_REPOSITORY", ""))
        summary = CalculatorAgent().run(kernel, run_id=run_id)
    print(json.dumps(summary.__dict__, sort_keys=True))
    return 0 if summary.status == "completed" else 1


if __name__ == "__main__":
    sys.exit(main())
