#!/usr/bin/env python3
"""Record TF2 real-model fixtures: tf.function graphs, frozen Keras RNNs, Keras applications.

The TF2 sibling of tools/make_tf_fixtures.py (which records TF v1 graph-mode graphs): same
case-directory layout and .npz conventions (see tools/README_fixtures.md), written under
``tests/fixtures/tf2/<case>/`` with its own ``manifest.json``:

    graph.pb            the GraphDef TensorFlow made, re-exported with `_output_shapes`; may hold
                        a FunctionDefLibrary (functional If/While/Case and calls)
    feeds.npz           feeds keyed by the graph's own input names ("x:0")
    expected.npz        TensorFlow's outputs, keyed by the graph's output names ("Identity:0")
    expected_grads.npz  gradients of the sum of one output w.r.t. the float inputs and maybe a
                        weight Const; case.json "gradients": {"y", "xs", "expected", "source"}
    case.json           name, family, description, feeds, fetches, rtol, atol, ops,
                        function_ops, functions, notes, slow, cpu_devices, extra_runs, ...

Run with a TensorFlow 2.21 venv (the project itself never needs TensorFlow), e.g.

    $TF_PYTHON tools/make_tf2_fixtures.py                  # every case
    $TF_PYTHON tools/make_tf2_fixtures.py --only tf2_while
    $TF_PYTHON tools/make_tf2_fixtures.py --list

Every case is built in a fresh Python process (with PYTHONHASHSEED=0): TensorFlow names functions
and Keras names layers with process-wide counters, and freezing walks Python sets, so only a fresh
process with a fixed hash seed gives the same names and node order whatever else ran before.
Each case is seeded (crc32 of its name), runs single-threaded with deterministic kernels, and the
files are written deterministically, so a re-run gives no git diff. Nothing is downloaded: Keras
applications are built with `weights=None` and seeded random weights.
"""
import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

OUT_DIR = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "tf2"


def main(argv=None):
    from tf2_fixtures import REGISTRY, generate, write_manifest  # the package beside this script

    parser = argparse.ArgumentParser(description="Record TF2 real-model fixtures.")
    parser.add_argument("--only", nargs="+", metavar="CASE", choices=sorted(REGISTRY),
                        help="generate only these cases (the others are left alone)")
    parser.add_argument("--list", action="store_true", help="list the cases and exit")
    parser.add_argument("--out", type=Path, default=OUT_DIR, help="output directory")
    parser.add_argument("--worker", metavar="CASE", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.list:
        for spec in REGISTRY.values():
            print(f"{spec.name:32} {spec.family:12} {spec.description}")
        return 0
    if args.worker:  # one case, in this fresh process
        graph_def = generate(REGISTRY[args.worker], args.out)
        print(f"{len(graph_def.node)} nodes, {len(graph_def.library.function)} functions",
              file=sys.stderr)
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    if not args.only:
        for stale in args.out.glob("*/case.json"):
            if stale.parent.name not in REGISTRY:
                shutil.rmtree(stale.parent)
    for name in args.only or REGISTRY:
        print(f"{name} ...", end=" ", file=sys.stderr, flush=True)
        # PYTHONHASHSEED: freezing walks Python sets, which would reorder graph.pb's nodes
        subprocess.run([sys.executable, __file__, "--worker", name, "--out", str(args.out)],
                       check=True, env={**os.environ, "PYTHONHASHSEED": "0"})
    write_manifest(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
