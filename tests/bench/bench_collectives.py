"""Collectives on a cluster (issue 19): all-reduce bandwidth against raw Ray, and data-parallel
training throughput, ring all-reduce against a parameter server. Prints tables (not a pass/fail
test).

    python tests/bench/bench_collectives.py [--only allreduce training] [--workers 2 4]
                                            [--sizes-kib 4 64 1024 ...] [--rounds N]
                                            [--model mlp_sgd_ref] [--batch B] [--json FILE]

- allreduce: CollectiveReduceV2 (Add, Id) of one float32 tensor of each `--sizes-kib` size over
  worker tasks 0..n-1 of `local:n` (one member per task), for each n of `--workers`. Each member's
  input is made on its task (Fill) and the step fetches one element of each result (checked: the
  sum of the members' fills), so no tensor travels to or from the master. The collective's time is
  the step's minus that of the same graph without the collective (the Fills and the fetches
  alone), medians of interleaved rounds. As nccl-tests define them: algbw = bytes / time, busbw =
  algbw * 2(n-1)/n (the bytes each member sends and receives in a ring, per unit of time: the
  figure comparable with a link's bandwidth whatever n is). "raw Ray" is Ray itself moving the
  same bytes once between two actors of the same instance: the sender `ray.put`s the array and
  hands the reference to the receiver, which `ray.get`s it and reads it (a sum, as a reduction
  would read it), timed inside the sender; its GB/s is bytes / time. The best a ring can do over
  such a link is busbw = that bandwidth.
- training: a TF1 training graph of tests/fixtures/training_runs (`--model`, fed a batch of
  `--batch` examples made by tiling the case's feeds) on 1 worker (every node pinned to worker:0
  of the smallest cluster; its other tasks idle) and, through `dftool replicate`, on n workers in `allreduce` mode (ring all-reduce of the
  gradients) and `ps` mode (gradients averaged on a parameter server, the first device). Examples/s
  = batch / median step time (one `train` step; init once, untimed). The first step's loss of
  every variant must equal the 1-worker run's (data parallelism does not change the math).

Every cluster is started once per worker count (`local:n`); its start-up is not timed. On a
machine with fewer cores than workers the workers share them: the figures then show the runtime's
overheads more than the scaling.
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from graphtool.builder import GraphBuilder  # noqa: E402
from graphtool.cluster import open_cluster  # noqa: E402
from graphtool.exec.session import Session  # noqa: E402
from graphtool.graph_io import load_graphdef  # noqa: E402
from graphtool.ir import from_graphdef  # noqa: E402
from graphtool.ir.export import to_graphdef  # noqa: E402
from typing import Any, Callable  # noqa: E402

from tests.bench.timing import interleaved, timed  # noqa: E402

SECTIONS = ("allreduce", "training")
DEFAULT_SIZES_KIB = (4, 16, 64, 256, 1024, 4096, 16384, 65536)
TRAINING_RUNS = ROOT / "tests" / "fixtures" / "training_runs"


def worker_cpu(task: int) -> str:
    return f"/job:worker/replica:0/task:{task}/device:CPU:0"


def busbw(nbytes: int, seconds: float, n: int) -> float:
    """nccl-tests' bus bandwidth of an all-reduce of `nbytes` over `n` ranks, bytes/s."""
    return nbytes / seconds * 2 * (n - 1) / n


# --- 1. all-reduce bandwidth -----------------------------------------------------------------------
def allreduce_graph(n: int, count: int, reduce: bool):
    """Member k on worker task k: Fill(count, k+1) -> CollectiveReduceV2 (Add, Id) -> its first
    element, fetched as `first{k}`. Without `reduce` the Fill goes straight to the slice."""
    b = GraphBuilder()
    for k in range(n):
        with b.device(worker_cpu(k)), b.name_scope(f"member{k}"):
            x = b.op("Fill", [b.const(np.array([count], np.int32), name="dims"),
                              b.const(np.float32(k + 1), name="value")], name="x")
            if reduce:
                x = b.op("CollectiveReduceV2", [x, b.const(np.int32(n), name="group_size"),
                                                b.const(np.int32(1), name="group_key"),
                                                b.const(np.int32(1), name="instance_key"), []],
                         name="allreduce", merge_op="Add", final_op="Id")
            b.op("Slice", [x, b.const(np.array([0], np.int32), name="begin"),
                           b.const(np.array([1], np.int32), name="size")], name="first")
    return b.graph, [f"member{k}/first" for k in range(n)]


