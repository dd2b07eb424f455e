"""Every kernel registered for the GPU runs on the strict GPU test double (cupy-like arrays over
numpy: no implicit host conversion, no host/device mixing, cupy's dtypes only) and gives the CPU's
values: all TensorFlow fixtures, single-op cases for the ops the fixtures miss, and small stateful
graphs. With cupy importable (no GPU needed) every array-module name the kernels used is checked
to exist in cupy. What this cannot see: cupy's own numerical differences and speed (the real-GPU
tests in test_gpu_real.py cover those where a GPU exists)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from graphtool import dtypes, graph_io
from graphtool.builder import GraphBuilder
from graphtool.exec import strict_xp
from graphtool.exec.kernels import GPU, all_kernels
from graphtool.exec.kernels.array_common import SCATTER_UFUNCS, accumulate_at
from graphtool.exec.kernels.gpu_segment import scatter_multiply
from graphtool.exec.plan import runs_without_kernel
from graphtool.exec.session import Session
from graphtool.exec.sim_gpu import SimulatedGPUDevice
from graphtool.ir import from_graphdef

from .gpu_op_cases import CASES, TARGET_CASES
from .test_input_producers import counters_graph, run_counters
from .test_tf_fixtures_run import assert_matches

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "tf"
FIXTURE_CASES = sorted(json.loads(path.read_text())["name"] for path in FIXTURES.glob("*/case.json"))


def strict_gpu() -> SimulatedGPUDevice:
    return SimulatedGPUDevice(strict=True)


def run_fixture(case: str, device):
    spec = json.loads((FIXTURES / case / "case.json").read_text())
    graph = from_graphdef(graph_io.load_graphdef(str(FIXTURES / case / "graph.pb")), case)
    result = Session(graph, device=device, threads=1).run(spec["fetches"], dict(np.load(FIXTURES / case / "feeds.npz")),
                                                          timeout=60)
    return spec, graph, result


@pytest.mark.parametrize("case", FIXTURE_CASES)
def test_fixture_on_strict_gpu_double_matches_tensorflow(case):
    device = strict_gpu()
    spec, _, result = run_fixture(case, device)
    expected = np.load(FIXTURES / case / "expected.npz")
    rtol, atol = max(spec.get("rtol", 0), 1e-4), max(spec.get("atol", 0), 1e-5)
    for name, value in zip(spec["fetches"], result.values):
        assert isinstance(value, np.ndarray), f"{name}: fetched a {type(value).__name__}, not a host array"
        assert_matches(name, value, expected[name], rtol, atol)


def single_op_graph(op: str, inputs, attrs):
    builder = GraphBuilder()
    builder.op(op, inputs, name="op", **attrs)
    graph = builder.graph
    node = graph.get("op")
    return graph, [f"op:{i}" for i in range(node.num_outputs)]


def assert_same_values(name: str, gpu_value, cpu_value):
    assert type(gpu_value) is np.ndarray, f"{name}: {type(gpu_value).__name__}"
    assert gpu_value.dtype == cpu_value.dtype and gpu_value.shape == cpu_value.shape, name
    if cpu_value.dtype.kind in "fc":
        np.testing.assert_allclose(gpu_value, cpu_value, rtol=1e-5, atol=1e-6, equal_nan=True, err_msg=name)
    else:
        np.testing.assert_array_equal(gpu_value, cpu_value, err_msg=name)


@pytest.mark.parametrize("op, inputs, attrs", [pytest.param(*case[1:], id=case[0]) for case in CASES])
def test_single_op_on_strict_gpu_double_matches_cpu(op, inputs, attrs):
    graph, fetches = single_op_graph(op, inputs, attrs)
    cpu = Session(graph, device="cpu", threads=1).run(fetches).values
    device = strict_gpu()
    gpu = Session(graph, device=device, threads=1).run(fetches).values
    assert "op" in device.trace.launches(), "the op did not run as a GPU kernel"
    for name, gpu_value, cpu_value in zip(fetches, gpu, cpu):
        assert_same_values(name, gpu_value, cpu_value)


@pytest.mark.parametrize("op, inputs, attrs", [pytest.param(*case[1:], id=case[0]) for case in TARGET_CASES])
def test_op_without_outputs_runs_on_strict_gpu_double(op, inputs, attrs):
    graph, _ = single_op_graph(op, inputs, attrs)
    device = strict_gpu()
    Session(graph, device=device, threads=1).run([], targets=["op"])
    # ControlTrigger is run by the executor's frame logic, the others by their GPU kernels.
    assert device.trace.launches() == ([] if runs_without_kernel(op) else ["op"])


def variables_graph():
    """Ref and resource variables: create, assign, update, read, check initialization."""
    b = GraphBuilder()
    float32 = dtypes.as_dtype("float32")
    ref = b.op("VariableV2", [], name="ref", shape=[2, 3], dtype=float32)
    old_ref = b.op("Variable", [], name="old_ref", shape=[2, 3], dtype=float32)
    initialized_before = b.op("IsVariableInitialized", [ref], name="ref_initialized", dtype=float32)
    with b.control_dependencies([initialized_before.node]):
        assigned = b.op("Assign", [ref, np.ones((2, 3), np.float32)], name="assign")
    added = b.op("AssignAdd", [assigned, np.full((2, 3), 2, np.float32)], name="assign_add")
    subtracted = b.op("AssignSub", [added, np.full((2, 3), 0.5, np.float32)], name="assign_sub")
    b.op("Assign", [old_ref, subtracted], name="assign_old")
    handle = b.op("VarHandleOp", [], name="handle", dtype=float32, shape=[2, 3], shared_name="resource")
    b.op("VarIsInitializedOp", [handle], name="resource_initialized")
    write = b.op("AssignVariableOp", [handle, np.full((2, 3), 4, np.float32)], name="write")
    with b.control_dependencies([write]):
        add = b.op("AssignAddVariableOp", [handle, np.ones((2, 3), np.float32)], name="add")
    with b.control_dependencies([add]):
        sub = b.op("AssignSubVariableOp", [handle, np.full((2, 3), 3, np.float32)], name="sub")
    with b.control_dependencies([sub]):
        b.op("ReadVariableOp", [handle], name="read", dtype=float32)
        b.op("ResourceGather", [handle, np.array([1, 0], np.int32)], name="gather", dtype=float32)
    return b.graph


def test_variables_on_strict_gpu_double_match_cpu():
    fetches = ["ref_initialized:0", "assign_old:0", "read:0", "gather:0"]
    graph = variables_graph()
    cpu = Session(graph, device="cpu", threads=1).run(fetches).values
    gpu = Session(graph, device=strict_gpu(), threads=1).run(fetches).values
    for name, gpu_value, cpu_value in zip(fetches, gpu, cpu):
        assert_same_values(name, gpu_value, cpu_value)
    assert float(gpu[2][0, 0]) == 2.0 and float(gpu[1][0, 0]) == 2.5


def scatter_variables_graph():
    """A resource variable updated at rows and at index tuples, read, then destroyed."""
    b = GraphBuilder()
    float32 = dtypes.as_dtype("float32")
    handle = b.op("VarHandleOp", [], name="table", dtype=float32, shape=[4, 2], shared_name="table")
    step = b.op("AssignVariableOp", [handle, np.arange(8, dtype=np.float32).reshape(4, 2)], name="init")
    rows = np.array([[3, 1], [3, 0]], np.int32)
    for op, updates in (("ResourceScatterAdd", np.ones((2, 2, 2), np.float32)),
                        ("ResourceScatterSub", np.float32(0.5)),
                        ("ResourceScatterMax", np.full((2, 2, 2), 4, np.float32)),
                        ("ResourceScatterMin", np.full((2, 2, 2), 9, np.float32)),
                        ("ResourceScatterMul", np.float32(2)),
                        ("ResourceScatterDiv", np.float32(4)),
                        ("ResourceScatterUpdate", np.full((1, 2), -1, np.float32))):
        with b.control_dependencies([step]):
            step = b.op(op, [handle, rows if updates.ndim != 2 else np.array([2], np.int64), updates], name=op)
    for op in ("ResourceScatterNdAdd", "ResourceScatterNdSub", "ResourceScatterNdMax", "ResourceScatterNdMin",
               "ResourceScatterNdUpdate"):
        with b.control_dependencies([step]):
            step = b.op(op, [handle, np.array([[0, 1], [3, 0]], np.int32), np.array([2, 7], np.float32)], name=op)
    with b.control_dependencies([step]):
        read = b.op("ReadVariableOp", [handle], name="scattered", dtype=float32)
    with b.control_dependencies([read.node]):
        b.op("DestroyResourceOp", [handle], name="destroy")
    # The ref-variable forms, each taking the reference the previous one returned.
    ref = b.op("Assign", [b.op("VariableV2", [], name="ref_table", shape=[4, 2], dtype=float32),
                          np.arange(8, dtype=np.float32).reshape(4, 2)], name="ref_init")
    for op, updates in (("ScatterAdd", np.ones((2, 2, 2), np.float32)), ("ScatterSub", np.float32(0.5)),
                        ("ScatterMax", np.full((2, 2, 2), 4, np.float32)),
                        ("ScatterMin", np.full((2, 2, 2), 9, np.float32)), ("ScatterMul", np.float32(2)),
                        ("ScatterDiv", np.float32(4)), ("ScatterUpdate", np.full((1, 2), -1, np.float32))):
        ref = b.op(op, [ref, rows if updates.ndim != 2 else np.array([2], np.int64), updates], name=op)
    for op in ("ScatterNdAdd", "ScatterNdSub", "ScatterNdMax", "ScatterNdMin", "ScatterNdUpdate"):
        ref = b.op(op, [ref, np.array([[0, 1], [3, 0]], np.int32), np.array([2, 7], np.float32)], name=op)
    b.identity(ref, name="ref_scattered")
    return b.graph


def test_resource_scatter_on_strict_gpu_double_matches_cpu():
    graph = scatter_variables_graph()
    fetches = ["scattered:0", "ref_scattered:0"]
    cpu, cpu_ref = Session(graph, device="cpu", threads=1).run(fetches, targets=["destroy"]).values
    gpu, gpu_ref = Session(graph, device=strict_gpu(), threads=1).run(fetches, targets=["destroy"]).values
    assert_same_values("scattered:0", gpu, cpu)
    assert_same_values("ref_scattered:0", gpu_ref, cpu_ref)
    np.testing.assert_array_equal(cpu_ref, cpu)   # the ref forms compute what the resource ones do
    # rows 3 (twice), 1 and 0 got +1 each time, -0.5 each time, then max 4, min 9, *2 and /4 each
    # time; row 2 became
    # -1; then the Nd updates at (0, 1) and (3, 0).
    expected = np.arange(8, dtype=np.float32).reshape(4, 2)
    np.add.at(expected, [3, 1, 3, 0], 0.5)
    expected[[0, 1, 3]] = np.minimum(np.maximum(expected[[0, 1, 3]], 4), 9)
    expected[[0, 1, 3]] /= np.array([[2], [2], [4]], np.float32)   # x2 then /4 per occurrence
    expected[2] = -1
    expected[0, 1], expected[3, 0] = 2, 7
    np.testing.assert_array_equal(cpu, expected)


def stack_and_gradient_array_graph():
    """A stack pushed twice, popped once and closed; a TensorArray's gradient array with a shape."""
    b = GraphBuilder()
    float32 = dtypes.as_dtype("float32")
    stack = b.op("StackV2", [np.int32(-1)], name="stack", elem_type=float32)
    first = b.op("StackPushV2", [stack, np.ones(3, np.float32)], name="push1")
    with b.control_dependencies([first.node]):
        second = b.op("StackPushV2", [stack, np.arange(3, dtype=np.float32)], name="push2")
    with b.control_dependencies([second.node]):
        popped = b.op("StackPopV2", [stack], name="pop", elem_type=float32)
    with b.control_dependencies([popped.node]):
        b.op("StackCloseV2", [stack], name="close")
    array = b.tensor_array(float32, 2, element_shape=[3])
    written = array.write(0, np.full(3, 5, np.float32)).write(1, np.ones(3, np.float32))
    grad = b.op("TensorArrayGradWithShape", [written.handle, written.flow, np.array([2], np.int32)],
                name="ta_grad", source="gradients")
    b.op("TensorArraySizeV3", [grad[0], grad[1]], name="grad_size")
    return b.graph


