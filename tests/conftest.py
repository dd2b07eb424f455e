"""The suite runs in parallel with pytest-xdist (pyproject.toml's addopts:
`--numprocesses=auto --dist=loadgroup`).

- Every test under tests/cluster/ (where the `cluster` tests must live) goes to one group of
  the scheduler, so one worker runs them all: one private Ray instance (the session fixtures of tests/cluster/conftest.py) starts,
  and the timing-sensitive fault tests share the machine with the other workers (one per core;
  `auto` adds one worker for the cluster tests, which mostly wait on Ray).
  Everything else is load-balanced test by test.
- The controller becomes the child subreaper of its workers' process trees (Linux): a Ray
  process orphaned by a worker that crashed (SIGKILL, segfault: no fixture finalizer ran, and
  Ray's dashboard and runtime-env agents outlive their driver then) is adopted by the controller
  instead of init, and stopped when the run ends.
- Without xdist (`-p no:xdist`, or it is not installed) `--numprocesses` and `--dist` are still
  accepted (so the addopts parse) and ignored: the tests run in this process. `-n 0` runs them in this process
  with xdist loaded.
"""
from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import time
from pathlib import Path

import pytest

from tests.cluster.processes import alive, process_tree

CLUSTER_GROUP = "cluster"
CLUSTER_DIR = Path(__file__).resolve().parent / "cluster"
PR_SET_CHILD_SUBREAPER = 36     # <linux/prctl.h>
STOP_GRACE_S = 5.0              # SIGTERM, then this long before SIGKILL


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    if pluginmanager.hasplugin("xdist"):
        return
    group = parser.getgroup("xdist", "pytest-xdist is not loaded: the tests run in this process")
    group.addoption("--numprocesses", dest="numprocesses", default=None, metavar="N",
                    help="ignored: pytest-xdist is not loaded (installed by the `test` extra)")
    group.addoption("--dist", dest="dist", default="no", metavar="MODE",
                    help="ignored: pytest-xdist is not loaded")


def pytest_report_header(config: pytest.Config) -> str | None:
    if not config.pluginmanager.hasplugin("xdist"):
        return "pytest-xdist not loaded: running every test in this process (--numprocesses/--dist ignored)"
    return None


def _xdist_active(config: pytest.Config) -> bool:
    return config.pluginmanager.hasplugin("xdist") and config.getoption("dist", "no") != "no"


def _is_controller(config: pytest.Config) -> bool:
    return _xdist_active(config) and not hasattr(config, "workerinput")


# --- one worker for the cluster tests -----------------------------------------------------------

def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The grouping goes by path (the controller sees node ids, not markers): a `cluster` test
    elsewhere would start a second Ray instance beside the first.

    On a worker, the modules holding `slow` tests come first (each module's tests stay together,
    in their order): the scheduler hands out the cluster group first (the largest), then tests in
    this order, so the long ones run beside the cluster group and the short ones even out the end
    of the run. Every worker sorts alike (xdist checks they collected the same list)."""
    stray = [item.nodeid for item in items
             if item.get_closest_marker("cluster") and CLUSTER_DIR not in item.path.parents]
    if stray:
        raise pytest.UsageError(f"{stray[0]}: tests marked `cluster` belong under tests/cluster/ "
                                f"(they run on one xdist worker)")
    if hasattr(config, "workerinput"):
        slow_modules = {item.path for item in items if item.get_closest_marker("slow")}
        items.sort(key=lambda item: item.path not in slow_modules)


@pytest.hookimpl(optionalhook=True)   # (a hook of xdist's: unknown when it is not loaded)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`--numprocesses=auto`: one worker per core, plus one. The worker that runs tests/cluster
    spends most of its time waiting on Ray's processes (they, not it, use the CPU), so with one
    worker per core a core sits idle for the length of the cluster tests (measured on 2 cores:
    1.4 of 2 cores busy over the run)."""
    return (os.cpu_count() or 1) + 1


def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """`--dist loadgroup`, with every test under tests/cluster/ in one group. (xdist's own
    `xdist_group` marker names the group in a node id suffix that pytest 9.2's node ids no
    longer carry, so the group is made here, from the path, on the controller.)"""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadGroupScheduling

    # Node ids are relative to the rootdir (this checkout's, unless the plugin runs elsewhere).
    prefix = (CLUSTER_DIR.relative_to(config.rootpath).as_posix() + "/"
              if CLUSTER_DIR.is_relative_to(config.rootpath) else None)

    class ClusterOnOneWorker(LoadGroupScheduling):
        def _split_scope(self, nodeid: str) -> str:
            if prefix is not None and nodeid.startswith(prefix):
                return CLUSTER_GROUP
            return super()._split_scope(nodeid)

    return ClusterOnOneWorker(config, log)


# --- nothing a crashed worker started outlives the run -----------------------------------------

def _name(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode(errors="replace") or "?"
    except OSError:
        return "?"


def _reap(pids: set[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(pid, os.WNOHANG)


def _stop(pids: set[int]) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in alive(pids):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)
        deadline = time.monotonic() + STOP_GRACE_S
        while alive(pids) and time.monotonic() < deadline:
            _reap(pids)
            time.sleep(0.1)
        if not alive(pids):
            break
    _reap(pids)


_subreaper = pytest.StashKey[bool]()


def pytest_configure(config: pytest.Config) -> None:
    if not (_is_controller(config) and sys.platform == "linux"):
        return
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0:
        config.stash[_subreaper] = True


@pytest.hookimpl(trylast=True)   # the workers have exited (xdist tears them down at session finish)
def pytest_unconfigure(config: pytest.Config) -> None:
    if not config.stash.get(_subreaper, False):
        return
    left = process_tree(os.getpid()) - {os.getpid()}
    leaked = alive(left)
    if leaked:
        names = ", ".join(f"{pid} {_name(pid)}" for pid in sorted(leaked))
        _stop(left)
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        line = f"stopped {len(leaked)} process(es) the test workers left running: {names}"
        if reporter is not None:
            reporter.write_line(line, yellow=True)
        else:
            print(line, file=sys.stderr)
    else:
        _reap(left)   # zombies of orphans adopted during the run
