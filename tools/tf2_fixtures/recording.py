"""Turning a TF2 artifact into a case directory, byte for byte reproducibly.

A case builder returns an `Artifact`: the GraphDef as TensorFlow made it (a concrete function's
graph, or one frozen with convert_variables_to_constants_v2), its feeds, the tensors to fetch,
and optionally what to differentiate. Recording re-imports the GraphDef into a fresh graph, exports
it with `_output_shapes`, runs it in a deterministic session (so expected.npz is what graph.pb
itself computes in TensorFlow) and cross-checks that against the eager reference the builder
computed from the original Python model.

Gradients are TensorFlow's: either tf.gradients of the re-imported graph (works for functional
control flow, which carries its bodies in the function library), or values the builder computed
with tf.GradientTape on the source model (needed for lowered v1 loops, which TensorFlow can only
differentiate with the Python control flow contexts that built them).
"""
import shutil
import zlib
from dataclasses import dataclass, field

import numpy as np
from fixture_files import to_numpy, write_json, write_npz  # tools/fixture_files.py

from .tf2 import keras, tf

GENERATOR = "tools/make_tf2_fixtures.py"
COMPARISON = ("numpy.testing.assert_allclose(actual, expected, rtol, atol, equal_nan=True) for "
              "floating fetches; integer and bool fetches match exactly")
REFERENCE_RTOL, REFERENCE_ATOL = 1e-4, 1e-5  # graph.pb in a session vs the eager source model
MIN_GRADIENT = 1e-3  # a nonzero recorded gradient must reach this, or it tests nothing


@dataclass
class Artifact:
    graph_def: object                    # tf.compat.v1.GraphDef
    feeds: dict                          # "x:0" -> value
    fetches: list                        # tensor names, e.g. "Identity:0"
    reference: dict = None               # fetch -> value the source model computed (eager)
    grad_y: str = None                   # fetch whose sum is differentiated
    grad_xs: list = field(default_factory=list)   # feeds and/or weight Consts ("name:0")
    grads: dict = None                   # x -> tape gradient; None: tf.gradients of graph.pb
    info: dict = field(default_factory=dict)      # extra case.json entries ("lowered", ...)


def seed_everything(name):
    """One seed per case (crc32 of its name) for numpy, TensorFlow and Keras."""
    seed = zlib.crc32(name.encode()) % (2**31)
    keras.utils.set_random_seed(seed)
    tf.random.set_seed(seed)
    return np.random.default_rng(seed)


def session_config():
    """Single-threaded sessions with grappler off: TensorFlow runs the ops of graph.pb."""
    config = tf.compat.v1.ConfigProto(intra_op_parallelism_threads=1,
                                      inter_op_parallelism_threads=1)
    config.graph_options.rewrite_options.disable_meta_optimizer = True
    config.graph_options.optimizer_options.opt_level = tf.compat.v1.OptimizerOptions.L0
    return config


# Set by Python-side tracing, nondeterministically for frozen Keras graphs; no runtime meaning.
UNSTABLE_ATTRS = ("_has_manual_control_dependencies",)


def canonical(graph_def):
    """A copy without UNSTABLE_ATTRS or unused placeholders, its nodes sorted by name.

    Freezing (grappler's inlining inside convert_variables_to_constants_v2) emits nodes in an
    order that varies from run to run; the importer re-orders them topologically, starting from
    this fixed order, so graph.pb comes out the same every time."""
    out = type(graph_def)()
    out.CopyFrom(graph_def)
    _drop_unused_placeholders(out)
    nodes = sorted(out.node, key=lambda node: node.name)
    del out.node[:]
    out.node.extend(nodes)
    for node in [*out.node, *(n for f in out.library.function for n in f.node_def)]:
        for attr in UNSTABLE_ATTRS:
            if attr in node.attr:
                del node.attr[attr]
    return out


UNUSED_PREFIX = "unused_control_flow_input"


