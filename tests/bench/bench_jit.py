"""JIT benchmarks (issue 15): step times of the interpreter, the JIT (`Session(jit=True)`) and,
when it is available, TensorFlow; prints one table (not a pass/fail test).

    python tests/bench/bench_jit.py [--rounds N] [--only a b ...] [--tf-python PATH]

(a) 6 parallel chains of 250 tiny elementwise nodes (per-node overhead);
(b) a 1000-iteration while loop with a small body (per-iteration overhead);
(c) a 4-layer 3x3 conv net, batch 8, 64x64x16;
(d) 4 x [512x2048 @ 2048x2048] MLP;
(e) the frozen Keras MobileNetV2 and (h) ResNet50 of tests/fixtures/tf2, (f) the TF1 dynamic_rnn
    LSTM of tests/fixtures/tf, with the JIT's first-run compile time;
(g) MobileNetV2 in two new processes sharing a fresh persistent cache: `dftool run --jit` wall
    time and compile time of the first (cold) and of the second (warm).

Step times are medians of back-to-back steps taken in --rounds interleaved rounds (interpreter,
JIT, TensorFlow in turn: timing.interleaved), in the default environment (no BLAS pinning).
TensorFlow (its default threads) runs in a subprocess (timing.py's tf_reference.py) of --tf-python,
$TF_PYTHON, or this Python when it has TensorFlow; the tests never need it. On a shared machine
compare the ratios within one run.
"""
from __future__ import annotations

import argparse
import json
import os
import contextlib
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from graphtool import dtypes, graph_io  # noqa: E402
from graphtool.builder import GraphBuilder  # noqa: E402
from graphtool.exec.session import Session  # noqa: E402
from graphtool.ir import from_graphdef  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from timing import TensorFlowReference, interleaved, tensorflow_python, timed  # noqa: E402

class Case:
    def __init__(self, name, graph, fetches, feeds, tf_ok=True):
        self.name, self.graph, self.fetches, self.feeds, self.tf_ok = name, graph, fetches, feeds, tf_ok


# --- graphs -----------------------------------------------------------------------------------------

def chains():
    b = GraphBuilder()
    x = b.placeholder(dtypes.float32, [4], name="x")
    one = b.const(np.float32(1.0001), name="one")
    ends = []
    for c in range(6):
        y = x
        for k in range(250):
            y = b.op("Mul" if k % 2 else "AddV2", [y, one], name=f"c{c}/n{k}")
        ends.append(y.name)
    return Case("(a) 6 x 250 tiny nodes", b.graph, ends, {"x": np.ones(4, np.float32)})


def loop():
    b = GraphBuilder()
    _, acc = b.while_loop(lambda i, a: b.less(i, 1000), lambda i, a: [b.add(i, 1), b.mul(a, 1.0001)],
                          [b.const(0), b.const(np.float32(1.0))], name="loop")
    b.identity(acc, name="result")
    return Case("(b) 1000-iteration while loop", b.graph, ["result"], {})


def convnet():
    rng = np.random.default_rng(2)
    b = GraphBuilder()
    h = b.placeholder(dtypes.float32, [8, 64, 64, 16], name="x")
    for k in range(4):
        f = rng.standard_normal((3, 3, 16, 16), dtype=np.float32) / 12
        h = b.conv2d(h, b.const(f, name=f"filter{k}"), strides=[1, 1, 1, 1], padding="SAME", name=f"conv{k}")
    return Case("(c) 4-layer 3x3 conv net, b8 64x64", b.graph, [h.name],
                {"x": rng.standard_normal((8, 64, 64, 16), dtype=np.float32)})


def mlp():
    rng = np.random.default_rng(0)
    b = GraphBuilder()
    h = b.placeholder(dtypes.float32, [512, 2048], name="x")
    for k in range(4):
        w = rng.standard_normal((2048, 2048), dtype=np.float32) * 0.02
        h = b.matmul(h, b.const(w, name=f"w{k}"), name=f"layer{k}")
    return Case("(d) 4 x [512x2048 @ 2048x2048]", b.graph, [h.name],
                {"x": rng.standard_normal((512, 2048), dtype=np.float32)})


def _fixture(name, folder):
    spec = json.loads((folder / "case.json").read_text())
    graph = from_graphdef(graph_io.load_graphdef(str(folder / "graph.pb")))
    with np.load(folder / "feeds.npz") as archive:
        feeds = {k: archive[k] for k in archive.files}
    return Case(name, graph, spec["fetches"], feeds)


def mobilenet():
    return _fixture("(e) frozen Keras MobileNetV2", ROOT / "tests/fixtures/tf2/keras_mobilenet_v2")


def resnet():
    return _fixture("(h) frozen Keras ResNet50", ROOT / "tests/fixtures/tf2/keras_resnet50")


