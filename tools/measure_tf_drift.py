#!/usr/bin/env python3
"""How far apart are TensorFlow's own CPU kernels on a fixture graph? The yardstick for dftool's
numeric fidelity and for `optimize --verify`'s tolerance (graphtool/opt/tolerance.py).

Runs a recorded TF2 (or v1) fixture's graph.pb in TensorFlow twice, each in a fresh process:
with oneDNN (TensorFlow's default on x86) and without it (TF_ENABLE_ONEDNN_OPTS=0, the Eigen
kernels the fixtures are recorded with), single-threaded, grappler off. Prints, per fetch, the
largest absolute difference of each against expected.npz and of the two against each other, and
with --dftool OUT.npz (from `dftool run --output`) dftool's against both.

--dump ALL.npz also saves every float32 tensor the graph computes without oneDNN (the kernels the
fixtures are recorded with); tools/localize_drift.py replays each op on those inputs in dftool
and reports which kernels round differently. --graph runs another GraphDef on the case's feeds
(e.g. one `dftool grad` wrote, to localize gradient drift).

    $TF_PYTHON tools/measure_tf_drift.py tests/fixtures/tf2/keras_mobilenet_v2_1000
    $TF_PYTHON tools/measure_tf_drift.py CASE_DIR --dftool out.npz
    $TF_PYTHON tools/measure_tf_drift.py CASE_DIR --graph grad.pb --dump all.npz
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np


def run_in_tensorflow(case_dir: Path, graph: Path, onednn: bool, out: Path, everything=False) -> None:
    """`graph` on feeds.npz in a fresh TensorFlow process; fetches (or, with `everything`, every
    float32 tensor) saved to `out`."""
    env = dict(os.environ, TF_ENABLE_ONEDNN_OPTS="1" if onednn else "0", TF_CPP_MIN_LOG_LEVEL="2",
               CUDA_VISIBLE_DEVICES="")
    subprocess.run([sys.executable, __file__, "--worker", str(case_dir), str(graph), str(out),
                    "all" if everything else "fetches"], env=env, check=True)


def worker(case_dir: Path, graph_path: Path, out: Path, what: str) -> None:
    import tensorflow as tf

    spec = json.loads((case_dir / "case.json").read_text())
    graph_def = tf.compat.v1.GraphDef.FromString(graph_path.read_bytes())
    feeds = dict(np.load(case_dir / "feeds.npz"))
    config = tf.compat.v1.ConfigProto(intra_op_parallelism_threads=1, inter_op_parallelism_threads=1)
    config.graph_options.rewrite_options.disable_meta_optimizer = True
    config.graph_options.optimizer_options.opt_level = tf.compat.v1.OptimizerOptions.L0
    with tf.Graph().as_default() as graph:
        tf.compat.v1.import_graph_def(graph_def, name="")
        fetches = spec["fetches"]
        if what == "all":
            fetches = [t.name for op in graph.get_operations() if op.type not in ("Const", "NoOp")
                       for t in op.outputs if t.dtype == tf.float32]
        with tf.compat.v1.Session(graph=graph, config=config) as session:
            values = session.run(fetches, {graph.get_tensor_by_name(k): v for k, v in feeds.items()})
    np.savez(out, **dict(zip(fetches, values)))


def _largest_difference(a, b) -> float:
    return float(np.max(np.abs(a.astype(np.float64) - b))) if a.size else 0.0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("case_dir", type=Path, nargs="?")
    parser.add_argument("--dftool", type=Path, metavar="OUT.npz", help="dftool's outputs to compare too")
    parser.add_argument("--graph", type=Path, metavar="PB", help="run this GraphDef instead of graph.pb")
    parser.add_argument("--dump", type=Path, metavar="ALL.npz",
                        help="save every float32 tensor (oneDNN off) for tools/localize_drift.py")
    parser.add_argument("--worker", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(Path(args.worker[0]), Path(args.worker[1]), Path(args.worker[2]), args.worker[3])
        return 0
    graph = args.graph or args.case_dir / "graph.pb"
    if args.dump:
        run_in_tensorflow(args.case_dir, graph, False, args.dump, everything=True)
        return 0
    expected = dict(np.load(args.case_dir / "expected.npz"))
    with tempfile.TemporaryDirectory() as scratch:
        results = {}
        for onednn in (True, False):
            out = Path(scratch) / f"onednn_{onednn}.npz"
            run_in_tensorflow(args.case_dir, graph, onednn, out)
            results["oneDNN on" if onednn else "oneDNN off"] = dict(np.load(out))
    if args.dftool:
        saved = dict(np.load(args.dftool))  # keyed as the fetches were given to dftool run
        results["dftool"] = {fetch: saved.get(fetch, saved.get(fetch.removesuffix(":0")))
                             for fetch in expected}
    for fetch, want in expected.items():
        if want.dtype.kind not in "fc":
            continue
        print(f"{args.case_dir.name} {fetch}: max|value| {np.max(np.abs(want)):.3g}")
        for name, values in results.items():
            print(f"  {name:10} vs expected.npz: {_largest_difference(values[fetch], want):.3g}")
        if "dftool" in results:
            for name in ("oneDNN on", "oneDNN off"):
                print(f"  dftool     vs {name}: {_largest_difference(results['dftool'][fetch], results[name][fetch]):.3g}")
        print(f"  oneDNN on  vs oneDNN off: "
              f"{_largest_difference(results['oneDNN on'][fetch], results['oneDNN off'][fetch]):.3g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
