#!/usr/bin/env python3
"""Runs the runnable code blocks of Warden's documentation as a reader would paste them.

A block is runnable when the line right before its opening fence is an HTML comment
`<!-- runnable -->`, optionally with options after a colon:

    <!-- runnable: exit=1 cd=root background wait-for=warden-out/state/warden.sock -->

  exit=N         the block must exit N (default 0)
  cd=root        start the block at the root of the checkout (default: where the last one ended)
  background     the block may leave processes running (a server started with `&`): they are
                 stopped with SIGTERM when the file's blocks are done, and must exit 0
  wait-for=PATH  after the block, wait until PATH (relative to where the block ended) exists
  timeout=S      seconds the block may take (default 300)
  python=PATH    a python block's interpreter (default python3 from PATH; relative to the
                 block's directory, e.g. .venv/bin/python3)

Languages: sh, bash, shell (run by bash with `set -eo pipefail`, so the first failing line
ends the block) and python. Every markdown file runs in a fresh copy of the repository: a
`git clone` of the source tree with its uncommitted changes laid over it. Its blocks run in
order like one terminal session: each starts in the directory the previous one ended in, with
the variables it exported. HOME is a fresh directory with a git identity; PATH is the build
directory, then Debian's default PATH; WARDEN_BUILD_DIR is the build directory, so `./warden`
uses (and incrementally updates) the binaries there instead of building a tree of its own.
No process outlives the run, and the temporary directories are removed (--keep keeps them).

Usage: run_snippets.py --source DIR --build DIR [--keep] [--list] FILE...  (FILE relative to DIR)
"""
import argparse
import ctypes
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

