"""Run the frozen graphs dftool makes from SavedModels inside TensorFlow (needs tensorflow; not a test).

    $TF_PYTHON tools/check_saved_models_in_tensorflow.py [CASE ...] [--no-optimize]
        [--dftool .venv/bin/dftool]

For every SavedModel fixture (tests/fixtures/saved_models, made by make_saved_model_fixtures.py)
and each recorded signature, `dftool optimize DIR OUT --signature S` writes the frozen, lowered
and optimized GraphDef (`--no-optimize`: `dftool prune` to the signature's outputs instead). The
file is parsed with TensorFlow's own proto, imported with tf.compat.v1.import_graph_def and run in
a Session, inputs fed through the nodes carrying `_signature_input`, outputs fetched by their keys.
The results are compared with what TensorFlow computed from the SavedModel itself: the frozen
graphs are TensorFlow graphs, not only dftool ones. Exit status 1 when any case fails.
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
from tensorflow.core.framework import graph_pb2  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
MODELS = REPO / "tests" / "fixtures" / "saved_models"


def _dftool(dftool: str, *args) -> None:
    proc = subprocess.run([dftool, *map(str, args), "-q"], cwd=REPO, capture_output=True, text=True)
    if proc.returncode:
        raise RuntimeError(proc.stderr.strip())


def check(case: str, signature: str, optimize: bool, out: Path, dftool: str) -> str | None:
    """None when TensorFlow reproduces the recorded outputs, else what went wrong."""
    manifest = json.loads((MODELS / case / "manifest.json").read_text())["signatures"][signature]
    model = MODELS / case / "model"
    try:
        if optimize:
            _dftool(dftool, "optimize", model, out, "--signature", signature)
        else:
            _dftool(dftool, "prune", model, out, "--signature", signature, *[a for key in manifest["outputs"]
                                                                     for a in ("--fetch", key)])
    except RuntimeError as exc:
        return f"dftool failed: {exc}"
    graph_def = graph_pb2.GraphDef()
    graph_def.ParseFromString(out.read_bytes())
    by_input_key = {n.attr["_signature_input"].s.decode(): n.name for n in graph_def.node
                    if "_signature_input" in n.attr}
    by_output_key = {n.attr["_signature_output"].s.decode(): n.name for n in graph_def.node
                     if "_signature_output" in n.attr}
    feeds = np.load(MODELS / case / signature / "feeds.npz")
    expected = np.load(MODELS / case / signature / "expected.npz")
    graph = tf.Graph()
    try:
        with graph.as_default():
            tf.graph_util.import_graph_def(graph_def, name="")
        feed_dict = {graph.get_tensor_by_name(by_input_key[key] + ":0"): feeds[key] for key in manifest["inputs"]}
        fetches = {key: graph.get_tensor_by_name(by_output_key.get(key, key) + ":0") for key in manifest["outputs"]}
        with tf.compat.v1.Session(graph=graph) as session:
            got = session.run(fetches, feed_dict)
    except Exception as exc:   # an import or run error is this case's result
        return f"TensorFlow: {' '.join(str(exc).split())[:300]}"
    bad = [key for key in fetches if not np.allclose(got[key], expected[key], rtol=1e-4, atol=1e-5)]
    return f"outputs differ: {', '.join(bad)}" if bad else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", nargs="*", help="fixture names (default: all)")
    parser.add_argument("--no-optimize", action="store_true", help="prune to the signature instead of optimizing")
    parser.add_argument("--dftool", default=str(REPO / ".venv" / "bin" / "dftool"))
    args = parser.parse_args()
    cases = args.cases or sorted(p.name for p in MODELS.iterdir() if (p / "manifest.json").exists())
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        for case in cases:
            for signature in json.loads((MODELS / case / "manifest.json").read_text())["recorded"]:
                problem = check(case, signature, not args.no_optimize, Path(tmp) / "frozen.pb", args.dftool)
                failures += problem is not None
                print(f"{case:24s} {signature:16s} {'ok' if problem is None else problem}")
    print(f"{failures} of the runs failed" if failures else "every frozen graph runs in TensorFlow and matches")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