def test_stack_close_and_tensor_array_gradient_on_strict_gpu_double():
    graph = stack_and_gradient_array_graph()
    device = strict_gpu()
    values = Session(graph, device=device, threads=1).run(["pop:0", "grad_size:0"], targets=["close"]).values
    np.testing.assert_array_equal(values[0], np.arange(3, dtype=np.float32))
    assert int(values[1]) == 2
    assert {"close", "ta_grad"} <= set(device.trace.launches())


def tables_graph():
    """Lookup tables the fixtures do not reach: a legacy mutable table (import, insert), a V2 one
    (remove, export) and static tables filled from a vocabulary file (fed `vocab`)."""
    b = GraphBuilder()
    string, int64 = dtypes.as_dtype("string"), dtypes.as_dtype("int64")
    keys = np.array([b"a", b"b", b"c"], dtype=object)
    legacy = b.op("MutableHashTable", [], name="legacy", key_dtype=string, value_dtype=int64)
    imported = b.op("LookupTableImport", [legacy, keys, np.array([1, 2, 3], np.int64)], name="legacy_import")
    with b.control_dependencies([imported]):
        inserted = b.op("LookupTableInsert", [legacy, keys[:1], np.array([9], np.int64)], name="legacy_insert")
    with b.control_dependencies([inserted]):
        b.op("LookupTableFind", [legacy, keys, np.int64(-1)], name="legacy_find")
    table = b.op("MutableHashTableV2", [], name="mutable", key_dtype=string, value_dtype=int64)
    filled = b.op("LookupTableInsertV2", [table, keys, np.array([4, 5, 6], np.int64)], name="insert")
    with b.control_dependencies([filled]):
        removed = b.op("LookupTableRemoveV2", [table, keys[1:2]], name="remove")
    with b.control_dependencies([removed]):
        b.op("LookupTableExportV2", [table], name="export", Tkeys=string, Tvalues=int64)
    vocab = b.placeholder(string, [], name="vocab")
    for op, table_op in (("InitializeTableFromTextFileV2", "HashTableV2"), ("InitializeTableFromTextFile", "HashTable")):
        handle = b.op(table_op, [], name=f"{op}_table", key_dtype=string, value_dtype=int64)
        init = b.op(op, [handle, vocab], name=f"{op}_init", key_index=-2, value_index=-1)
        with b.control_dependencies([init]):
            b.op("LookupTableFind" + ("V2" if op.endswith("V2") else ""), [handle, keys, np.int64(-1)], name=f"{op}_find")
    return b.graph


