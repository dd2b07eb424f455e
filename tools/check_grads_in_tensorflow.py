"""Run the gradient graphs `dftool grad` writes inside TensorFlow (needs tensorflow; not a test).

    $TF_PYTHON tools/check_grads_in_tensorflow.py [CASE ...] [--dftool .venv/bin/dftool]

For every TensorFlow fixture that records `tf.gradients` values (case.json "gradients";
tools/tf_fixtures/grad_reference.py), `dftool grad` differentiates the forward-only graph.pb
(through conds, while loops with their stacks, TensorArrays). The written GraphDef is then parsed
with TensorFlow's own proto, imported with tf.compat.v1.import_graph_def and run in a Session on
each recorded feed set. The gradients are compared with the ones TensorFlow computed itself: this
shows that the backward graphs are TensorFlow graphs, not only dftool ones. Exit status 1 when
any case fails.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures" / "tf"
tf1 = tf.compat.v1


def gradient_name(x: str, prefix: str = "grad") -> str:
    """docs/commands.md's name of the gradient of tensor `x` ('node:k')."""
    node, _, port = x.partition(":")
    return f"{prefix}/{node}" if port in ("", "0") else f"{prefix}/{node}_{port}"


def feed_sets(case: dict) -> list[tuple[str, str, str]]:
    """(run name, feeds file, expected gradients file) for the default run and every extra run."""
    runs = [("default", "feeds.npz", case["gradients"]["expected"])]
    for run in case.get("extra_runs", []):
        runs.append((run["name"], run["feeds"], run["expected_grads"]))
    return runs


def check_case(name: str, dftool: str) -> list[str]:
    """Failures of one case (empty when every run matches)."""
    folder = FIXTURES / name
    case = json.loads((folder / "case.json").read_text())
    y, xs = case["gradients"]["y"], case["gradients"]["xs"]
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "grad.pb"
        args = [dftool, "grad", str(folder / "graph.pb"), str(out), "--y", y, "-q"]
        for x in xs:
            args += ["--x", x]
        done = subprocess.run(args, capture_output=True, text=True)
        if done.returncode != 0:
            return [f"{name}: dftool grad failed: {done.stderr.strip()}"]
        graph_def = tf1.GraphDef()
        graph_def.ParseFromString(out.read_bytes())
    graph = tf.Graph()
    with graph.as_default():
        tf1.import_graph_def(graph_def, name="")
    fetches = [gradient_name(x) + ":0" for x in xs]
    failures = []
    config = tf1.ConfigProto(device_count={"CPU": 8})
    with tf1.Session(graph=graph, config=config) as session:
        for run, feeds_file, expected_file in feed_sets(case):
            feeds = dict(np.load(folder / feeds_file))
            expected = np.load(folder / expected_file)
            values = session.run(fetches, feeds)
            for x, value in zip(xs, values):
                want = expected[x]
                scale = max(1.0, float(np.max(np.abs(want)))) if want.size else 1.0
                if not np.allclose(value, want, rtol=case.get("rtol", 1e-4), atol=1e-5 * scale):
                    failures.append(f"{name}/{run}: d{y}/d{x} differs by {np.max(np.abs(value - want)):.3g}")
            print(f"{name}/{run}: {len(xs)} gradient(s) checked in TensorFlow")
    return failures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", nargs="*", help="fixture names (default: every case with gradients)")
    parser.add_argument("--dftool", default=str(REPO / ".venv" / "bin" / "dftool"))
    args = parser.parse_args()
    cases = args.cases or sorted(p.parent.name for p in FIXTURES.glob("*/case.json")
                                 if "gradients" in json.loads(p.read_text()))
    failures = [failure for name in cases for failure in check_case(name, args.dftool)]
    for failure in failures:
        print("FAILED", failure)
    print(f"{len(cases)} case(s), {len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
