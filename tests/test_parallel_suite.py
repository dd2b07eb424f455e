"""The suite's parallel run (tests/conftest.py, pyproject.toml's addopts): the tests under
tests/cluster/ all run on one xdist worker, and a process that a crashed worker left running is
stopped by the controller when the run ends."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import time
import tomllib

import pytest

from .helpers import REPO_ROOT

pytestmark = pytest.mark.slow
pytest.importorskip("xdist")

REPORTED = re.compile(r"^\[(gw\d+)\] .*?(PASSED|FAILED|ERROR|SKIPPED) (\S+)", re.M)


def _pytest(*args: str, cwd, timeout: float = 300) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    for name in [n for n in env if n.startswith(("PYTEST_XDIST_", "PYTEST_CURRENT_TEST"))]:
        del env[name]
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=timeout)


def test_the_default_run_is_parallel_with_the_cluster_group():
    with open(REPO_ROOT / "pyproject.toml", "rb") as f:
        addopts = tomllib.load(f)["tool"]["pytest"]["ini_options"]["addopts"].split()
    assert "--numprocesses=auto" in addopts and "--dist=loadgroup" in addopts


def test_the_cluster_tests_run_on_one_worker_and_the_rest_is_spread():
    # Two files of cheap tests: one under tests/cluster/ (no Ray started), one elsewhere.
    done = _pytest("-n", "2", "-v", "tests/cluster/test_cluster_spec.py", "tests/test_device_names.py",
                   cwd=REPO_ROOT)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    workers: dict[str, set[str]] = {}
    for worker, _, nodeid in REPORTED.findall(done.stdout):
        workers.setdefault("cluster" if nodeid.startswith("tests/cluster/") else "other", set()).add(worker)
    assert len(workers["cluster"]) == 1, workers              # one worker ran every cluster test
    assert workers["other"] - workers["cluster"], workers     # the other one ran the rest meanwhile


def test_a_process_left_by_a_crashed_worker_is_stopped_when_the_run_ends(tmp_path):
    pid_file = tmp_path / "orphan.pid"
    (tmp_path / "test_crash.py").write_text(textwrap.dedent(f"""
        import os, signal, subprocess

        def test_leave_a_process_then_crash():
            # `sleep` outlives the shell that started it, then its worker dies without cleaning up.
            subprocess.run(["sh", "-c", "sleep 300 & echo $! > {pid_file}"], check=True)
            os.kill(os.getpid(), signal.SIGKILL)
    """))
    (tmp_path / "conftest.py").write_text("from tests.conftest import *  # noqa: F401,F403\n")
    done = _pytest("-n", "1", "--dist=loadgroup", "--max-worker-restart=0",
                   "test_crash.py", cwd=tmp_path)
    pid = int(pid_file.read_text())
    assert done.returncode != 0 and "crashed" in done.stdout, done.stdout[-3000:]
    assert re.search(rf"stopped 1 process\(es\) the test workers left running: {pid} sleep", done.stdout), \
        done.stdout[-3000:] + done.stderr[-2000:]
    deadline = time.monotonic() + 10
    while os.path.exists(f"/proc/{pid}") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not os.path.exists(f"/proc/{pid}"), f"pid {pid} still there"