def test_tables_on_strict_gpu_double_match_cpu(tmp_path):
    (tmp_path / "vocab.txt").write_bytes(b"c\na\n")
    fetches = ["legacy_find:0", "export:0", "export:1", "InitializeTableFromTextFileV2_find:0",
               "InitializeTableFromTextFile_find:0"]
    feeds = {"vocab:0": np.array(str(tmp_path / "vocab.txt").encode(), dtype=object)}
    graph = tables_graph()
    cpu = Session(graph, device="cpu", threads=1).run(fetches, feeds).values
    gpu = Session(graph, device=strict_gpu(), threads=1).run(fetches, feeds).values
    for name, gpu_value, cpu_value in zip(fetches, gpu, cpu):
        assert_same_values(name, gpu_value, cpu_value)
    assert gpu[0].tolist() == [9, 2, 3] and gpu[3].tolist() == [1, -1, 0]
    assert sorted(zip(gpu[1].tolist(), gpu[2].tolist())) == [(b"a", 4), (b"c", 6)]


def queues_graph():
    """Every queue and reader op (V2 and legacy): `fill_<v>` enqueues, `take_<v>` dequeues,
    `read` reads the file names queued in `files` (fed `names`)."""
    b = GraphBuilder()
    int32, string = dtypes.as_dtype("int32"), dtypes.as_dtype("string")
    for suffix in ("V2", ""):
        queues = [b.op(f"FIFOQueue{suffix}", [], name=f"fifo{suffix}", component_types=[int32], shapes=[[2]]),
                  b.op(f"PaddingFIFOQueue{suffix}", [], name=f"padding{suffix}", component_types=[int32], shapes=[[None]]),
                  b.op(f"RandomShuffleQueue{suffix}", [], name=f"shuffle{suffix}", component_types=[int32], shapes=[[2]],
                       seed=1, seed2=2)]
        for queue in queues:
            kind = queue.node.name
            one = b.op(f"QueueEnqueue{suffix}", [queue, [np.array([1, 2], np.int32)]], name=f"{kind}_one")
            with b.control_dependencies([one]):   # in this order on every device
                many = b.op(f"QueueEnqueueMany{suffix}", [queue, [np.arange(6, dtype=np.int32).reshape(3, 2)]],
                            name=f"{kind}_many")
            with b.control_dependencies([one, many]):
                b.op(f"QueueSize{suffix}", [queue], name=f"fill_{kind}")
            first = b.op(f"QueueDequeue{suffix}", [queue], name=f"{kind}_first", component_types=[int32])
            with b.control_dependencies([first[0]]):
                batch = b.op(f"QueueDequeueMany{suffix}", [queue, np.int32(2)], name=f"{kind}_batch",
                             component_types=[int32])
            with b.control_dependencies([batch[0]]):
                closed = b.op(f"QueueClose{suffix}", [queue], name=f"{kind}_close")
            with b.control_dependencies([closed]):
                b.op(f"QueueDequeueUpTo{suffix}", [queue, np.int32(5)], name=f"{kind}_rest", component_types=[int32])
                b.op(f"QueueIsClosed{suffix}", [queue], name=f"{kind}_is_closed")
    files = b.op("FIFOQueueV2", [], name="files", component_types=[string], shapes=[[]])
    b.op("QueueEnqueueManyV2", [files, [b.placeholder(string, [None], name="names")]], name="files_fill")
    for op, attrs in (("TFRecordReaderV2", {}), ("TextLineReaderV2", {}), ("WholeFileReaderV2", {}),
                      ("FixedLengthRecordReaderV2", {"record_bytes": 2})):
        reader = b.op(op, [], name=op, **attrs)
        read = b.op("ReaderReadV2", [reader, files], name=f"{op}_read")
        with b.control_dependencies([read[0]]):
            more = b.op("ReaderReadUpToV2", [reader, files, np.int64(3)], name=f"{op}_more")
        with b.control_dependencies([more[0]]):
            b.op("ReaderNumRecordsProducedV2", [reader], name=f"{op}_produced")
            b.op("ReaderNumWorkUnitsCompletedV2", [reader], name=f"{op}_completed")
            b.op("ReaderResetV2", [reader], name=f"{op}_reset")
    return b.graph


