"""Running a case in TensorFlow and writing its files, byte for byte reproducibly.

Determinism comes from: a seed per case (crc32 of its name) for numpy and TensorFlow,
single-threaded sessions with grappler and the classic graph optimizer off (so TensorFlow runs
exactly the ops in graph.pb), deterministic proto serialization and fixed .npz timestamps.
"""
import json
import shutil
import zlib

import numpy as np
from fixture_files import to_numpy, write_json, write_npz  # tools/fixture_files.py, no TensorFlow

from .builder import Builder
from .tf_v1 import tf

GENERATOR = "tools/make_tf_fixtures.py"
RUN_TIMEOUT_MS = 60_000
COMPARISON = ("numpy.testing.assert_allclose(actual, expected, rtol, atol, equal_nan=True) for "
              "floating and complex fetches; integer, bool and string fetches match exactly")


# -- running TensorFlow ----------------------------------------------------------------------

def session_config(cpu_devices):
    """Deterministic sessions that run exactly the ops in the GraphDef."""
    config = tf.ConfigProto(device_count={"CPU": cpu_devices}, intra_op_parallelism_threads=1,
                            inter_op_parallelism_threads=1, allow_soft_placement=False)
    config.graph_options.rewrite_options.disable_meta_optimizer = True
    config.graph_options.optimizer_options.opt_level = tf.OptimizerOptions.L0
    return config


def freeze(graph, graph_def, builder):
    """Initialize the variables and turn them into Const (pruning to what the fetches need)."""
    with tf.Session(graph=graph, config=session_config(builder.cpu_devices)) as sess:
        sess.run(tf.global_variables_initializer())
        outputs = sorted({name.rsplit(":", 1)[0] for name in builder.fetches})
        return tf.graph_util.convert_variables_to_constants(sess, graph_def, outputs)


def feed_sets(builder):
    """{run label: feeds} for the default run (label "") and every variant."""
    runs = {"": builder.feeds}
    runs.update({label: {**builder.feeds, **over} for label, over in builder.variants.items()})
    return runs


def record_gradients(graph, builder):
    """{run label: {x: value of tf.gradients(y, xs)}} for a case that differentiates, else {}.

    TensorFlow differentiates v1 loops and conds only with the Python-side control flow contexts
    that built them (a re-imported GraphDef has none), so the gradients are added to the case's
    own graph, whose variables are initialized here. The GraphDef to be written was taken before,
    so it stays forward-only; freezing only turns the variables into Const of the same values, so
    these are the gradients of the frozen graph too. Structurally zero gradients come back as
    zeros (as `dftool grad` emits them) and sparse ones (IndexedSlices) dense."""
    if builder.grad_y is None:
        return {}
    with graph.as_default():
        y = graph.get_tensor_by_name(builder.grad_y)
        xs = [graph.get_tensor_by_name(name) for name in builder.grad_xs]
        grads = tf.gradients(y, xs, unconnected_gradients=tf.UnconnectedGradients.ZERO)
        grads = [tf.convert_to_tensor(grad) for grad in grads]
        init = tf.global_variables_initializer()
    options = tf.RunOptions(timeout_in_ms=RUN_TIMEOUT_MS)
    with tf.Session(graph=graph, config=session_config(builder.cpu_devices)) as sess:
        sess.run(init)
        return {label: dict(zip(builder.grad_xs, map(to_numpy, sess.run(grads, feeds, options))))
                for label, feeds in feed_sets(builder).items()}


