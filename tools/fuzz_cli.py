"""Offline protobuf-level fuzzing of every dftool command (the long run of tests/hostile/test_fuzz_cli.py).

    python tools/fuzz_cli.py --count 3000 --seed 1 --jobs 2 --out fuzz_report.json

Each input is a real seed graph with one to three structure-aware mutations (tests/hostile/mutate.py),
fed through inspect, prune, place, optimize (plain and --verify), partition, grad, run and profile;
each run is classified (tests/hostile/cli_runner.py). Prints a table of outcomes per command, writes
a JSON report, and saves every input with a bad outcome (graph, feeds and the argv of each bad run)
under --failures DIR so that it reproduces with `cd DIR/<n> && dftool <argv>`.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import shutil
import signal
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.hostile import cli_runner, mutate  # noqa: E402

_state: dict = {}


def _init(seeds, seed, config, verify_timeout, scratch, failures):
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a pool worker is simply ended by Pool.terminate
    _state.update(seeds=seeds, seed=seed, config=config, verify_timeout=verify_timeout,
                  scratch=Path(scratch), failures=Path(failures))


def _one(index: int):
    workdir = _state["scratch"] / f"w{os.getpid()}_{index}"
    try:
        result, _ = cli_runner.run_input(_state["seeds"], _state["seed"], index, workdir, _state["config"],
                                         _state["verify_timeout"])
        if result.bad:
            keep = _state["failures"] / f"{index:06d}"
            if keep.exists():
                shutil.rmtree(keep)
            keep.mkdir(parents=True)
            for name in ("g.pb", "feeds.npz", "placed.pb"):
                if (workdir / name).exists():
                    shutil.copy(workdir / name, keep / name)
            (keep / "runs.json").write_text(json.dumps(
                {"seed": result.seed, "mutations": result.mutations,
                 "bad": [{"command": o.command, "kind": o.kind, "argv": o.argv, "stderr": o.stderr}
                         for o in result.bad]}, indent=1))
        return result
    except Exception as exc:  # a bug of the fuzzer itself: say which input, keep going
        print(f"fuzzer error on input {index}: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
        return None
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=200, help="mutated inputs to try")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--start", type=int, default=0, help="first input index (to resume)")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--out", default="fuzz_report.json")
    parser.add_argument("--failures", default="fuzz_failures", help="directory for failing inputs")
    parser.add_argument("--wall", type=float, default=20.0, help="seconds before a run counts as a hang")
    parser.add_argument("--exec-timeout", type=float, default=2.0, help="--timeout for executing commands")
    args = parser.parse_args(argv)

    seeds = mutate.load_seeds()
    config = cli_runner.Config(wall_s=args.wall, exec_timeout_s=args.exec_timeout)
    verify_timeout = cli_runner.optimize_has_timeout()
    if not verify_timeout:
        print("note: optimize has no --timeout yet; optimize --verify runs only under the wall limit",
              file=sys.stderr)
    scratch = tempfile.mkdtemp(prefix="fuzz_cli_")
    start = time.monotonic()
    results = []
    indices = range(args.start, args.start + args.count)
    init_args = (seeds, args.seed, config, verify_timeout, scratch, args.failures)
    interrupted = False
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        if args.jobs > 1:
            context = multiprocessing.get_context("fork")
            with context.Pool(args.jobs, initializer=_init, initargs=init_args) as pool:
                for n, result in enumerate(pool.imap_unordered(_one, indices, chunksize=2), 1):
                    results.append(result)
                    _progress(n, args.count, results, start)
        else:
            _init(*init_args)
            for n, index in enumerate(indices, 1):
                results.append(_one(index))
                _progress(n, args.count, results, start)
    except KeyboardInterrupt:  # report what was done so far
        interrupted = True
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    results = [r for r in results if r is not None]
    results.sort(key=lambda r: r.index)
    table = cli_runner.summarize(results)
    elapsed = time.monotonic() - start
    runs = sum(len(r.outcomes) for r in results)
    print(f"\nseeds: {len(seeds)} graphs; inputs tried: {len(results)}; runs: {runs}; "
          f"wall: {elapsed:.0f} s{' (interrupted)' if interrupted else ''}")
    print(cli_runner.format_table(table))
    classes = Counter((o.command, o.kind, _signature(o)) for r in results for o in r.bad)
    if classes:
        print("\nbad outcome classes (command, kind, last stderr line) x count:")
        for (command, kind, text), count in classes.most_common():
            print(f"  {count:5d}  {command:<16} {kind:<10} {text}")
    report = {
        "schema": "dftool.fuzz_cli/1", "seed": args.seed, "start": args.start, "inputs": len(results),
        "runs": runs, "wall_s": round(elapsed, 1), "interrupted": interrupted, "seeds": [s.name for s in seeds], "table": table,
        "bad": [{"index": r.index, "seed": r.seed, "mutations": r.mutations,
                 "runs": [{"command": o.command, "kind": o.kind, "argv": o.argv, "message": o.brief()}
                          for o in r.bad]} for r in results if r.bad],
    }
    Path(args.out).write_text(json.dumps(report, indent=1))
    return 1 if report["bad"] else 0


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def _signature(outcome) -> str:
    """A failure's class: its last stderr line with node names and numbers blurred."""
    import re

    text = outcome.brief()
    text = re.sub(r"'[^']*'", "'…'", text)
    return re.sub(r"\d+", "N", text)[:160]


def _progress(n, total, results, start):
    if n % 25 == 0 or n == total:
        bad = sum(len(r.bad) for r in results if r is not None)
        print(f"  {n}/{total} inputs, {bad} bad runs, {time.monotonic() - start:.0f} s",
              file=sys.stderr, flush=True)


if __name__ == "__main__":
    sys.exit(main())