def test_queues_and_readers_on_strict_gpu_double_match_cpu(tmp_path):
    """Queues and readers run from host memory on a GPU, as in TensorFlow: the same values."""
    (tmp_path / "a.txt").write_bytes(b"line1\nline2\nline3\nline4\n")
    names = np.array([str(tmp_path / "a.txt").encode()] * 2, dtype=object)

    def run(device) -> list:
        session = Session(queues_graph(), device=device, threads=1)
        values = []
        for suffix in ("V2", ""):
            for kind in ("fifo", "padding", "shuffle"):
                kind += suffix
                values += session.run([f"fill_{kind}:0"]).values
                values += session.run([f"{kind}_first:0", f"{kind}_batch:0", f"{kind}_rest:0",
                                       f"{kind}_is_closed:0"]).values
        for op in ("TextLineReaderV2", "FixedLengthRecordReaderV2"):
            session.run([], {"names": names}, targets=["files_fill"])
            values += session.run([f"{op}_read:1", f"{op}_more:1", f"{op}_produced:0", f"{op}_completed:0"]).values
            session.run([], targets=[f"{op}_reset"])
        return values

    for got, want in zip(run(strict_gpu()), run("cpu")):
        if getattr(want, "dtype", None) == object:
            assert np.asarray(got).tolist() == want.tolist()
        else:
            np.testing.assert_array_equal(np.asarray(got), want)


