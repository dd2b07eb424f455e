"""Time a GraphDef in TensorFlow (the reference the benchmarks compare with).

Runs under a Python that has TensorFlow (the optional `bench` extra, or any `--tf-python`):

    python tf_reference.py GRAPH.pb FEEDS.npz FETCH[,FETCH...] REPEAT
        prints one JSON line: {"median": s, "min": s, "version": ...}
    python tf_reference.py GRAPH.pb FEEDS.npz FETCH[,FETCH...] serve
        prints {"version": ...} once the graph is warm, then for each line N read from stdin runs N
        steps and prints their times as one JSON list; ends at end of input. This lets a benchmark
        interleave TensorFlow's steps with its own, so both see the same machine load.

TensorFlow runs with its defaults (the environment a user has): no thread settings, no BLAS
variables, Grappler on. Feeds are keyed by tensor name ("x" or "x:0"); the graph is imported
without a name prefix.
"""
from __future__ import annotations

import json
import os
import statistics
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def main(argv: list[str]) -> int:
    import numpy as np
    import tensorflow as tf

    graph_path, feeds_path, fetch_text, repeat = argv[1], argv[2], argv[3], argv[4]
    graph_def = tf.compat.v1.GraphDef()
    with open(graph_path, "rb") as handle:
        graph_def.ParseFromString(handle.read())
    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.import_graph_def(graph_def, name="")
    feeds = {}
    if feeds_path != "-":
        with np.load(feeds_path) as data:
            feeds = {(k if ":" in k else k + ":0"): data[k] for k in data.files}
    fetches = [f if ":" in f else f + ":0" for f in fetch_text.split(",")]

    with tf.compat.v1.Session(graph=graph) as session:
        def steps(count: int) -> list[float]:
            times = []
            for _ in range(count):
                start = time.perf_counter()
                session.run(fetches, feeds)
                times.append(time.perf_counter() - start)
            return times

        steps(2)   # warm-up: Grappler, kernel creation
        if repeat == "serve":
            print(json.dumps({"version": tf.__version__}), flush=True)
            for line in sys.stdin:
                print(json.dumps(steps(int(line))), flush=True)
            return 0
        times = steps(int(repeat))
    print(json.dumps({"median": statistics.median(times), "min": min(times), "version": tf.__version__}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
