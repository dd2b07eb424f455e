"""Unfrozen graphs (family `stateful`): resource variables that live across the runs of one
session, recorded under tests/fixtures/tf_stateful/<case>/ rather than tests/fixtures/tf/ (every
test of tests/fixtures/tf runs a graph once, with no initializer).

A case declares an ordered list of session runs, `b.session_run(label, targets=[...],
fetches=[...])`; the recorder runs them in one TensorFlow session, in order, with the case's feeds,
and writes:

    graph.pb           the GraphDef with its variables (VarHandleOp, initializers), not frozen
    feeds.npz          the feeds every run gets
    expected_<label>.npz   the fetched values of each run that fetches
    case.json          name, family, description, feeds, rtol, atol, ops, notes, and `runs`:
                       [{"name", "targets", "fetches", "expected"}] in order

tests/exec/test_tf_stateful_fixtures.py replays the runs in one dftool Session (and after
`optimize`).
"""
import shutil

import numpy as np
from fixture_files import to_numpy, write_json, write_npz

from .registry import case
from .tf_v1 import tf

STATEFUL_DIR = "tf_stateful"


def record_stateful(spec, builder, graph, root):
    """Run the case's session runs in order and write its directory under root/../tf_stateful."""
    from .recording import RUN_TIMEOUT_MS, session_config

    graph_def = graph.as_graph_def(add_shapes=True)
    directory = root.parent / STATEFUL_DIR / spec.name
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    fresh = tf.Graph()
    with fresh.as_default():
        tf.import_graph_def(graph_def, name="")
    runs = []
    options = tf.RunOptions(timeout_in_ms=RUN_TIMEOUT_MS)
    with tf.Session(graph=fresh, config=session_config(builder.cpu_devices)) as sess:
        for label, targets, fetches in builder.session_runs:
            values = sess.run({"fetches": fetches, "targets": targets}, builder.feeds, options)["fetches"]
            run = {"name": label, "targets": targets, "fetches": fetches}
            if fetches:
                run["expected"] = f"expected_{label}.npz"
                write_npz(directory / run["expected"], {k: to_numpy(v) for k, v in zip(fetches, values)})
            runs.append(run)
    (directory / "graph.pb").write_bytes(graph_def.SerializeToString(deterministic=True))
    write_npz(directory / "feeds.npz", builder.feeds)
    write_json(directory / "case.json", {
        "name": spec.name, "family": spec.family, "description": spec.description,
        "feeds": list(builder.feeds), "rtol": spec.rtol, "atol": spec.atol,
        "ops": sorted({node.op for node in graph_def.node}), "notes": spec.notes, "runs": runs})
    return graph_def


def _resource(name, value):
    return tf.get_variable(name, initializer=np.asarray(value), use_resource=True)


@case("stateful_resource_embedding", "stateful",
      "Resource variables across the runs of one session: the initializer target, an embedding "
      "table trained by GradientDescent on an embedding_lookup (ResourceGather; the sparse update "
      "is a ResourceScatterAdd), ResourceScatter{Sub, Mul, Div, Min, Max, Update} and "
      "ResourceScatterNd{Add, Update} steps, AssignAddVariableOp on a counter, ResourceGather "
      "with batch_dims, VarIsInitializedOp before and after the initializer, DestroyResourceOp.",
      stateful=True)