MARKER = re.compile(r"^\s*<!--\s*runnable(?:\s*:\s*(.*?))?\s*-->\s*$")
FENCE_OPEN = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([^\s`]*)")
LANGUAGES = {"sh": "sh", "bash": "sh", "shell": "sh", "python": "python", "python3": "python", "py": "python"}
DEBIAN_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
DEFAULT_TIMEOUT = 300.0
STOP_TIMEOUT = 60.0


class SnippetError(Exception):
    pass


class Block:
    def __init__(self, path, line, language, code, options):
        self.path, self.line, self.language, self.code = path, line, language, code
        self.exit = 0
        self.cd_root = False
        self.background = False
        self.wait_for = None
        self.timeout = DEFAULT_TIMEOUT
        self.python = "python3"
        for option in options.split():
            key, _, value = option.partition("=")
            if key == "exit" and value.isdigit():
                self.exit = int(value)
            elif key == "cd" and value == "root":
                self.cd_root = True
            elif key == "background" and not value:
                self.background = True
            elif key == "wait-for" and value:
                self.wait_for = value
            elif key == "timeout" and value:
                self.timeout = float(value)
            elif key == "python" and value:
                self.python = value
            else:
                raise SnippetError(f"{path}:{line - 1}: unknown runnable option {option!r}")

    def where(self):
        return f"{self.path}:{self.line}"


def parse(path, text):
    """The runnable blocks of a markdown file. A marker inside a fenced block is text."""
    blocks = []
    lines = text.split("\n")
    i = 0
    pending = None  # (line number, options) of a marker waiting for its fence
    while i < len(lines):
        line = lines[i]
        fence = FENCE_OPEN.match(line)
        if fence:
            indent, ticks, info = fence.groups()
            close = re.compile(r"^\s*" + re.escape(ticks[0]) + "{" + str(len(ticks)) + r",}\s*$")
            start = i + 1
            j = start
            while j < len(lines) and not close.match(lines[j]):
                j += 1
            if j == len(lines):
                raise SnippetError(f"{path}:{i + 1}: the fence opened here is never closed")
            if pending is not None:
                language = LANGUAGES.get(info.lower())
                if language is None:
                    raise SnippetError(f"{path}:{i + 1}: a runnable block must be sh, bash, shell or python, "
                                       f"not {info!r}")
                body = [l[len(indent):] if l.startswith(indent) else l for l in lines[start:j]]
                blocks.append(Block(path, i + 1, language, "\n".join(body) + "\n", pending[1]))
                pending = None
            i = j + 1
            continue
        if pending is not None:
            raise SnippetError(f"{path}:{pending[0]}: a runnable marker must be on the line right before a fence")
        marker = MARKER.match(line)
        if marker:
            pending = (i + 1, marker.group(1) or "")
        i += 1
    if pending is not None:
        raise SnippetError(f"{path}:{pending[0]}: a runnable marker must be on the line right before a fence")
    return blocks


def become_subreaper():
    """Processes a block leaves behind (a server started with `&`) become our children when
    its shell exits, so they can be waited for and none is left to the host's init."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        pass


def group_alive(pgid):
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def group_members(pgid):
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()
        if len(fields) > 2 and int(fields[2]) == pgid and fields[0] != "Z":
            pids.append(int(entry))
    return pids


def reap(statuses):
    """Collects every child that has exited (our own and the orphans we inherited)."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        statuses[pid] = status


def stop_group(pgid, statuses, expect_clean):
    """SIGTERM to a process group, then wait for every member; SIGKILL after STOP_TIMEOUT.
    Returns problems (empty when every member we could wait for exited 0)."""
    problems = []
    members = group_members(pgid)
    try:
        os.killpg(pgid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    deadline = time.monotonic() + STOP_TIMEOUT
    while group_alive(pgid) and time.monotonic() < deadline:
        reap(statuses)
        time.sleep(0.05)
    reap(statuses)
    if group_alive(pgid):
        problems.append(f"processes {group_members(pgid)} did not stop within {STOP_TIMEOUT:.0f} s of SIGTERM: killed")
        try:
            os.killpg(pgid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        while group_alive(pgid):
            reap(statuses)
            time.sleep(0.05)
    reap(statuses)
    if expect_clean:
        for pid in members:
            status = statuses.get(pid)
            if status is not None and os.waitstatus_to_exitcode(status) != 0:
                problems.append(f"process {pid} exited {os.waitstatus_to_exitcode(status)} after SIGTERM")
    return problems


class Session:
    """One markdown file's run: a fresh checkout, a HOME, and the state blocks pass on."""

    def __init__(self, source, build, tmp, name):
        self.root = os.path.join(tmp, "warden")
        self.home = os.path.join(tmp, "home")
        self.state = os.path.join(tmp, "state")
        self.tmp = tmp
        os.makedirs(self.home)
        os.makedirs(self.state)
        copy_checkout(source, self.root)
        with open(os.path.join(self.home, ".gitconfig"), "w") as f:
            f.write("[user]\n\tname = Snippet Reader\n\temail = reader@example.com\n"
                    "[init]\n\tdefaultBranch = main\n")
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("GIT_", "PYTHON", "VIRTUAL_ENV", "PYENV", "WARDEN_"))}
        env.update(HOME=self.home, PATH=build + ":" + DEBIAN_PATH, WARDEN_BUILD_DIR=build,
                   TMPDIR=env.get("TMPDIR", "/tmp"))
        self.env = env
        self.cwd = self.root
        self.background = []  # process groups to stop at the end
        self.statuses = {}
        self.count = 0

    def run(self, block):
        self.count += 1
        cwd = self.root if block.cd_root else self.cwd
        log_path = os.path.join(self.tmp, f"block-{self.count}.log")
        env = dict(self.env, PWD=cwd)
        if block.language == "sh":
            script = os.path.join(self.tmp, f"block-{self.count}.sh")
            out_pwd = os.path.join(self.state, "pwd")
            out_env = os.path.join(self.state, "env")
            with open(script, "w") as f:
                f.write("__snippet_end() { __snippet_rc=$?; pwd > '%s'; env -0 > '%s'; exit $__snippet_rc; }\n"
                        "trap __snippet_end EXIT\nset -eo pipefail\n" % (out_pwd, out_env))
                f.write(block.code)
            argv = ["bash", script]
        else:
            script = os.path.join(self.tmp, f"block-{self.count}.py")
            with open(script, "w") as f:
                f.write(block.code)
            interpreter = block.python
            if "/" in interpreter:
                interpreter = os.path.join(cwd, interpreter)
            else:
                interpreter = shutil.which(interpreter, path=env["PATH"]) or interpreter
            argv = [interpreter, script]
        started = time.monotonic()
        with open(log_path, "wb") as log:
            process = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=log,
                                       stderr=subprocess.STDOUT, start_new_session=True)
            try:
                rc = process.wait(timeout=block.timeout)
            except subprocess.TimeoutExpired:
                stop_group(process.pid, self.statuses, expect_clean=False)
                process.wait()
                raise self.failure(block, log_path, f"still running after {block.timeout:.0f} s: stopped")
        if block.language == "sh":
            self.load_state()
        problems = []
        if rc != block.exit:
            problems.append(f"exit status {rc}, expected {block.exit}")
        if group_alive(process.pid):
            if block.background and not problems:
                self.background.append(process.pid)
            else:
                what = "left processes running" if not block.background else "failed with processes running"
                problems.append(what + ": stopped")
                problems += stop_group(process.pid, self.statuses, expect_clean=False)
        if block.wait_for and not problems:
            target = os.path.join(self.cwd, block.wait_for)
            deadline = started + block.timeout
            while not os.path.exists(target):
                if time.monotonic() > deadline:
                    problems.append(f"{block.wait_for} did not appear within {block.timeout:.0f} s")
                    break
                if block.background and not group_alive(process.pid):
                    problems.append(f"its processes ended before {block.wait_for} appeared")
                    break
                reap(self.statuses)
                time.sleep(0.1)
        if problems:
            raise self.failure(block, log_path, "; ".join(problems))
        return time.monotonic() - started

    def load_state(self):
        try:
            with open(os.path.join(self.state, "pwd")) as f:
                cwd = f.read().strip()
            with open(os.path.join(self.state, "env"), "rb") as f:
                entries = f.read().split(b"\0")
        except OSError:
            return
        if os.path.isdir(cwd):
            self.cwd = cwd
        env = {}
        for entry in entries:
            key, sep, value = entry.decode("utf-8", "surrogateescape").partition("=")
            if sep and key not in ("_", "SHLVL", "PWD", "OLDPWD"):
                env[key] = value
        if env:
            self.env = env

    def failure(self, block, log_path, why):
        with open(log_path, "rb") as f:
            output = f.read().decode("utf-8", "replace").splitlines()
        shown = output[-80:]
        text = [f"{block.where()}: FAILED: {why}", "  the block:"]
        text += ["    | " + l for l in block.code.rstrip("\n").split("\n")]
        text.append(f"  its output (last {len(shown)} of {len(output)} lines):")
        text += ["    > " + l for l in shown]
        return SnippetError("\n".join(text))

    def close(self):
        problems = []
        for pgid in reversed(self.background):
            problems += [f"a background process: {p}" for p in stop_group(pgid, self.statuses, expect_clean=True)]
        self.background = []
        reap(self.statuses)
        return problems


def copy_checkout(source, dest):
    """A fresh copy of the source tree: a clone of its commit with the working tree's
    uncommitted changes (modified, deleted and untracked files) laid over it."""
    if not os.path.isdir(os.path.join(source, ".git")):
        shutil.copytree(source, dest, symlinks=True,
                        ignore=shutil.ignore_patterns("build*", "warden-out", ".cache"))
        return
    subprocess.run(["git", "clone", "-q", "--no-local", source, dest], check=True,
                   stdout=subprocess.DEVNULL)
    listing = subprocess.run(["git", "-C", source, "ls-files", "-z", "-m", "-d", "-o", "--exclude-standard"],
                             check=True, stdout=subprocess.PIPE).stdout
    for name in sorted(set(p for p in listing.decode("utf-8", "surrogateescape").split("\0") if p)):
        src, dst = os.path.join(source, name), os.path.join(dest, name)
        if os.path.lexists(src) and not os.path.isdir(src):
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            if os.path.lexists(dst):
                os.remove(dst)
            shutil.copy2(src, dst, follow_symlinks=False)
        elif not os.path.lexists(src) and os.path.lexists(dst) and not os.path.isdir(dst):
            os.remove(dst)


def run_file(source, build, name, keep):
    path = os.path.join(source, name)
    with open(path, encoding="utf-8") as f:
        blocks = parse(name, f.read())
    if not blocks:
        print(f"{name}: no runnable blocks")
        return True
    tmp = tempfile.mkdtemp(prefix="warden-snippets-")
    session = None
    ok = True
    try:
        session = Session(source, build, tmp, name)
        for block in blocks:
            seconds = session.run(block)
            print(f"{block.where()}: {block.language} block ok ({seconds:.1f} s)", flush=True)
    except SnippetError as e:
        print(e, flush=True)
        ok = False
    except (OSError, subprocess.CalledProcessError) as e:
        print(f"{name}: could not copy the repository: {e}", flush=True)
        ok = False
    finally:
        if session is not None:
            for problem in session.close():
                print(f"{name}: {problem}", flush=True)
                ok = False
        if keep:
            print(f"{name}: kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return ok


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--source", required=True, help="the repository's source tree")
    parser.add_argument("--build", required=True, help="the CMake build directory with warden and warden-grpc")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directories")
    parser.add_argument("--list", action="store_true", help="list the runnable blocks and exit")
    parser.add_argument("files", nargs="+", help="markdown files, relative to --source")
    args = parser.parse_args()
    source, build = os.path.abspath(args.source), os.path.abspath(args.build)
    if args.list:
        for name in args.files:
            with open(os.path.join(source, name), encoding="utf-8") as f:
                for block in parse(name, f.read()):
                    print(f"{block.where()}: {block.language}")
        return 0
    become_subreaper()
    ok = True
    started = time.monotonic()
    for name in args.files:
        try:
            ok = run_file(source, build, name, args.keep) and ok
        except SnippetError as e:
            print(e)
            ok = False
    print(f"{'ok' if ok else 'FAILED'} in {time.monotonic() - started:.1f} s")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