class RawPeer:
    """A bare Ray actor: what moving the same bytes once costs with Ray alone."""

    def __init__(self):
        self.array = None

    def make(self, count: int) -> int:
        self.array = np.full(count, 1.5, np.float32)
        return self.array.nbytes

    def take(self, refs) -> float:
        import ray

        return float(np.sum(ray.get(refs[0])))   # (a list: Ray passes the reference, not its value)

    def send(self, peer, steps: int) -> list[float]:
        """`steps` transfers of this actor's array to `peer` (put, the peer gets and reads it), each
        waited for; seconds each."""
        import ray

        times = []
        for _ in range(steps):
            start = time.perf_counter()
            ray.get(peer.take.remote([ray.put(self.array)]))
            times.append(time.perf_counter() - start)
        return times


def _raw_timer(sender, receiver) -> Callable[[int], list[float]]:
    import ray

    def steps(count: int) -> list[float]:
        return ray.get(sender.send.remote(receiver, count))
    return steps


def bench_allreduce(args, cluster, n: int, rows: list, raw: dict) -> None:
    import ray

    print(f"1. all-reduce (CollectiveReduceV2 Add) of one float32 tensor over {n} worker tasks (local:{n}); "
          f"medians of interleaved rounds")
    print(f"  {'size':>9} {'step ms':>9} {'no-collective ms':>17} {'all-reduce ms':>14} {'algbw GB/s':>11} "
          f"{'busbw GB/s':>11} {'raw Ray ms':>11} {'raw GB/s':>9} {'busbw/raw':>10}")
    raw_class: Any = ray.remote(num_cpus=0)(RawPeer)
    for kib in args.sizes_kib:
        count = kib * 1024 // 4
        nbytes = count * 4
        sessions = {}
        for label, reduce in (("step", True), ("base", False)):
            graph, fetches = allreduce_graph(n, count, reduce)
            session = Session(graph, cluster=cluster)
            values = session.run(fetches).values
            for k, value in enumerate(values):
                assert float(np.asarray(value)[0]) == (n * (n + 1) / 2 if reduce else k + 1), (label, k, value)
            sessions[label] = (session, fetches)
        timers: dict[str, Callable[[int], list[float]] | None] = {
            label: timed(lambda s=session, f=fetches: s.run(f)) for label, (session, fetches) in sessions.items()}
        if kib not in raw:
            sender, receiver = raw_class.remote(), raw_class.remote()
            ray.get([sender.make.remote(count), receiver.make.remote(1)])
            timers["raw"] = _raw_timer(sender, receiver)
        times = interleaved(timers, args.rounds)
        if "raw" in times:
            raw[kib] = times["raw"]
        collective = max(times["step"] - times["base"], 1e-9)
        alg, bus, raw_s = nbytes / collective, busbw(nbytes, collective, n), raw[kib]
        raw_bw = nbytes / raw_s
        print(f"  {_size(nbytes):>9} {times['step'] * 1e3:9.2f} {times['base'] * 1e3:17.2f} {collective * 1e3:14.2f} "
              f"{alg / 1e9:11.4g} {bus / 1e9:11.4g} {raw_s * 1e3:11.2f} {raw_bw / 1e9:9.4g} {bus / raw_bw:10.2f}")
        rows.append({"section": "allreduce", "workers": n, "bytes": nbytes, "step_ms": times["step"] * 1e3,
                     "no_collective_ms": times["base"] * 1e3, "allreduce_ms": collective * 1e3,
                     "algbw_gbps": alg / 1e9, "busbw_gbps": bus / 1e9, "raw_ray_ms": raw_s * 1e3,
                     "raw_ray_gbps": raw_bw / 1e9})


def _size(nbytes: int) -> str:
    return f"{nbytes >> 20} MiB" if nbytes >= 1 << 20 else f"{nbytes >> 10} KiB"