def lstm():
    return _fixture("(f) TF1 dynamic_rnn LSTM", ROOT / "tests/fixtures/tf/dynamic_lstm")


# --- measuring -------------------------------------------------------------------------------------

def measure(case: Case, rounds: int, tf: TensorFlowReference) -> dict:
    """Step times of the interpreter, the JIT and TensorFlow, taken in interleaved rounds (after the
    JIT's first, compiling run) so that all three see the same machine load."""
    row = {"name": case.name}
    interp = Session(case.graph, jit=False)
    jit = Session(case.graph, jit=True)
    start = time.perf_counter()
    jit.run(case.fetches, case.feeds)
    row["first_run"] = time.perf_counter() - start
    row["compile"] = jit.jit_report.compile_seconds
    row["clusters"] = f"{len(jit.jit_report.clusters)} cl, {jit.jit_report.compiled_nodes} nodes in, " \
                      f"{len(jit.jit_report.left_out)} out"
    tf_feeds = {k.split(":")[0]: v for k, v in case.feeds.items()}
    try:
        with tf.live(case.graph, case.fetches, tf_feeds) if case.tf_ok else contextlib.nullcontext() as tf_step:
            row.update(interleaved({"interp": timed(lambda: interp.run(case.fetches, case.feeds)),
                                    "jit": timed(lambda: jit.run(case.fetches, case.feeds)),
                                    "tf": tf_step}, rounds))
    except RuntimeError as exc:   # TensorFlow could not run this graph
        print(f"TensorFlow failed on {case.name}: {exc}", file=sys.stderr)
        row.update(interleaved({"interp": timed(lambda: interp.run(case.fetches, case.feeds)),
                                "jit": timed(lambda: jit.run(case.fetches, case.feeds))}, rounds))
    return row


def warm_cache_processes() -> list[str]:
    """MobileNetV2 through `dftool run --jit` in two new processes sharing a fresh cache."""
    folder = ROOT / "tests/fixtures/tf2/keras_mobilenet_v2"
    lines = []
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "DFTOOL_JIT_CACHE": cache}
        for label in ("interpreter", "cold cache", "warm cache"):
            start = time.perf_counter()
            proc = subprocess.run([sys.executable, "-m", "cli.main", "run", str(folder / "graph.pb"), "--feeds",
                                   str(folder / "feeds.npz"), "--jit" if "cache" in label else "--no-jit", "--json"],
                                  capture_output=True, text=True, cwd=ROOT, env=env, timeout=900)
            wall = time.perf_counter() - start
            if proc.returncode != 0:
                lines.append(f"{label}: failed: {proc.stderr.strip()[-300:]}")
                continue
            if label == "interpreter":
                lines.append(f"(g) MobileNetV2 `dftool run` without the JIT: process {wall:.2f} s")
                continue
            jit = json.loads(proc.stdout)["jit"]
            compile_s = sum(c["compile_seconds"] for c in jit["clusters"])
            lines.append(f"(g) MobileNetV2 `dftool run --jit`, {label}: process {wall:.2f} s, compile {compile_s:.2f} s, "
                         f"executables loaded {jit['persistent_cache']['executables_loaded']}, XLA compilations "
                         f"{jit['persistent_cache']['misses']}")
    return lines


def _ms(value) -> str:
    return "-" if value is None else f"{value * 1e3:.3f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds (timing.interleaved)")
    parser.add_argument("--only", nargs="*", help="subset of a b c d e f g h")
    parser.add_argument("--tf-python", help="a Python with TensorFlow for the TF column (default: $TF_PYTHON, "
                                             "or this Python when it has TensorFlow)")
    args = parser.parse_args()
    tf = TensorFlowReference(tensorflow_python(args.tf_python))
    benches = {"a": chains, "b": loop, "c": convnet, "d": mlp, "e": mobilenet, "f": lstm, "h": resnet}
    wanted = args.only or ["a", "b", "c", "d", "e", "h", "f", "g"]
    print(f"{'benchmark':36} {'interp ms':>10} {'jit ms':>10} {'tf ms':>10} {'jit/tf':>7} {'interp/jit':>10} "
          f"{'compile s':>9}  clusters")
    for key in wanted:
        if key not in benches:
            continue
        row = measure(benches[key](), args.rounds, tf)
        tf_time = row.get("tf")
        ratio = f"{row['jit'] / tf_time:.2f}x" if tf_time else "-"
        print(f"{row['name']:36} {_ms(row['interp']):>10} {_ms(row['jit']):>10} {_ms(tf_time):>10} {ratio:>7} "
              f"{row['interp'] / row['jit']:>9.1f}x {row['compile']:>9.2f}  {row['clusters']}", flush=True)
    if "g" in wanted:
        for line in warm_cache_processes():
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
