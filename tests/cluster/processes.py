"""Processes for the cluster fault tests: dftool in a subprocess, its process tree, and checks that
nothing of it survives."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TASK_LINE = re.compile(r"task (?P<task>\S+): Ray node (?P<node>\S+) \((?P<ip>[^)]*)\), pid (?P<pid>\d+)")


def process_tree(root: int) -> set[int]:
    """`root` and every process descending from it (from `ps`: Ray's processes are children of
    the driver, workers children of the raylet)."""
    out = subprocess.run(["ps", "-eo", "pid=,ppid="], capture_output=True, text=True, check=True).stdout
    children: dict[int, list[int]] = {}
    for line in out.splitlines():
        pid, ppid = map(int, line.split())
        children.setdefault(ppid, []).append(pid)
    tree, frontier = {root}, [root]
    while frontier:
        for child in children.get(frontier.pop(), ()):
            if child not in tree:
                tree.add(child)
                frontier.append(child)
    return tree


def alive(pids: set[int]) -> set[int]:
    """The pids among `pids` still running (zombies count as gone)."""
    running = set()
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError, IndexError):
            continue
        if state != "Z":
            running.add(pid)
    return running


def wait_gone(pids: set[int], timeout: float = 15.0) -> set[int]:
    """Wait until none of `pids` runs; returns those still running after `timeout`."""
    deadline = time.monotonic() + timeout
    while alive(pids) and time.monotonic() < deadline:
        time.sleep(0.2)
    return alive(pids)


class Dftool:
    """`python -m cli.main ARGS` in the background, its stderr collected line by line."""

    def __init__(self, *args: str, env: dict | None = None):
        self.process = subprocess.Popen([sys.executable, "-m", "cli.main", *args], cwd=REPO,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                        env={**os.environ, **(env or {})})
        self.lines: list[str] = []
        self.error_at: float | None = None      # when the error line came
        self.tree: set[int] = {self.process.pid}
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            if line.startswith("error:") and self.error_at is None:
                self.error_at = time.monotonic()
            self.lines.append(line.rstrip("\n"))

    def tasks(self, count: int, timeout: float = 120.0) -> dict[str, dict]:
        """The task lines `-v` prints once the cluster is up: {task: {node, ip, pid}}."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = {m["task"]: {"node": m["node"], "ip": m["ip"], "pid": int(m["pid"])}
                     for line in list(self.lines) if (m := TASK_LINE.search(line))}
            if len(found) >= count:
                self.tree |= process_tree(self.process.pid)
                return found
            if self.process.poll() is not None:
                break
            time.sleep(0.1)
        raise AssertionError("the cluster did not come up:\n" + "\n".join(self.lines))

    def signal(self, signum: int = signal.SIGINT) -> None:
        self.tree |= process_tree(self.process.pid)
        self.process.send_signal(signum)

    def finish(self, timeout: float = 60.0) -> tuple[int, float, str]:
        """(exit code, seconds it took from now, the last stderr line)."""
        started = time.monotonic()
        self.tree |= process_tree(self.process.pid)
        code = self.process.wait(timeout=timeout)
        elapsed = time.monotonic() - started
        self._reader.join(timeout=5)
        return code, elapsed, self.lines[-1] if self.lines else ""

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        for pid in alive(self.tree):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