def checkpoint_graph():
    """The checkpoint ops (host memory): a variable's value (the Assign's output) and strings
    saved with SaveV2 under a sharded name, merged by MergeV2Checkpoints and restored (whole and
    a slice), and the legacy V1 ops (Save, SaveSlices, Restore, RestoreSlice) on fed file names."""
    b = GraphBuilder()
    string, float32 = dtypes.as_dtype("string"), dtypes.as_dtype("float32")
    directory = b.placeholder(string, [], name="dir")
    v1_file = b.placeholder(string, [], name="v1_file")
    weights = b.op("VariableV2", [], name="w", shape=[2, 3], dtype=float32)
    value = b.op("Assign", [weights, np.arange(6, dtype=np.float32).reshape(2, 3)], name="init")
    words = np.array([b"a", b"bc"], dtype=object)
    tmp = b.op("ShardedFilename", [directory, np.int32(0), np.int32(1)], name="tmp")
    b.op("ShardedFilespec", [directory, np.int32(1)], name="spec")
    save = b.op("SaveV2", [tmp, np.array([b"w", b"words"], dtype=object), np.array([b"", b""], dtype=object),
                           [value, words]], name="save")
    with b.control_dependencies([save]):
        merge = b.op("MergeV2Checkpoints", [tmp, directory], name="merge")    # a scalar: one part
    with b.control_dependencies([merge]):
        b.op("RestoreV2", [directory, np.array([b"w", b"words", b"w"], dtype=object),
                           np.array([b"", b"", b"2 3 1,1:-"], dtype=object)], name="restore",
             dtypes=[float32, string, float32])
    slices_file = b.op("StringJoin", [[v1_file, np.array(b"_slices", dtype=object)]], name="slices_file")
    legacy = b.op("Save", [v1_file, np.array([b"w"], dtype=object), [value]], name="legacy_save")
    slices = b.op("SaveSlices", [slices_file, np.array([b"w"], dtype=object), np.array([b"4 3 0,2:-"], dtype=object),
                                 [value]], name="legacy_save_slices")
    with b.control_dependencies([legacy, slices]):
        b.op("Restore", [v1_file, np.array(b"w", dtype=object)], name="legacy_restore", dt=float32)
        b.op("RestoreSlice", [slices_file, np.array(b"w", dtype=object), np.array(b"4 3 1,1:1,2", dtype=object)],
             name="legacy_restore_slice", dt=float32)
    return b.graph


