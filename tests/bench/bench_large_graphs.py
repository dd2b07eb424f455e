"""How `inspect`, `prune`, `place` and `optimize` scale: each command's time on a chain of
10,000 and 100,000 nodes (Placeholder -> Tanh -> Tanh -> ...), as a user runs it (a fresh
`dftool` process, start-up included; wall and CPU time), and the ratio between the two sizes.
Linear work gives a ratio near 10 (a little less: start-up is paid once). Prints a table (not a pass/fail test;
tests/test_large_graph_scaling.py checks the scaling).

    .venv/bin/python tests/bench/bench_large_graphs.py [--sizes 10000,100000] [--repo DIR]

`--repo` times another checkout (e.g. the previous commit in a worktree) with the same graphs.
"""
from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from graphtool.proto.graph_pb2 import GraphDef  # noqa: E402

COMMANDS = ("inspect", "prune", "place", "optimize")


def chain_graphdef(nodes: int) -> GraphDef:
    """A Placeholder x (float32 [4]) followed by nodes - 1 Tanh ops in a row: n1 ... n{nodes-1}."""
    graph = GraphDef()
    x = graph.node.add(name="x", op="Placeholder")
    x.attr["dtype"].type = 1
    x.attr["shape"].shape.dim.add().size = 4
    previous = "x"
    for i in range(1, nodes):
        node = graph.node.add(name=f"n{i}", op="Tanh")
        node.input.append(previous)
        node.attr["T"].type = 1
        previous = node.name
    return graph


def command_line(command: str, graph: Path, out: Path, nodes: int) -> list[str]:
    args = {"inspect": [str(graph)],
            "prune": [str(graph), str(out), "--fetch", f"n{nodes - 1}", "--feed", "x"],
            "place": [str(graph), str(out), "--devices", "cpu:0"],
            "optimize": [str(graph), str(out)]}[command]
    return [sys.executable, "-m", "cli.main", command, *args]


def time_command(argv: list[str], repo: Path) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one run. The CPU time (user + system of the child) is the
    steadier figure on a busy machine: it does not count the time other processes had the cores."""
    env = dict(os.environ, PYTHONPATH=str(repo))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=repo, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv[2:4])} failed ({done.returncode}): {done.stderr.strip()[-500:]}")
    return elapsed, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000", help="two node counts, comma separated")
    parser.add_argument("--commands", default=",".join(COMMANDS))
    parser.add_argument("--repo", type=Path, default=ROOT, help="the checkout to time (default: this one)")
    args = parser.parse_args()
    small, large = (int(s) for s in args.sizes.split(","))
    commands = args.commands.split(",")
    with tempfile.TemporaryDirectory() as tmp:
        graphs = {}
        for nodes in (small, large):
            graphs[nodes] = Path(tmp) / f"chain_{nodes}.pb"
            graphs[nodes].write_bytes(chain_graphdef(nodes).SerializeToString())
        print(f"{'':10} {'wall seconds':>34}   {'CPU seconds':>34}")
        print(f"{'command':10} {f'{small:,} nodes':>13} {f'{large:,} nodes':>13} {'ratio':>6}   "
              f"{f'{small:,} nodes':>13} {f'{large:,} nodes':>13} {'ratio':>6}")
        for command in commands:
            (wall_small, cpu_small), (wall_large, cpu_large) = [
                time_command(command_line(command, graphs[n], Path(tmp) / "out.pb", n), args.repo.resolve())
                for n in (small, large)]
            print(f"{command:10} {wall_small:13.2f} {wall_large:13.2f} {wall_large / wall_small:6.1f}   "
                  f"{cpu_small:13.2f} {cpu_large:13.2f} {cpu_large / cpu_small:6.1f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
