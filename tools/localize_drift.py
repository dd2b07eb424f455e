#!/usr/bin/env python3
"""Which dftool kernels round differently from TensorFlow's? Replays every op of a graph on the
exact inputs TensorFlow gave it and measures each op's own (local) difference, in units of
float32 eps relative to the op's largest output magnitude. A whole-graph comparison cannot tell
a kernel that differs from one that merely passes on (and amplifies) its inputs' drift.

    # 1. every float32 tensor TensorFlow computes (oneDNN off), in TensorFlow's environment:
    $TF_PYTHON tools/measure_tf_drift.py tests/fixtures/tf2/keras_efficientnet_b0 --dump all.npz
    # 2. replay each op in dftool (the project's environment):
    python tools/localize_drift.py tests/fixtures/tf2/keras_efficientnet_b0 all.npz

For gradients, write the gradient graph with `dftool grad` and pass it as --graph to both.
Prints one line per op type: how many ops, the largest and the median local difference (0: the
same bits as TensorFlow) and the op where it is largest.
"""
import argparse
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from graphtool import graph_io  # noqa: E402
from graphtool.exec.session import Session  # noqa: E402
from graphtool.ir import from_graphdef  # noqa: E402

PASS_THROUGH = {"Identity", "Placeholder", "Const", "IdentityN", "Reshape", "Squeeze"}


def local_differences(graph, session, reference: dict) -> dict[str, list[tuple[float, str]]]:
    """op type -> [(difference in eps, node name)] for each op whose inputs TensorFlow recorded."""
    eps = float(np.finfo(np.float32).eps)
    found = defaultdict(list)
    for node in graph.topological_order():
        names = [f"{node.name}:{k}" for k in range(node.num_outputs)]
        names = [name for name in names if name in reference and reference[name].size]
        if not names or node.op in PASS_THROUGH:
            continue
        feeds = {}
        for ref in node.inputs:
            key = f"{ref.node.name}:{ref.index}"
            if ref.node.op != "Const":
                if key not in reference:
                    break
                feeds[key] = reference[key]
        else:
            for name, value in zip(names, session.run(names, feeds).values):
                want = reference[name]
                scale = max(float(np.max(np.abs(want))), np.finfo(np.float32).tiny)
                difference = float(np.max(np.abs(value.astype(np.float64) - want))) / scale / eps
                port = name.rpartition(":")[2]
                found[node.op if port == "0" else f"{node.op}:{port}"].append((difference, node.name))
    return found


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("case_dir", type=Path)
    parser.add_argument("dump", type=Path, help="measure_tf_drift.py --dump output")
    parser.add_argument("--graph", type=Path, metavar="PB", help="the GraphDef the dump ran (default graph.pb)")
    args = parser.parse_args(argv)
    graph = from_graphdef(graph_io.load_graphdef(str(args.graph or args.case_dir / "graph.pb")))
    found = local_differences(graph, Session(graph, threads=1), dict(np.load(args.dump)))
    for op, rows in sorted(found.items(), key=lambda item: -max(item[1])[0]):
        rows.sort(reverse=True)
        print(f"{op:36} n={len(rows):4}  max {rows[0][0]:6.2f} eps  median {rows[len(rows) // 2][0]:5.2f} eps"
              f"  worst {rows[0][1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