def test_checkpoint_ops_on_strict_gpu_double_match_cpu(tmp_path):
    fetches = ["restore:0", "restore:1", "restore:2", "spec:0", "legacy_restore:0", "legacy_restore_slice:0"]
    values = {}
    for device in ("cpu", "gpu"):
        feeds = {"dir:0": np.array(str(tmp_path / device / "ckpt").encode(), dtype=object),
                 "v1_file:0": np.array(str(tmp_path / f"{device}_v1").encode(), dtype=object)}
        session = Session(checkpoint_graph(), device="cpu" if device == "cpu" else strict_gpu(), threads=1)
        values[device] = session.run(fetches, feeds).values
    for name, gpu_value, cpu_value in zip(fetches, values["gpu"], values["cpu"]):
        if name == "spec:0":          # names the device's own directory
            assert gpu_value[()] == str(tmp_path / "gpu" / "ckpt-?????-of-00001").encode()
            continue
        assert_same_values(name, gpu_value, cpu_value)
    assert values["gpu"][2].tolist() == [[3, 4, 5]] and values["gpu"][5].tolist() == [[4, 5]]
    assert (tmp_path / "gpu" / "ckpt.index").read_bytes() == (tmp_path / "cpu" / "ckpt.index").read_bytes()


def test_counters_on_strict_gpu_double_match_cpu():
    """CountUpTo / ResourceCountUpTo (tests/exec/test_input_producers.py): values, the limits'
    OutOfRange, and the variables after, with the counters on the device."""
    gpu, cpu = run_counters(strict_gpu()), run_counters("cpu")
    assert len(gpu) == len(cpu)
    for index, (gpu_value, cpu_value) in enumerate(zip(gpu, cpu)):
        if isinstance(cpu_value, str):
            assert gpu_value == cpu_value
        else:
            assert_same_values(f"value {index}", gpu_value, cpu_value)


