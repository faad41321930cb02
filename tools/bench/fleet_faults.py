#!/usr/bin/env python3
"""The fleet under faults, measured on real processes in one run:

  1. kill -> restart elsewhere: a `warden runner` killed (SIGKILL) while it holds a check
     task; the time from the kill to the task's next assignment (the server's `assigned`
     fleet event, by the server's clock, against the kill's time on the same machine's clock).
     Median and max over --trials kills (the issue that asked for it saw ~100 ms).
  2. server restart -> its orphaned task handled: a server killed (SIGKILL) with a check task
     queued for its runners; the time from its restart to the fleet event that disposes of
     the task (expired, or withdrawn by the runner that took it).
  3. store keys: the Redis keys under the fleet's prefix before and after --crashes server
     crashes mid-build, each followed by a restart (the bound is: no growth).

Both servers use a Redis started here (appendonly), so section 3 can count its keys.

    tools/bench/fleet_faults.py [--build DIR] [--trials N] [--crashes N] [--json]

DIR holds `warden` and `warden-grpc` (default: build/). Exit 0 when every figure was
measured and the store did not grow, 1 when it grew, 2 when something could not run.
"""

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class Bench:
    def __init__(self, build, tmp):
        self.warden = os.path.join(build, "warden")
        self.tmp = tmp
        self.procs = []
        self.blueprints = os.path.join(tmp, "blueprints")
        os.makedirs(self.blueprints)
        # The calculator whose package sleeps a second on import: every check run lasts
        # long enough to be caught holding a task.
        slow = os.path.join(tmp, "slowcalc")
        shutil.copytree(os.path.join(ROOT, "examples", "calculator"), slow)
        init = os.path.join(slow, "files", "src", "calculator", "__init__.py")
        with open(init) as f:
            body = f.read()
        with open(init, "w") as f:
            f.write("import time\ntime.sleep(1)\n" + body)
        os.symlink(slow, os.path.join(self.blueprints, "calculator"))
        self.redis_dir = os.path.join(tmp, "redis")
        os.makedirs(self.redis_dir)
        self.redis_sock = os.path.join(self.redis_dir, "redis.sock")

    def spawn(self, argv, **kw):
        p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **kw)
        self.procs.append(p)
        return p

    def stop_all(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
        for p in self.procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                pass

    def redis(self):
        p = self.spawn(["redis-server", "--port", "0", "--unixsocket", self.redis_sock, "--unixsocketperm", "700",
                        "--dir", self.redis_dir, "--appendonly", "yes", "--save", ""])
        for _ in range(200):
            if self.redis_cli("PING") == "PONG":
                return p
            time.sleep(0.05)
        raise RuntimeError("redis-server did not answer")

    def redis_cli(self, *args):
        r = subprocess.run(["redis-cli", "-s", self.redis_sock, *args], capture_output=True, text=True)
        return r.stdout.strip()

    def keys(self):
        out = self.redis_cli("--scan", "--pattern", "warden:*")
        return sorted(k for k in out.splitlines() if k)

    def serve(self, state):
        os.makedirs(state, mode=0o700, exist_ok=True)
        p = self.spawn([self.warden, "serve", "--state", state, "--blueprints", self.blueprints,
                        "--store", "unix:" + self.redis_sock])
        sock = os.path.join(state, "warden.sock")
        for _ in range(1200):
            if os.path.exists(sock) and self.cli(["agents", "list", "--server", sock, "--json"]) is not None:
                return p
            if p.poll() is not None:
                raise RuntimeError("warden serve exited " + str(p.returncode))
            time.sleep(0.05)
        raise RuntimeError("warden serve did not listen")

    def runner(self, sock, name):
        d = os.path.join(self.tmp, name)
        os.makedirs(d, mode=0o700, exist_ok=True)
        return self.spawn([self.warden, "runner", "--server", sock, "--state", d, "--id", name])

    def cli(self, args):
        r = subprocess.run([self.warden, *args], capture_output=True, text=True)
        if r.returncode != 0:
            return None
        return [json.loads(line) for line in r.stdout.splitlines() if line.strip()]

    def agents(self, sock):
        lines = self.cli(["agents", "list", "--server", sock, "--json"]) or []
        return {l["id"]: l for l in lines if l.get("type") == "agent"}

    def build(self, sock, repository):
        return self.spawn([self.warden, "build", "calculator", "--server", sock, "--repository", repository,
                           "--checks-on", "runners", "--json"])

    def fleet_events(self, ledger):
        lines = self.cli(["ledger", "show", ledger, "--kind", "fleet_event", "--json"]) or []
        return [l["payload"]["event"] for l in lines if l.get("type") == "record"]


def now_ms():
    return int(time.time() * 1000)


def kill_to_restart(b, trials):
    state = os.path.join(b.tmp, "state-kill")
    b.serve(state)
    sock = os.path.join(state, "warden.sock")
    a = b.runner(sock, "runner-a")
    b.runner(sock, "runner-b")
    kills = []  # (task, kill ms)
    builds = 0
    # A runner killed often is held out a while by its restart policy (backoff, breaker): the
    # other runner does that build's work, so it may take several builds to catch 20.
    while len(kills) < trials and builds < 8 * trials:
        builds += 1
        build = b.build(sock, "calc-%d" % builds)
        seen = set()
        while build.poll() is None and len(kills) < trials:
            task = b.agents(sock).get("runner-a", {}).get("task_id", "")
            if task and task not in seen:
                seen.add(task)
                a.kill()
                kills.append((task, now_ms()))
                a.wait()
                a = b.runner(sock, "runner-a")
            time.sleep(0.01)
        build.wait()
    events = b.fleet_events(os.path.join(state, "ledger"))
    delays = []
    for task, at in kills:
        after = [e["at_ms"] for e in events if e.get("type") == "assigned" and e.get("task") == task and e["at_ms"] >= at]
        if after:
            delays.append(min(after) - at)
    return {"trials": len(delays), "median_ms": statistics.median(delays) if delays else None,
            "max_ms": max(delays) if delays else None, "builds": builds}


def crashes(b, n):
    state = os.path.join(b.tmp, "state-crash")
    server = b.serve(state)
    sock = os.path.join(state, "warden.sock")
    b.runner(sock, "runner-c")
    # One build first, so every key a working fleet keeps exists before the count.
    first = b.build(sock, "warm")
    first.wait()
    before = b.keys()
    handled = []
    orphans = []
    for i in range(n):
        build = b.build(sock, "crash-%d" % i)
        deadline = time.time() + 60
        while time.time() < deadline and not b.agents(sock).get("runner-c", {}).get("task_id"):
            time.sleep(0.01)
        server.kill()
        server.wait()
        build.kill()
        build.wait()
        # Tasks the dead server left: ready or claimed (a kill that lands just after a result
        # was taken leaves none).
        left = int(b.redis_cli("ZCARD", "warden:ready") or 0) + int(b.redis_cli("ZCARD", "warden:leases") or 0)
        orphans.append(left)
        restarted = now_ms()
        server = b.serve(state)
        if left == 0:
            continue
        # The task in flight when the server died: its claim lapses or the runner gives it
        # back, and the restarted server disposes of it with an event.
        deadline = time.time() + 120
        took = None
        while time.time() < deadline and took is None:
            for e in b.fleet_events(os.path.join(state, "ledger")):
                if e.get("type") in ("expired", "withdrawn") and e["at_ms"] >= restarted:
                    took = e["at_ms"] - restarted
                    break
            time.sleep(0.2)
        handled.append(took)
    time.sleep(2)
    after = b.keys()
    queued = b.redis_cli("ZCARD", "warden:ready")
    measured = [h for h in handled if h is not None]
    return {"crashes": n, "keys_before": len(before), "keys_after": len(after),
            "new_keys": sorted(set(after) - set(before)), "ready_after": int(queued or 0),
            "restart_to_disposed_median_ms": statistics.median(measured) if measured else None,
            "restart_to_disposed_max_ms": max(measured) if measured else None,
            "disposed": len(measured), "crashes_that_left_a_task": sum(1 for o in orphans if o)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--crashes", type=int, default=20)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="warden-fleet-bench-")
    b = Bench(os.path.abspath(args.build), tmp)
    try:
        b.redis()
        kill = kill_to_restart(b, args.trials)
        crash = crashes(b, args.crashes)
    except (RuntimeError, OSError) as e:
        print("fleet_faults: " + str(e), file=sys.stderr)
        return 2
    finally:
        b.stop_all()
        shutil.rmtree(tmp, ignore_errors=True)
    out = {"kill_to_reassigned": kill, "server_crashes": crash}
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        print("runner killed holding a task -> task assigned again: median %s ms, max %s ms over %d kills (%d builds)"
              % (kill["median_ms"], kill["max_ms"], kill["trials"], kill["builds"]))
        print("server restart -> its orphaned task expired or withdrawn: median %s ms, max %s ms (%d disposed of; "
              "%d of %d crashes left a task)"
              % (crash["restart_to_disposed_median_ms"], crash["restart_to_disposed_max_ms"], crash["disposed"],
                 crash["crashes_that_left_a_task"], crash["crashes"]))
        print("store keys: %d before, %d after %d server crashes mid-build; %d tasks ready after; new keys: %s"
              % (crash["keys_before"], crash["keys_after"], crash["crashes"], crash["ready_after"],
                 ", ".join(crash["new_keys"]) or "none"))
    grew = crash["keys_after"] > crash["keys_before"] or crash["ready_after"] > 0
    return 1 if grew else 0


if __name__ == "__main__":
    sys.exit(main())