def _drop_unused_placeholders(graph_def):
    """Freezing with lower_control_flow=True leaves consumer-less Placeholders named
    unused_control_flow_input[_N], in a number and order that vary from run to run; they
    compute nothing, so they are dropped (the only edit to what TensorFlow made)."""
    used = {name.lstrip("^").split(":")[0] for node in graph_def.node for name in node.input}
    keep = [node for node in graph_def.node
            if not (node.name.startswith(UNUSED_PREFIX) and node.op == "Placeholder")]
    assert not used & ({node.name for node in graph_def.node} - {n.name for n in keep})
    del graph_def.node[:]
    graph_def.node.extend(keep)


def run_graph(artifact):
    """(exported GraphDef with _output_shapes, expected values, gradients) of graph.pb."""
    graph = tf.Graph()
    with graph.as_default():
        tf.graph_util.import_graph_def(canonical(artifact.graph_def), name="")
        grads = None
        if artifact.grad_y is not None and artifact.grads is None:
            y = graph.get_tensor_by_name(artifact.grad_y)
            xs = [graph.get_tensor_by_name(x) for x in artifact.grad_xs]
            grads = tf.compat.v1.gradients(y, xs,
                                           unconnected_gradients=tf.UnconnectedGradients.ZERO)
            grads = [tf.convert_to_tensor(g) for g in grads]
    exported = graph.as_graph_def(add_shapes=True)
    missing = [node.name for node in exported.node if "_output_shapes" not in node.attr
               and graph.get_operation_by_name(node.name).outputs]
    if missing:
        raise ValueError(f"nodes without _output_shapes: {missing[:5]}")
    with tf.compat.v1.Session(graph=graph, config=session_config()) as sess:
        values = sess.run(artifact.fetches, artifact.feeds)
        expected = {name: to_numpy(v) for name, v in zip(artifact.fetches, values)}
        if grads is not None:
            grads = dict(zip(artifact.grad_xs, map(to_numpy, sess.run(grads, artifact.feeds))))
    if artifact.grad_y is not None and grads is None:
        grads = {x: to_numpy(v) for x, v in artifact.grads.items()}
    for x, value in (grads or {}).items():  # exact zeros are an answer; near-zeros are noise
        if 0 < np.max(np.abs(value)) < MIN_GRADIENT:
            raise ValueError(f"the gradient w.r.t. {x} is {np.max(np.abs(value))} at most: "
                             "too small to test anything (saturated?)")
    return exported, expected, grads


def check_reference(name, artifact, expected):
    """graph.pb must compute what the source model computed eagerly."""
    for fetch, value in (artifact.reference or {}).items():
        np.testing.assert_allclose(expected[fetch], np.asarray(value), REFERENCE_RTOL,
                                   REFERENCE_ATOL, err_msg=f"{name}: {fetch} differs from eager")


def generate(spec, root):
    """Build, re-import, run and save one case; returns the GraphDef written."""
    rng = seed_everything(spec.name)
    artifact = spec.build(rng)
    if len(set(artifact.fetches)) != len(artifact.fetches):
        raise ValueError(f"{spec.name}: duplicate fetches")
    exported, expected, grads = run_graph(artifact)
    check_reference(spec.name, artifact, expected)
    save_case(spec, artifact, exported, expected, grads, root)
    return exported


def save_case(spec, artifact, graph_def, expected, grads, root):
    directory = root / spec.name
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    (directory / "graph.pb").write_bytes(graph_def.SerializeToString(deterministic=True))
    write_npz(directory / "feeds.npz", artifact.feeds)
    write_npz(directory / "expected.npz", expected)
    function_nodes = [node for f in graph_def.library.function for node in f.node_def]
    functions = sorted({node.op for node in function_nodes})
    loops = sorted({node.attr["parallel_iterations"].i for node in [*graph_def.node, *function_nodes]
                    if node.op in ("While", "StatelessWhile", "Enter")})
    info = {
        "name": spec.name,
        "family": spec.family,
        "description": spec.description,
        "feeds": list(artifact.feeds),
        "fetches": list(artifact.fetches),
        "rtol": spec.rtol,
        "atol": spec.atol,
        "ops": sorted({node.op for node in graph_def.node}),
        "function_ops": functions,
        "functions": sorted(f.signature.name for f in graph_def.library.function),
        "notes": spec.notes,
        "slow": spec.slow,
        "cpu_devices": 1,
        "parallel_iterations": loops,  # of every loop (While ops, Enter nodes)
        "extra_runs": [],
        **artifact.info,
    }
    if grads is not None:
        write_npz(directory / "expected_grads.npz", grads)
        info["grad_rtol"], info["grad_atol"] = spec.grad_rtol, spec.grad_atol
        info["gradients"] = {"y": artifact.grad_y, "xs": list(artifact.grad_xs),
                             "expected": "expected_grads.npz",
                             "source": "tf.GradientTape on the source model"
                             if artifact.grads is not None else "tf.gradients of graph.pb"}
    write_json(directory / "case.json", info)