STATEFUL_OPS = {node.op for graph in (variables_graph(), stack_and_gradient_array_graph(), tables_graph(),
                                       scatter_variables_graph(), checkpoint_graph(), queues_graph(),
                                       counters_graph())
                for node in graph.nodes}


# tests/test_training_fixtures.py runs every training fixture on the strict double too: their
# optimizer update ops (ApplyAdam, ResourceSparseApplyFtrl, ...) are exercised there.
TRAINING_OPS = {op for path in (Path(__file__).resolve().parents[1] / "fixtures" / "training").glob("*/case.json")
                for op in json.loads(path.read_text())["ops"] if "Apply" in op}


def test_every_gpu_registered_kernel_is_exercised_on_the_double():
    """The cases above together run every op registered for the GPU through the strict double."""
    exercised = {case[1] for case in CASES + TARGET_CASES} | STATEFUL_OPS | TRAINING_OPS
    for case in FIXTURE_CASES:
        device = strict_gpu()
        _, graph, _ = run_fixture(case, device)
        exercised |= {graph.get(name).op for name in device.trace.launches() if graph.get(name) is not None}
    # Kernels that tests register for themselves (test_executor.py's TestSleep) are not dftool's;
    # the JIT's cluster kernel runs a JAX program, not xp code (tests/jit covers it).
    gpu_ops = {op for (op, device_type), kernel_def in all_kernels().items()
               if device_type == GPU and kernel_def.fn.__module__.startswith("graphtool.")
               and not kernel_def.fn.__module__.startswith("graphtool.jit.")}
    assert sorted(gpu_ops - exercised) == []


def test_kernels_use_only_names_cupy_provides():
    cupy = pytest.importorskip("cupy", reason="cupy is not installed (importing it needs no GPU)")
    for case in FIXTURE_CASES:
        run_fixture(case, strict_gpu())
    for _, op, inputs, attrs in CASES:
        graph, fetches = single_op_graph(op, inputs, attrs)
        Session(graph, device=strict_gpu(), threads=1).run(fetches)
    assert len(strict_xp.NAMES_USED) > 50

    def provided(dotted: str) -> bool:
        target = cupy
        for part in dotted.split("."):
            if not hasattr(target, part):
                return False
            target = getattr(target, part)
        return True
    assert sorted(name for name in strict_xp.NAMES_USED if not provided(name)) == []


