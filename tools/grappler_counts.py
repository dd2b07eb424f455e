"""Record what TensorFlow's Grappler makes of every fixture graph: the bar `dftool optimize` must meet.

    TF_CPP_MIN_LOG_LEVEL=3 $TF_PYTHON tools/grappler_counts.py            # every case
    TF_CPP_MIN_LOG_LEVEL=3 $TF_PYTHON tools/grappler_counts.py --only cond --print

For each case in tests/fixtures/tf/<case>/ (graph.pb, case.json) this runs Grappler's meta-optimizer
(tensorflow.python.grappler.tf_optimizer.OptimizeGraph) the way a Session does before the first run:

- the GrapplerItem comes from a MetaGraphDef holding graph.pb, a 'train_op' collection with the
  fetch node names, and a signature_def whose inputs are the case's feeds and whose outputs are its
  fetches (so Grappler knows what is fed, as a Session does);
- the RewriterConfig is the default one (ConfigProto() untouched): constant folding, arithmetic,
  layout (no GPU: it changes nothing), remapper, dependency, loop optimizer, memory, shape, model
  pruner, debug stripper, common subgraph elimination ... with Grappler's own default iteration
  count and its default min_graph_nodes;
- the graph is placed first as a Session's placer would (every node on a full device name;
  no device -> CPU:0): the remapper fuses (_FusedConv2D, _FusedMatMul) only nodes known to be on a
  CPU. `nodes_after_unplaced` records the count without this step, for comparison;
- the cluster is a VirtualCluster with `cpu_devices` (case.json) CPU devices with fixed properties,
  which is what a Session hands Grappler (its device set), and keeps the result independent of the
  machine the script runs on;
- TF_ENABLE_ONEDNN_OPTS=0 as for the fixtures themselves (with oneDNN on, the remapper also makes
  _FusedBatchNormEx, one node fewer in grad_convnet).

The output of every case is checked: it must import into a fresh tf.Graph, and it is run (with
Grappler off) on the case's feeds and compared with expected.npz using the case's tolerances; both
results are recorded. A case Grappler fails on records the error instead of counts.

Written to tests/fixtures/tf/grappler_counts.json (or, with --fixtures tests/fixtures/tf2 --only CASE...,
to that directory's grappler_counts.json: the frozen Keras models' bar for fold_batch_norms) (keys sorted, so a re-run with the same TensorFlow
gives the same file): per case nodes_before, nodes_after (Grappler), nodes_after_unplaced,
ops_after (histogram), reproduces_expected, and the TensorFlow version, RewriterConfig and cluster
used. Last run: TensorFlow 2.21.0 (tensorflow-cpu), every case optimized, imported and reproduced
expected.npz. tests/opt/test_optimize_fixtures.py asserts that
`graphtool.opt.manager.optimize` leaves no more nodes than Grappler did.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ["TF_ENABLE_ONEDNN_OPTS"] = "0"  # must be set before TensorFlow loads

import numpy as np  # noqa: E402
import tensorflow.compat.v1 as tf  # noqa: E402
from google.protobuf import json_format  # noqa: E402
from tensorflow.core.protobuf import device_properties_pb2, meta_graph_pb2  # noqa: E402
from tensorflow.python.grappler import cluster as gcluster  # noqa: E402
from tensorflow.python.grappler import tf_optimizer  # noqa: E402

tf.disable_v2_behavior()
tf.disable_control_flow_v2()

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "tf"
RUN_TIMEOUT_MS = 60_000
# Fixed device properties: the cost-based parts of Grappler see the same machine everywhere.
CPU_PROPERTIES = {"type": "CPU", "num_cores": 1, "frequency": 1000, "memory_size": 1 << 34}


def node_name(tensor: str) -> str:
    return tensor.split(":", 1)[0].lstrip("^")


def load_case(directory: Path):
    graph_def = tf.GraphDef()
    graph_def.ParseFromString((directory / "graph.pb").read_bytes())
    return graph_def, json.loads((directory / "case.json").read_text())


def tensor_info(graph: tf.Graph, name: str) -> meta_graph_pb2.TensorInfo:
    tensor = graph.get_tensor_by_name(name if ":" in name else f"{name}:0")
    return meta_graph_pb2.TensorInfo(name=tensor.name, dtype=tensor.dtype.as_datatype_enum)


def place(graph_def):
    """A copy with every node on a full device name, as a Session's placer leaves the graph it hands
    Grappler: no device -> CPU:0, '/device:CPU:1' -> '/job:localhost/replica:0/task:0/device:CPU:1'.
    (It matters: the remapper fuses only nodes it knows to be on a CPU.)"""
    placed = tf.GraphDef()
    placed.CopyFrom(graph_def)
    for node in placed.node:
        spec = tf.DeviceSpec.from_string(node.device or "/device:CPU:0")
        node.device = spec.make_merged_spec(tf.DeviceSpec(job="localhost", replica=0, task=0)).to_string()
    return placed


def make_meta_graph(graph_def, case) -> meta_graph_pb2.MetaGraphDef:
    """graph.pb with the fetches as 'train_op' nodes and a signature naming feeds and fetches."""
    graph = tf.Graph()
    with graph.as_default():
        tf.import_graph_def(graph_def, name="")
    meta = meta_graph_pb2.MetaGraphDef()
    meta.graph_def.CopyFrom(graph_def)
    meta.collection_def["train_op"].node_list.value.extend(sorted({node_name(f) for f in case["fetches"]}))
    signature = meta.signature_def["fixture"]
    for feed in case["feeds"]:
        signature.inputs[feed].CopyFrom(tensor_info(graph, feed))
    for fetch in case["fetches"]:
        signature.outputs[fetch].CopyFrom(tensor_info(graph, fetch))
    return meta


def make_cluster(cpu_devices: int) -> gcluster.Cluster:
    devices = [device_properties_pb2.NamedDevice(
        name=f"/job:localhost/replica:0/task:0/device:CPU:{i}",
        properties=device_properties_pb2.DeviceProperties(**CPU_PROPERTIES)) for i in range(cpu_devices)]
    return gcluster.Cluster(devices=devices)


def grappler(graph_def, case, config):
    cluster = make_cluster(case.get("cpu_devices", 1))
    try:
        return tf_optimizer.OptimizeGraph(config, make_meta_graph(graph_def, case), cluster=cluster,
                                          graph_id=case["name"].encode())
    finally:
        cluster.Shutdown()


def session_config(cpu_devices: int):
    """A session that runs exactly the given graph (Grappler off), as the fixtures were made."""
    config = tf.ConfigProto(device_count={"CPU": cpu_devices}, intra_op_parallelism_threads=1,
                            inter_op_parallelism_threads=1)
    config.graph_options.rewrite_options.disable_meta_optimizer = True
    config.graph_options.optimizer_options.opt_level = tf.OptimizerOptions.L0
    return config


def runs(directory: Path, case):
    yield "", directory / "feeds.npz", directory / "expected.npz"
    for extra in case.get("extra_runs", []):
        yield extra["name"], directory / extra["feeds"], directory / extra["expected"]


def mismatches(fetch, actual, expected, case) -> list[str]:
    actual = np.asarray(actual)
    if actual.shape != expected.shape:
        return [f"{fetch}: shape {actual.shape} vs {expected.shape}"]
    if expected.dtype.kind in "fc":
        close = np.allclose(actual, expected, rtol=case.get("rtol", 1e-5), atol=case.get("atol", 1e-6), equal_nan=True)
    elif expected.dtype.kind == "S":
        close = [bytes(v) for v in actual.ravel()] == [bytes(v) for v in expected.ravel()]
    else:
        close = np.array_equal(actual, expected)
    return [] if close else [f"{fetch}: values differ"]


def check_output(optimized, directory: Path, case) -> list[str]:
    """Import Grappler's graph into a fresh tf.Graph (raises if invalid) and run every feed set."""
    graph = tf.Graph()
    with graph.as_default():
        tf.import_graph_def(optimized, name="")
    problems = []
    options = tf.RunOptions(timeout_in_ms=RUN_TIMEOUT_MS)
    with tf.Session(graph=graph, config=session_config(case.get("cpu_devices", 1))) as sess:
        for label, feeds_file, expected_file in runs(directory, case):
            feeds, expected = dict(np.load(feeds_file)), np.load(expected_file)
            values = sess.run(case["fetches"], feed_dict=feeds, options=options)
            for fetch, value in zip(case["fetches"], values):
                problems += [f"{label or 'default'} run: {p}" for p in mismatches(fetch, value, expected[fetch], case)]
    return problems


