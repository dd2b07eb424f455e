"""Run dftool commands on fuzzed graphs and classify what happened.

Each command runs in a child forked from a process that has already imported the CLI (a fork
server): as honest as a fresh subprocess about hangs, memory and signals — the child has its own
address space under RLIMIT_AS, its own stdin/stdout/stderr files, and is SIGKILLed past the wall
limit — while costing a few milliseconds instead of the interpreter's ~0.3 s start.

Outcomes: ok (exit 0), error (exit 1-4 with exactly one stderr line `error: ...` and no traceback),
traceback, internal (an "internal error" line, or a pass's Python exception in optimize's error), hang (killed at the wall limit), memory
(MemoryError, an out-of-memory message, or peak RSS growth above the bound), signal (killed by a
signal we did not send), unclean (any other exit code or stderr shape).
"""
from __future__ import annotations

import os
import random
import re
import resource
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import mutate

GIB = 1 << 30
BAD_OUTCOMES = ("traceback", "internal", "hang", "memory", "signal", "unclean")
OUTCOMES = ("ok", "error") + BAD_OUTCOMES
COMMANDS = ("inspect", "prune", "place", "optimize", "optimize-verify", "partition", "grad", "run",
            "profile")
# Commands the acceptance bounds to 1 GiB of memory for any graph file under 1 MiB.
RSS_BOUNDED = {"inspect", "prune", "place", "optimize"}
# optimize reports a pass that raised as `pass 'x' failed: TypeError: ...` (exit 1): a Python
# exception inside a pass is a bug however cleanly it is printed.
_MASKED_BUG = re.compile(r"pass '[^']*' failed: [A-Z]\w*(Error|Exception): ")
_MEMORY_TEXT = re.compile(r"MemoryError|out of memory|Cannot allocate memory|Unable to allocate")


@dataclass
class Config:
    wall_s: float = 20.0            # a child still running after this is a hang
    exec_timeout_s: float = 2.0     # --timeout given to the commands that execute the graph
    address_space_extra: int = 2 * GIB  # RLIMIT_AS = this process's address space + this
    rss_bound: int = 1 * GIB        # peak RSS growth allowed for RSS_BOUNDED commands
    # The configured per-tensor bound for the children: low, so that a legal graph never nears the
    # address-space limit and any MemoryError means a bound was bypassed.
    max_tensor_bytes: str = "256M"


@dataclass
class Outcome:
    command: str
    argv: list[str]
    kind: str
    rc: int | None
    wall_s: float
    rss_growth: int
    stderr: str

    def brief(self) -> str:
        lines = [l for l in self.stderr.splitlines() if l.strip()]
        if self.kind == "traceback":
            return (lines[-1] if lines else "")[:300]
        return (lines[-1] if lines else f"rc={self.rc}")[:300]


@dataclass
class InputResult:
    index: int
    seed: str
    mutations: list[str]
    outcomes: list[Outcome] = field(default_factory=list)

    @property
    def bad(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.kind in BAD_OUTCOMES]


def _vm_bytes(field_name: str) -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field_name + ":"):
                return int(line.split()[1]) * 1024
    return 0


def classify(rc: int | None, stderr: str, killed_by_us: bool, term_signal: int | None,
             rss_growth: int, command: str, config: Config) -> str:
    if killed_by_us:
        return "hang"
    if _MEMORY_TEXT.search(stderr) or (command in RSS_BOUNDED and rss_growth > config.rss_bound):
        return "memory"
    if term_signal is not None:
        return "memory" if term_signal == signal.SIGKILL else "signal"
    if "Traceback (most recent call last)" in stderr:
        return "traceback"
    if "internal error" in stderr or _MASKED_BUG.search(stderr):
        return "internal"
    if rc == 0:
        return "ok"
    error_lines = [l for l in stderr.splitlines() if l.startswith("error:")]
    if rc in (1, 2, 3, 4) and len(error_lines) == 1:
        return "error"
    return "unclean"