def stateful_resource_embedding(b):
    table = _resource("table", b.normal(6, 3))
    counter = _resource("counter", np.int64(0))
    batched = _resource("batched", b.normal(2, 3, 4))
    scratch = _resource("scratch", np.float32([1.0, 2.0]))
    ids = b.placeholder("ids", np.array([4, 0, 4, 2], np.int32))
    rows = tf.nn.embedding_lookup(table, ids, name="rows")
    loss = tf.reduce_sum(tf.square(rows - 1.0), name="loss")
    train = tf.train.GradientDescentOptimizer(0.1).minimize(loss, name="train")
    with tf.control_dependencies([train]):
        bumped = tf.raw_ops.AssignAddVariableOp(resource=counter.handle, value=np.int64(1), name="bump")
    updates = b.placeholder("updates", b.uniform(0.5, 1.5, 2, 3))
    scatter_ids = np.array([5, 1], np.int32)
    step = [bumped]
    for op_type in ("ResourceScatterSub", "ResourceScatterMul", "ResourceScatterDiv", "ResourceScatterMax",
                    "ResourceScatterMin", "ResourceScatterUpdate"):
        with tf.control_dependencies(step):
            step = [getattr(tf.raw_ops, op_type)(resource=table.handle, indices=scatter_ids,
                                                 updates=updates * 0.5 if op_type != "ResourceScatterMin"
                                                 else updates * 3.0, name=op_type.lower())]
    for op_type, value in (("ResourceScatterNdAdd", [2.0, -1.0]), ("ResourceScatterNdUpdate", [7.0, 8.0])):
        with tf.control_dependencies(step):
            step = [getattr(tf.raw_ops, op_type)(ref=table.handle, indices=np.array([[0, 1], [3, 2]], np.int64),
                                                 updates=np.float32(value), name=op_type.lower())]
    with tf.control_dependencies(step):
        tf.no_op(name="step")
    tf.raw_ops.DestroyResourceOp(resource=scratch.handle, name="destroy_scratch")
    tf.variables_initializer([table, counter, batched, scratch], name="init")
    checks = [tf.raw_ops.VarIsInitializedOp(resource=v.handle, name=f"{v.op.name}_initialized")
              for v in (table, scratch)]
    reads = [tf.identity(table.read_value(), name="table_value"),
             tf.identity(counter.read_value(), name="counter_value"),
             tf.raw_ops.ResourceGather(resource=batched.handle, indices=np.array([[2, 0], [1, 1]], np.int32),
                                       dtype=tf.float32, batch_dims=1, name="gather_batch_dims"),
             tf.identity(rows, name="rows_value")]
    tf.identity(scratch.read_value(), name="scratch_value")
    names = [t.name for t in checks]
    values = [t.name for t in reads]
    b.session_run("before_init", fetches=names)
    b.session_run("init", targets=["init"])
    b.session_run("initialized", fetches=names + values + ["scratch_value:0"])
    for i in (1, 2, 3):
        b.session_run(f"step{i}", targets=["step"])
        b.session_run(f"after_step{i}", fetches=values + ["loss:0"])
    b.session_run("destroy", targets=["destroy_scratch"])
    b.session_run("destroyed", fetches=names)


@case("stateful_ref_embedding", "stateful",
      "A reference-variable (VariableV2) embedding table across the runs of one session: its "
      "initializer target, GradientDescent on an embedding_lookup (the sparse update is a "
      "ScatterSub), Scatter{Add, Mul, Div, Max, Min, Update} and ScatterNd{Add, Sub, Update} steps "
      "chained through their returned references, IsVariableInitialized before and after.",
      stateful=True)
def stateful_ref_embedding(b):
    table = tf.Variable(b.normal(6, 3), name="table")
    ids = b.placeholder("ids", np.array([4, 0, 4, 2], np.int32))
    rows = tf.nn.embedding_lookup(table, ids, name="rows")
    loss = tf.reduce_sum(tf.square(rows - 1.0), name="loss")
    train = tf.train.GradientDescentOptimizer(0.1).minimize(loss, name="train")
    updates = b.placeholder("updates", b.uniform(0.5, 1.5, 2, 3))
    scatter_ids = np.array([5, 1], np.int32)
    ref = table
    with tf.control_dependencies([train]):
        for update, factor in ((tf.scatter_add, 1.0), (tf.scatter_mul, 0.5), (tf.scatter_div, 0.25),
                               (tf.scatter_max, 0.5), (tf.scatter_min, 3.0), (tf.scatter_update, 0.5)):
            ref = update(ref, scatter_ids, updates * factor)
        for update, value in ((tf.scatter_nd_add, [2.0, -1.0]), (tf.scatter_nd_sub, [0.5, 0.5]),
                              (tf.scatter_nd_update, [7.0, 8.0])):
            ref = update(ref, np.array([[0, 1], [3, 2]], np.int64), np.float32(value))
    tf.identity(ref, name="step")
    initialized = tf.identity(tf.is_variable_initialized(table), name="table_initialized")
    value = tf.identity(table, name="table_value")
    tf.variables_initializer([table], name="init")
    b.session_run("before_init", fetches=[initialized.name])
    b.session_run("init", targets=["init"])
    b.session_run("initialized", fetches=[initialized.name, value.name])
    for i in (1, 2):
        b.session_run(f"step{i}", fetches=["step:0"])
        b.session_run(f"after_step{i}", fetches=[value.name, "loss:0"])
