#!/usr/bin/env python3
"""An example external executor for `warden build --executor 'command:python3 agent.py'`.

It speaks the command executor's protocol (executor/proposer.h). Asked for a step, it gets
one JSON object on stdin,
  {"step": <BuildStep JSON>,
   "context": {"attempt": N, "plan_sha256": "sha256:<hex>", "base_commit": "<hex>",
               "files": {path: {"sha256": "sha256:<hex>", "content": "..."}},
               "refusals": [<RefusalReport JSON>...]}}
where "files" holds the current contents of the step's targets that exist and "refusals"
the kernel's refusals so far (each names its "step_id"); it answers with one Diff JSON on
stdout, {"step_id": ..., "files": [...]}, every file with its full post-image.
"diff_sha256" is optional: the kernel computes the digest it records, and refuses one that
is given and wrong (hash_mismatch); it re-derives and checks every other hash either way.

Asked for a replacement plan after a step ran out of retries ({"replan": {...}} on stdin), it
declines: exit 1 with the reason on stderr, and the kernel ends the run as failed. So does a
step that carries no content to propose.

What it proposes is what the built-in plan executor would: the step's drafts first, one per
refusal of this step received, then the step's own content. A real agent would read the
refusals' reason codes and write better code; this one only shows the protocol, with the
standard library alone.
"""

import hashlib
import json
import sys


def digest(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def choose(step: dict, refusals: list) -> dict:
    """Draft number (this step's refusals) while drafts remain, then the content."""
    versions = list(step.get("drafts", []))
    if step.get("content") is not None:
        versions.append(step["content"])
    if not versions:
        raise SystemExit(f"agent.py: step {step.get('id')} has no content to propose")
    mine = [r for r in refusals if r.get("step_id") == step.get("id")]
    return versions[min(len(mine), len(versions) - 1)]


def file_change(path: str, content: str, current: dict | None) -> dict:
    change = {"path": path, "new_mode": "100644", "after_sha256": digest(content), "after_content": content}
    if current is None:
        change["op"] = "add"
    else:
        change.update(op="modify", old_mode="100644", before_sha256=current["sha256"])
    return change


def main() -> None:
    request = json.load(sys.stdin)
    if "replan" in request:
        raise SystemExit("agent.py: cannot write a replacement plan for step "
                         f"{request['replan'].get('failed_step')}")
    step, context = request["step"], request.get("context", {})
    existing = context.get("files", {})
    proposal = choose(step, context.get("refusals", []))
    files = [file_change(path, proposal[path], existing.get(path))
             for path in sorted(proposal)
             if existing.get(path, {}).get("content") != proposal[path]]
    json.dump({"step_id": step["id"], "files": files}, sys.stdout, sort_keys=True, ensure_ascii=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