# --- 2. data-parallel training throughput ----------------------------------------------------------
def training_case(args):
    """(case.json, graph, feeds of `--batch` examples)."""
    root = TRAINING_RUNS / args.model
    case = json.loads((root / "case.json").read_text())
    graph = from_graphdef(load_graphdef(str(root / "graph.pb")))
    small = dict(np.load(root / "feeds.npz"))
    feeds = {}
    for name, value in small.items():
        reps = -(-args.batch // value.shape[0])
        feeds[name] = np.concatenate([value] * reps, axis=0)[:args.batch]
    return case, graph, feeds


def replicated(case, graph_path: Path, n: int, mode: str, scratch: Path) -> Path:
    """`dftool replicate` of the training graph over worker tasks 0..n-1 in `mode`."""
    out = scratch / f"{mode}_{n}.pb"
    split = ",".join(name.split(":")[0] for name in case["inputs"].values())
    devices = ",".join(worker_cpu(k) for k in range(n))
    done = subprocess.run([sys.executable, "-m", "cli.main", "replicate", str(graph_path), str(out), "--replicas",
                           str(n), "--devices", devices, "--split", split, "--mode", mode],
                          capture_output=True, text=True, cwd=ROOT, timeout=600)
    if done.returncode != 0:
        raise SystemExit(f"dftool replicate --mode {mode} --replicas {n} failed: {done.stderr.strip()[-500:]}")
    return out


def _training_session(graph, cluster, case, feeds):
    session = Session(graph, cluster=cluster)
    session.run([], {}, targets=[case["init"]])
    loss = session.run([case["loss"]], feeds).values[0]
    return session, float(np.asarray(loss))


def bench_training(args, cluster, n: int, rows: list, scratch: Path, reference: dict) -> None:
    case, graph, feeds = training_case(args)
    graph_path = scratch / "train.pb"
    graph_path.write_bytes(to_graphdef(graph).SerializeToString())
    variants = {}
    if n == 1:
        pinned = graph.copy()
        for node in pinned.nodes:
            node.device = worker_cpu(0)
        variants["1 worker"] = pinned
    else:
        for mode in ("allreduce", "ps"):
            path = replicated(case, graph_path, n, mode, scratch)
            variants[f"{mode}"] = from_graphdef(load_graphdef(str(path)))
    timers: dict[str, Callable[[int], list[float]] | None] = {}
    for label, variant in variants.items():
        session, loss = _training_session(variant, cluster, case, feeds)
        if "loss" not in reference:
            reference["loss"] = loss
        else:
            assert abs(loss - reference["loss"]) <= 1e-4 * max(1.0, abs(reference["loss"])), (label, loss, reference)
        timers[label] = timed(lambda s=session: s.run([case["loss"]], feeds, targets=[case["train"]]))
    times = interleaved(timers, args.rounds)
    for label, seconds in times.items():
        rate = args.batch / seconds
        rows.append({"section": "training", "workers": n, "mode": "single" if n == 1 else label,
                     "model": args.model, "batch": args.batch, "step_ms": seconds * 1e3, "examples_per_s": rate})


def print_training(args, rows: list) -> None:
    print(f"2. data-parallel training of {args.model}, batch {args.batch} (all workers together), one train "
          f"step; medians of interleaved rounds; speed-up against 1 worker")
    print(f"  {'workers':>7} {'mode':10} {'step ms':>9} {'examples/s':>12} {'speed-up':>9}")
    single = next(row["examples_per_s"] for row in rows if row["workers"] == 1)
    for row in rows:
        print(f"  {row['workers']:7d} {row['mode']:10} {row['step_ms']:9.2f} {row['examples_per_s']:12.0f} "
              f"{row['examples_per_s'] / single:8.2f}x")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", choices=SECTIONS, default=list(SECTIONS))
    parser.add_argument("--workers", type=int, nargs="+", default=[2, 4], help="worker counts (all-reduce and training)")
    parser.add_argument("--sizes-kib", type=int, nargs="+", default=list(DEFAULT_SIZES_KIB),
                        help="all-reduce message sizes in KiB")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds per measurement")
    parser.add_argument("--model", default="mlp_sgd_ref", help="a case of tests/fixtures/training_runs")
    parser.add_argument("--batch", type=int, default=256, help="examples per training step (all workers together)")
    parser.add_argument("--json", help="also write the measurements to this file")
    args = parser.parse_args()
    if any(n < 2 for n in args.workers):
        parser.error("--workers: an all-reduce needs at least 2 workers (training adds the 1-worker run itself)")
    if "training" in args.only and any(args.batch % n for n in args.workers):
        parser.error(f"--batch {args.batch} must be divisible by every worker count")
    gc.set_threshold(50_000, 20, 20)   # as dftool itself runs (cli/main.py), and the workers
    print(f"{os.cpu_count()} cores; interleaved rounds: {args.rounds}")
    rows: list = []
    raw: dict = {}
    reference: dict = {}
    counts = sorted(set(args.workers))
    with tempfile.TemporaryDirectory() as scratch:
        for n in counts:
            with open_cluster(f"local:{n}") as cluster:
                if "allreduce" in args.only:
                    bench_allreduce(args, cluster, n, rows, raw)
                if "training" in args.only:
                    if n == counts[0]:   # 1 worker: everything pinned to worker:0 (no other start of Ray)
                        bench_training(args, cluster, 1, rows, Path(scratch), reference)
                    bench_training(args, cluster, n, rows, Path(scratch), reference)
    if "training" in args.only:
        print_training(args, [row for row in rows if row["section"] == "training"])
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