def write_manifest(root):
    """manifest.json from every case.json under `root`."""
    import json
    cases, ops = [], set()
    for path in sorted(root.glob("*/case.json")):
        info = json.loads(path.read_text())
        ops.update(info["ops"])
        ops.update(info["function_ops"])
        cases.append({"name": info["name"], "family": info["family"],
                      "fetches": info["fetches"], "slow": info["slow"],
                      "bytes": (path.parent / "graph.pb").stat().st_size})
    write_json(root / "manifest.json", {
        "generator": GENERATOR,
        "tensorflow_version": tf.__version__,
        "keras_version": keras.__version__,
        "numpy_version": np.__version__,
        "comparison": COMPARISON,
        "cases": cases,
        "ops": sorted(ops),
    })


# -- helpers for case builders ---------------------------------------------------------------

def specs_for(feeds, shapes=None):
    """TensorSpecs named after the feeds ("x:0" -> placeholder "x"); `shapes` overrides some."""
    shapes = shapes or {}
    return [tf.TensorSpec(shapes.get(name, np.shape(value)), tf.as_dtype(np.asarray(value).dtype),
                          name=name.split(":")[0]) for name, value in feeds.items()]


def float_feeds(feeds):
    return [name for name, value in feeds.items() if np.asarray(value).dtype.kind == "f"]


def tape_gradients(fn, args, y, xs):
    """{x: d sum(output y) / d x} by tf.GradientTape, calling `fn` eagerly on `args`
    ({"name:0": value}, in argument order) and differentiating w.r.t. the args named in `xs`."""
    tensors = {name: tf.constant(value) for name, value in args.items()}
    with tf.GradientTape() as tape:
        for name in xs:
            tape.watch(tensors[name])
        outputs = tf.nest.flatten(fn(*tensors.values()))
        target = tf.reduce_sum(outputs[y])
    grads = tape.gradient(target, [tensors[name] for name in xs],
                          unconnected_gradients=tf.UnconnectedGradients.ZERO)
    return {name: tf.convert_to_tensor(g).numpy() for name, g in zip(xs, grads)}


def function_artifact(fn, feeds, *, weights=None, shapes=None, y=0, info=None):
    """A tf.function's concrete graph, variable-free, as `as_graph_def()` gives it.

    `fn(*feeds, *weights)`: the feeds become Placeholders ({"x:0": value} in argument order),
    the weights Consts of those names inside the graph ({"w:0": value}). `y`: index of the
    output whose sum is differentiated (None: no gradients), w.r.t. the float feeds and the
    weights, by tf.GradientTape on `fn`."""
    weights = dict(weights or {})

    def graph_fn(*args):
        consts = [tf.constant(v, name=n.split(":")[0]) for n, v in weights.items()]
        return fn(*args, *consts)

    concrete = tf.function(graph_fn).get_concrete_function(*specs_for(feeds, shapes))
    reference = tf.nest.flatten(concrete(*[tf.constant(v) for v in feeds.values()]))
    fetches = [t.name for t in concrete.outputs]
    artifact = Artifact(concrete.graph.as_graph_def(), dict(feeds), fetches,
                        reference=dict(zip(fetches, (r.numpy() for r in reference))),
                        info=dict(info or {}))
    if y is not None:
        artifact.grad_y = fetches[y]
        artifact.grad_xs = float_feeds(feeds) + list(weights)
        artifact.grads = tape_gradients(fn, {**feeds, **weights}, y, artifact.grad_xs)
    return artifact