def _child(argv: list[str], cwd: Path, address_limit: int, config: Config) -> None:
    """In the forked child: fresh stdio files, bounds, then the CLI's own main(); never returns."""
    rc = 70
    try:
        os.chdir(cwd)
        os.setpgid(0, 0)
        stdin = os.open(os.devnull, os.O_RDONLY)
        stdout = os.open("stdout.txt", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        stderr = os.open("stderr.txt", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        for fd, target in ((stdin, 0), (stdout, 1), (stderr, 2)):
            os.dup2(fd, target)
            os.close(fd)
        # New objects over fds 0-2 (pytest may have replaced sys.stdout with a capture buffer).
        sys.stdin = open(0, "r", closefd=False)
        sys.stdout = open(1, "w", closefd=False)
        sys.stderr = open(2, "w", closefd=False)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        os.environ["DFTOOL_MAX_TENSOR_BYTES"] = config.max_tensor_bytes
        from graphtool import limits
        limits.reset()
        resource.setrlimit(resource.RLIMIT_AS, (address_limit, address_limit))
        from cli.main import main
        rc = main(list(argv))
    except SystemExit as exc:
        rc = exc.code if isinstance(exc.code, int) else 1
    except BaseException:  # what an uncaught exception does to a real process: traceback, exit 1
        import traceback

        traceback.print_exc()
        rc = 1
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except BaseException:  # noqa: BLE001 - a closed or full stdout must not keep the child alive
            pass
        os._exit(rc if isinstance(rc, int) else 1)


def run_command(command: str, argv: list[str], cwd: Path, config: Config) -> Outcome:
    """Fork, run `dftool argv` in cwd, wait up to the wall limit, classify."""
    import cli.main  # noqa: F401 - imported before fork so that children start warm

    base_rss = _vm_bytes("VmRSS")
    address_limit = _vm_bytes("VmSize") + config.address_space_extra
    sys.stdout.flush()
    sys.stderr.flush()
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:
        _child(argv, cwd, address_limit, config)
    killed = False
    while True:
        done, status, usage = os.wait4(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() - start > config.wall_s:
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            killed = True
            _, status, usage = os.wait4(pid, 0)
            break
        time.sleep(0.002 if time.monotonic() - start < 0.2 else 0.02)
    wall = time.monotonic() - start
    rc = os.WEXITSTATUS(status) if os.WIFEXITED(status) else None
    term = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
    # ru_maxrss counts the pages shared with this process too: growth is what the child added.
    growth = max(0, usage.ru_maxrss * 1024 - base_rss)
    try:
        stderr = (cwd / "stderr.txt").read_text(errors="replace")
    except OSError:
        stderr = ""
    kind = classify(rc, stderr, killed, None if killed else term, growth, command, config)
    return Outcome(command, list(argv), kind, rc, round(wall, 3), growth, stderr[-4000:])


def optimize_has_timeout() -> bool:
    from cli.optimize_cmd import command

    return any("--timeout" in p.opts for p in command.params)


def plan(mutant: mutate.Mutant, workdir: Path, config: Config, verify_timeout: bool) -> list[tuple[str, list[str]]]:
    """Write the mutant (and feeds for it) into workdir; the argv of every command to run on it."""
    rng = random.Random(f"plan:{mutant.index}")
    graph_def = mutant.graph_def
    (workdir / "g.pb").write_bytes(mutant.serialize())
    feeds = mutate.placeholder_feeds(graph_def, rng)
    feed_args = []
    if feeds:
        np.savez(workdir / "feeds.npz", **feeds)
        feed_args = ["--feeds", "feeds.npz"]
    names = [n.name for n in graph_def.node] or ["x"]
    outputs = mutate.output_nodes(graph_def) or names
    fetch = rng.choice(outputs if rng.random() < 0.7 else names)
    y = mutate.float_node(graph_def, rng) or rng.choice(names)
    timeout = ["--timeout", str(config.exec_timeout_s)]
    verify = ["--verify"] + (timeout if verify_timeout else [])
    return [
        ("inspect", ["inspect", "g.pb"]),
        ("prune", ["prune", "g.pb", "pruned.pb", "--fetch", fetch]),
        ("place", ["place", "g.pb", "placed.pb", "--devices", "cpu:0,cpu:1"]),
        ("optimize", ["optimize", "g.pb", "opt.pb"]),
        ("optimize-verify", ["optimize", "g.pb", "opt_v.pb"] + verify),
        ("partition", ["partition", "placed.pb", "part.pb"]),  # g.pb when place failed
        ("grad", ["grad", "g.pb", "grad.pb", "--y", y]),
        ("run", ["run", "g.pb"] + feed_args + timeout),
        ("profile", ["profile", "g.pb", "--repeat", "1", "--warmup", "0"] + feed_args + timeout),
    ]


def run_input(seeds: list[mutate.Seed], seed: int, index: int, workdir: Path, config: Config,
              verify_timeout: bool, commands=COMMANDS) -> tuple[InputResult, bytes]:
    mutant = mutate.mutate(seeds, seed, index)
    workdir.mkdir(parents=True, exist_ok=True)
    result = InputResult(index, mutant.seed, mutant.mutations)
    for command, argv in plan(mutant, workdir, config, verify_timeout):
        if command not in commands:
            continue
        if command == "partition" and not (workdir / "placed.pb").exists():
            argv = ["partition", "g.pb", "part.pb"]
        result.outcomes.append(run_command(command, argv, workdir, config))
    return result, mutant.serialize()


def summarize(results: list[InputResult]) -> dict[str, dict[str, float]]:
    """command -> outcome -> count, plus 'wall_s': the command's total time."""
    table: dict[str, dict[str, float]] = {c: {**{k: 0 for k in OUTCOMES}, "wall_s": 0.0} for c in COMMANDS}
    for result in results:
        for outcome in result.outcomes:
            table[outcome.command][outcome.kind] += 1
            table[outcome.command]["wall_s"] = round(table[outcome.command]["wall_s"] + outcome.wall_s, 1)
    return table


def format_table(table: dict[str, dict[str, float]]) -> str:
    columns = OUTCOMES + ("wall_s",)
    rows = [f"{'command':<16}" + "".join(f"{k:>10}" for k in columns)]
    totals = {k: 0 for k in columns}
    for command, counts in table.items():
        rows.append(f"{command:<16}" + "".join(f"{counts[k]:>10g}" for k in columns))
        for k in columns:
            totals[k] += counts[k]
    rows.append(f"{'total':<16}" + "".join(f"{totals[k]:>10g}" for k in columns))
    return "\n".join(rows)