def record_case(directory: Path, config) -> dict:
    graph_def, case = load_case(directory)
    entry = {"nodes_before": len(graph_def.node), "fetches": case["fetches"]}
    try:
        optimized = grappler(place(graph_def), case, config)
        entry["nodes_after_unplaced"] = len(grappler(graph_def, case, config).node)
    except Exception as exc:  # recorded, not fatal: the table says which cases Grappler refused
        return {**entry, "error": f"grappler: {type(exc).__name__}: {' '.join(str(exc).split())}"}
    entry["nodes_after"] = len(optimized.node)
    entry["ops_after"] = dict(sorted(Counter(node.op for node in optimized.node).items()))
    try:
        problems = check_output(optimized, directory, case)
    except Exception as exc:
        return {**entry, "error": f"grappler output invalid: {type(exc).__name__}: {' '.join(str(exc).split())}"}
    entry["reproduces_expected"] = not problems
    if problems:
        entry["mismatches"] = problems[:5]
    return entry


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", help="just these cases (the file is updated in place)")
    parser.add_argument("--print", action="store_true", help="print the table to stdout")
    parser.add_argument("--fixtures", type=Path, default=FIXTURES,
                        help="the fixture directory (default tests/fixtures/tf); the counts go to its grappler_counts.json")
    args = parser.parse_args(argv)
    fixtures, output = args.fixtures.resolve(), args.fixtures.resolve() / "grappler_counts.json"
    config = tf.ConfigProto()  # Grappler's defaults, as a Session without options uses them
    cases = sorted(p.parent.name for p in fixtures.glob("*/graph.pb"))
    previous = json.loads(output.read_text())["cases"] if args.only and output.exists() else {}
    results = dict(previous)
    for name in cases:
        if not args.only or name in args.only:
            results[name] = record_case(fixtures / name, config)
            entry = results[name]
            print(f"{name:28} {entry['nodes_before']:5} -> {entry.get('nodes_after', 'ERROR'):>5}"
                  f"  (unplaced {entry.get('nodes_after_unplaced', '-')})",
                  file=sys.stderr if not args.print else sys.stdout)
    document = {
        "generator": "tools/grappler_counts.py",
        "tensorflow_version": tf.__version__,
        "rewriter_config": json_format.MessageToDict(config.graph_options.rewrite_options,
                                                      preserving_proto_field_name=True) or "default (empty RewriterConfig)",
        "cluster": {"kind": "VirtualCluster", "devices": "cpu_devices x CPU", "properties": CPU_PROPERTIES},
        "environment": {"TF_ENABLE_ONEDNN_OPTS": "0"},
        "cases": results,
    }
    output.write_text(json.dumps(document, indent=2, sort_keys=True) + "\n")
    failed = [name for name, entry in results.items() if "error" in entry]
    if failed:
        print(f"grappler failed on: {', '.join(failed)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