# --- the strict double itself refuses what cupy refuses -------------------------------------------

def test_strict_arrays_refuse_implicit_host_conversion_and_mixing():
    xp = strict_xp.StrictNumpy()
    on_device = xp.asarray(np.arange(3.0))
    with pytest.raises(TypeError, match="Implicit conversion"):
        np.asarray(on_device)
    with pytest.raises(TypeError, match="Unsupported type"):
        _ = on_device + np.ones(3)
    with pytest.raises(TypeError, match="Unsupported type"):
        xp.maximum(on_device, np.ones(3))
    with pytest.raises(TypeError, match="dtype object"):
        xp.asarray(np.array(["a"], dtype=object))
    assert isinstance(on_device.sum(), strict_xp.DeviceArray) and float(on_device.sum()) == 3.0
    assert isinstance(np.exp(on_device), strict_xp.DeviceArray)    # NEP 18 dispatch, as cupy
    np.testing.assert_array_equal(xp.asnumpy(on_device * 2), [0.0, 2.0, 4.0])


def test_strict_double_rejects_a_kernel_that_returns_a_host_array():
    device = strict_gpu()
    stream = device.compute_stream(0)
    with pytest.raises(TypeError, match="host numpy array"):
        stream.launched("bad_kernel", (np.ones(2, np.float32),))


# --- the GPU scatter-multiply -------------------------------------------------------------------------

@pytest.mark.parametrize("xp", [np, strict_xp.StrictNumpy()], ids=["numpy", "strict"])
def test_scatter_multiply_matches_ufunc_at(xp):
    generator = np.random.default_rng(4)
    rows = generator.integers(0, 5, size=(37, 1))
    updates = generator.uniform(0.5, 1.5, size=(37, 2)).astype(np.float64)
    expected = np.full((6, 2), 2.0)
    np.multiply.at(expected, (rows[:, 0],), updates)
    target = xp.asarray(np.full((6, 2), 2.0))
    scatter_multiply(xp, target, xp.asarray(rows), xp.asarray(updates))
    result = target if isinstance(target, np.ndarray) else xp.asnumpy(target)
    np.testing.assert_allclose(result, expected, rtol=1e-12)


# --- accumulating scatters in the dtypes cupy's ufunc.at refuses --------------------------------------

_ACCUMULATE_DTYPES = ["int8", "uint8", "int16", "uint16", "int32", "int64", "uint64", "float16",
                      "float32", "float64", "complex64", "complex128"]


@pytest.mark.parametrize("mode,dtype", [(mode, dtype) for mode in ("add", "sub", "max", "min")
                                        for dtype in _ACCUMULATE_DTYPES
                                        if not (dtype.startswith("complex") and mode in ("max", "min"))])
def test_accumulate_at_on_strict_double_matches_numpy(mode, dtype):
    """Sums wrap as numpy's do (int8 sums of 100s), repeats accumulate, every dtype works (complex
    numbers have no max/min in TensorFlow)."""
    generator = np.random.default_rng(5)
    rows = generator.integers(0, 4, size=40)
    values = generator.integers(-100 if dtype[0] != "u" else 0, 100, size=(40, 3))
    if dtype.startswith("complex"):
        values = values + 1j * generator.integers(-100, 100, size=(40, 3))
    updates = values.astype(dtype)
    start = np.full((5, 3), 7, dtype=dtype)
    expected = start.copy()
    getattr(np, SCATTER_UFUNCS[mode]).at(expected, (rows,), updates)
    xp = strict_xp.StrictNumpy()
    target = xp.asarray(start)
    accumulate_at(xp, mode, target, (xp.asarray(rows),), xp.asarray(updates))
    np.testing.assert_array_equal(xp.asnumpy(target), expected)