def run_graph(graph_def, builder):
    """Import `graph_def` into a fresh graph, export it with shapes and run every feed set.

    Returns the exported GraphDef and {run label: (feeds, expected)}; the default run's label
    is ""."""
    graph = tf.Graph()
    with graph.as_default():
        tf.import_graph_def(graph_def, name="")
    exported = graph.as_graph_def(add_shapes=True)
    missing = [node.name for node in exported.node if "_output_shapes" not in node.attr
               and graph.get_operation_by_name(node.name).outputs]  # Assert etc. have none
    if missing:
        raise ValueError(f"nodes without _output_shapes: {missing[:5]}")
    absent = [name for name in [builder.grad_y or "", *builder.grad_xs]
              if name and name.rsplit(":", 1)[0] not in {node.name for node in exported.node}]
    if absent:
        raise ValueError(f"tensors to differentiate missing after freezing: {absent}")
    results = {}
    options = tf.RunOptions(timeout_in_ms=RUN_TIMEOUT_MS)
    with tf.Session(graph=graph, config=session_config(builder.cpu_devices)) as sess:
        for label, feeds in feed_sets(builder).items():
            values = sess.run(builder.fetches, feed_dict=feeds, options=options)
            results[label] = (feeds, {k: to_numpy(v) for k, v in zip(builder.fetches, values)})
    return exported, results


def generate(spec, root):
    """Build, (freeze,) re-import, run and save one case; returns the GraphDef written."""
    seed = zlib.crc32(spec.name.encode())
    builder = Builder(np.random.default_rng(seed))
    graph = tf.Graph()
    with graph.as_default():
        tf.set_random_seed(seed % (2**31))
        spec.build(builder)
        if spec.stateful:
            from .stateful import record_stateful
            return record_stateful(spec, builder, graph, root)
        graph_def = graph.as_graph_def()
        if tf.global_variables():
            graph_def = freeze(graph, graph_def, builder)
    if len(set(builder.fetches)) != len(builder.fetches):
        raise ValueError(f"{spec.name}: duplicate fetches")
    gradients = record_gradients(graph, builder)  # after freezing: no gradient nodes in graph_def
    exported, results = run_graph(graph_def, builder)
    save_case(spec, builder, exported, results, gradients, root)
    return exported


# -- writing files ---------------------------------------------------------------------------

def save_case(spec, builder, graph_def, results, gradients, root):
    """Write graph.pb, the .npz files and case.json for one case (`gradients`: {run label:
    {x: gradient}} from record_gradients)."""
    directory = root / spec.name
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    (directory / "graph.pb").write_bytes(graph_def.SerializeToString(deterministic=True))
    extra_runs = []
    for label, (feeds, expected) in results.items():
        suffix = f"_{label}" if label else ""
        write_npz(directory / f"feeds{suffix}.npz", feeds)
        write_npz(directory / f"expected{suffix}.npz", expected)
        run = {"name": label, "feeds": f"feeds{suffix}.npz", "expected": f"expected{suffix}.npz"}
        if gradients:
            write_npz(directory / f"expected_grads{suffix}.npz", gradients[label])
            run["expected_grads"] = f"expected_grads{suffix}.npz"
        if label:
            extra_runs.append(run)
    info = {
        "name": spec.name,
        "family": spec.family,
        "description": spec.description,
        "feeds": list(builder.feeds),
        "fetches": list(builder.fetches),
        "rtol": spec.rtol,
        "atol": spec.atol,
        "ops": sorted({node.op for node in graph_def.node}),
        "notes": spec.notes,
        "cpu_devices": builder.cpu_devices,
        "extra_runs": extra_runs,
    }
    if builder.skipped:
        info["skipped"] = builder.skipped
    if builder.grad_y is not None:
        info["gradients"] = {"y": builder.grad_y, "xs": builder.grad_xs,
                             "expected": "expected_grads.npz"}
    write_json(directory / "case.json", info)


def write_manifest(root):
    """manifest.json from every case.json under `root`."""
    cases, skipped, ops = [], [], set()
    for path in sorted(root.glob("*/case.json")):
        info = json.loads(path.read_text())
        ops.update(info["ops"])
        cases.append({"name": info["name"], "family": info["family"], "fetches": info["fetches"],
                      "extra_runs": [run["name"] for run in info["extra_runs"]]})
        skipped += [{"case": info["name"], **item} for item in info.get("skipped", [])]
    write_json(root / "manifest.json", {
        "generator": GENERATOR,
        "tensorflow_version": tf.__version__,
        "numpy_version": np.__version__,
        "comparison": COMPARISON,
        "cases": cases,
        "ops": sorted(ops),
        "skipped": skipped,
    })
