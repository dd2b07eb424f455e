"""Freezing resource variables (graphtool/saved_model/freeze.py) on hand-built graphs, and the
restore-op mapping from variable handles to checkpoint keys on TensorFlow's SavedModels."""
import numpy as np
import pytest

from graphtool import dtypes
from graphtool.exec.session import Session
from graphtool.ir import Graph
from graphtool.proto.saved_model_pb2 import SavedModel
from graphtool.saved_model.freeze import freeze_variables
from graphtool.saved_model.restore_map import checkpoint_keys

from .helpers import REPO_ROOT, const, op, placeholder

F32, I32, RES = dtypes.float32, dtypes.int32, dtypes.resource
MODELS = REPO_ROOT / "tests" / "fixtures" / "saved_models"


def _handle(graph, name, shape):
    return graph.add_node("VarHandleOp", name, attrs={"dtype": F32, "shape": shape, "shared_name": name})


def _read(graph, name, handle):
    ref = handle if not hasattr(handle, "output") else handle.output(0)
    return graph.add_node("ReadVariableOp", name, [ref], attrs={"dtype": F32})


def test_read_becomes_identity_of_a_const():
    g = Graph()
    x = placeholder(g, "x", [None, 2])
    w = _handle(g, "w", [2, 3])
    read = _read(g, "w/read", op(g, "Identity", "w/handle", w, dtype=RES))
    op(g, "MatMul", "y", x, read)
    value = np.arange(6, dtype=np.float32).reshape(2, 3)
    report = freeze_variables(g, {"w": value})
    g.verify()
    assert report.frozen == ["w"] and report.readers_replaced == 1 and not report.restored_per_step
    assert g.node("w").op == "Const" and g.node("w/read").op == "Identity"
    assert g.node("w/handle").attr("T") is F32          # the chain is retyped
    feed = np.ones((1, 2), np.float32)
    out = Session(g).run(["y"], {"x": feed}).values[0]
    np.testing.assert_array_equal(out, feed @ value)


def test_resource_gather_in_a_loop_becomes_gather_v2():
    """sum over i < 3 of table[i], the table's handle entering the loop as a constant."""
    g = Graph()
    table = _handle(g, "table", [3, 2])
    frame = {"frame_name": "loop", "parallel_iterations": 4}
    enter_h = op(g, "Enter", "loop/Enter_table", table, dtype=RES, is_constant=True, **frame)
    enter_i = op(g, "Enter", "loop/Enter_i", const(g, "i0", 0, I32), dtype=I32, **frame)
    enter_a = op(g, "Enter", "loop/Enter_acc", const(g, "acc0", np.zeros(2)), **frame)
    merge_i = op(g, "Merge", "loop/Merge_i", enter_i, enter_i, dtype=I32, N=2)
    merge_a = op(g, "Merge", "loop/Merge_acc", enter_a, enter_a, N=2)
    limit = const(g, "loop/limit", 3, I32, control_inputs=[merge_i])
    cond = g.add_node("LoopCond", "loop/LoopCond", [op(g, "Less", "loop/Less", merge_i, limit, dtype=I32).output(0)])
    switch_i = op(g, "Switch", "loop/Switch_i", merge_i, cond, dtype=I32)
    switch_a = op(g, "Switch", "loop/Switch_acc", merge_a, cond)
    i = op(g, "Identity", "loop/i", switch_i.output(1), dtype=I32)
    acc = op(g, "Identity", "loop/acc", switch_a.output(1))
    row = g.add_node("ResourceGather", "loop/row", [enter_h.output(0), i.output(0)],
                     attrs={"dtype": F32, "Tindices": I32})
    one = const(g, "loop/one", 1, I32, control_inputs=[i])
    merge_i.set_input(1, op(g, "NextIteration", "loop/next_i", op(g, "AddV2", "loop/inc", i, one, dtype=I32),
                            dtype=I32).output(0))
    merge_a.set_input(1, op(g, "NextIteration", "loop/next_acc", op(g, "AddV2", "loop/add", acc, row)).output(0))
    op(g, "Identity", "total", op(g, "Exit", "loop/Exit", switch_a.output(0)))
    value = np.array([[1, 2], [30, 40], [500, 600]], np.float32)
    report = freeze_variables(g, {"table": value})
    g.verify()
    assert report.readers_replaced == 1
    gather = g.node("loop/row")
    assert gather.op == "GatherV2" and gather.attr("Tparams") is F32
    assert g.node("loop/Enter_table").attr("T") is F32
    axis = gather.inputs[2].node
    assert axis.op == "Const" and axis.control_inputs == (g.node("loop/Enter_table"),)   # lives in the loop
    np.testing.assert_array_equal(Session(g).run(["total"]).values[0], value.sum(axis=0))


def test_reads_in_cond_branches_and_is_initialized():
    """Switch(handle, pred): the taken branch reads the value; ResourceGather on a branch gets a pivot."""
    g = Graph()
    pred = placeholder(g, "pred", [], dtypes.bool_)
    v = _handle(g, "v", [3])
    switch = op(g, "Switch", "cond/Switch", v, pred, dtype=RES)
    false_read = _read(g, "cond/read_false", switch.output(0))
    idx = const(g, "cond/idx", [2, 0], I32, control_inputs=[op(g, "Identity", "cond/pivot_t", switch.output(1),
                                                                      dtype=RES)])
    true_gather = g.add_node("ResourceGather", "cond/gather_true", [switch.output(1), idx.output(0)],
                             attrs={"dtype": F32, "Tindices": I32})
    true_sum = g.add_node("Sum", "cond/sum_true", [true_gather.output(0), const(g, "cond/axis", 0, I32).output(0)],
                          attrs={"T": F32, "Tidx": I32})
    false_sum = g.add_node("Sum", "cond/sum_false", [false_read.output(0), const(g, "cond/axis_f", 0, I32).output(0)],
                           attrs={"T": F32, "Tidx": I32})
    op(g, "Identity", "out", op(g, "Merge", "cond/Merge", false_sum, true_sum, N=2))
    g.add_node("VarIsInitializedOp", "ready", [v.output(0)])
    value = np.array([1.0, 10.0, 100.0], np.float32)
    report = freeze_variables(g, {"v": value})
    g.verify()
    assert report.readers_replaced == 3
    assert g.node("ready").op == "Const"
    assert g.node("cond/gather_true").inputs[2].node.control_inputs[0].op == "Identity"   # the pivot
    session = Session(g)
    assert session.run(["out", "ready"], {"pred": np.bool_(True)}).values[0] == 101.0
    assert session.run(["out"], {"pred": np.bool_(False)}).values[0] == 111.0
    assert session.run(["ready"]).values[0]


def test_identity_n_retypes_only_the_handle_port():
    g = Graph()
    x = placeholder(g, "x", [2])
    v = _handle(g, "v", [2])
    both = g.add_node("IdentityN", "both", [x.output(0), v.output(0)], attrs={"T": [F32, RES]})
    op(g, "AddV2", "y", both.output(0), _read(g, "read", both.output(1)))
    freeze_variables(g, {"v": np.array([1.0, 2.0], np.float32)})
    assert g.node("both").attr("T") == [F32, F32]
    out = Session(g).run(["y"], {"x": np.array([3.0, 4.0], np.float32)}).values[0]
    np.testing.assert_array_equal(out, [4.0, 6.0])


def test_assigned_variable_is_restored_in_the_graph():
    g = Graph()
    v = _handle(g, "v", [2])
    g.add_node("AssignVariableOp", "assign", [v.output(0), const(g, "c", [1.0, 2.0]).output(0)],
               attrs={"dtype": F32})
    _read(g, "read", v)
    report = freeze_variables(g, {"v": np.zeros(2, np.float32)})
    assert report.frozen == [] and "AssignVariableOp 'assign'" in report.restored_per_step["v"]
    assert g.node("v").op == "VarHandleOp" and g.node("read").op == "ReadVariableOp"
    restore = g.node("v/restore")
    assert restore.op == "AssignVariableOp" and restore in g.node("read").control_inputs
    assert restore in g.node("assign").control_inputs


def test_reference_variable_becomes_a_const():
    """VariableV2 -> RefIdentity -> MatMul: the Ref op becomes its value form; an Assign through
    the reference keeps a variable as it is."""
    g = Graph()
    x = placeholder(g, "x", [1, 2])
    v = g.add_node("VariableV2", "v", attrs={"dtype": F32, "shape": [2, 2]})
    y = op(g, "MatMul", "y", x, g.add_node("RefIdentity", "v/ref", [v.output(0)], attrs={"T": F32}))
    y.set_attr("_class", ["loc:@v", "loc:@x"], "list(string)")
    g.node("v/ref").set_attr("_class", ["loc:@v"], "list(string)")
    kept = g.add_node("VariableV2", "counter", attrs={"dtype": F32, "shape": []})
    g.add_node("Assign", "counter/assign", [kept.output(0), const(g, "zero", 0.0).output(0)], attrs={"T": F32})
    value = np.array([[1, 2], [3, 4]], np.float32)
    report = freeze_variables(g, {"v": value, "counter": np.float32(1)})
    g.verify()
    assert report.frozen == ["v"] and "Assign 'counter/assign'" in report.restored_per_step["counter"]
    assert g.node("v").op == "Const" and g.node("v/ref").op == "Identity"
    # colocation with the (now constant) variable is gone; other groups stay
    assert g.node("y").attr("_class") == ["loc:@x"] and not g.node("v/ref").has_attr("_class")
    out = Session(g).run(["y"], {"x": np.array([[1, 1]], np.float32)}).values[0]
    np.testing.assert_array_equal(out, [[4, 6]])


@pytest.mark.parametrize("case, expected", [
    ("tf1_resource", {"dense/kernel": "dense/kernel", "dense/bias": "dense/bias", "embedding": "embedding",
                      "gain": "gain"}),
    ("module_two_signatures", {name: f"{name}/.ATTRIBUTES/VARIABLE_VALUE" for name in ("w", "b", "m", "scale", "table")}),
    ("tf1_ref_variables", {"w": "w", "b": "b"}),
])
def test_checkpoint_keys_follow_the_restore_op(case, expected):
    saved = SavedModel()
    saved.ParseFromString((MODELS / case / "model" / "saved_model.pb").read_bytes())
    keys = checkpoint_keys(saved.meta_graphs[0], case)
    assert {name: value.key for name, value in keys.items()} == expected
    assert all(value.slice_spec == "" for value in keys.values())


def test_parts_of_a_partitioned_variable_restore_slices():
    saved = SavedModel()
    saved.ParseFromString((MODELS / "tf1_partitioned" / "model" / "saved_model.pb").read_bytes())
    keys = checkpoint_keys(saved.meta_graphs[0], "tf1_partitioned")
    assert keys == {"table/part_0": ("table", "10 3 0,4:0,3"), "table/part_1": ("table", "10 3 4,3:0,3"),
                    "table/part_2": ("table", "10 3 7,3:0,3")}


def test_keras_handles_used_by_the_signature_all_have_keys():
    saved = SavedModel()
    saved.ParseFromString((MODELS / "keras_lstm" / "model" / "saved_model.pb").read_bytes())
    meta = saved.meta_graphs[0]
    keys = checkpoint_keys(meta, "keras_lstm")
    call = next(n for n in meta.graph_def.node if n.name == "StatefulPartitionedCall")
    captured = [i for i in call.input if not i.startswith("serve_")]
    assert captured and all(name in keys for name in captured)
    assert len(set(keys[name].key for name in captured)) == len(captured)


def test_a_second_handle_to_a_restored_variable_gets_its_key():
    """TF1 graphs may hold two VarHandleOps of one variable (same shared_name); the restore op
    assigns through one of them."""
    from graphtool.proto.meta_graph_pb2 import MetaGraphDef

    from .helpers import const_def, node_def

    meta = MetaGraphDef()
    meta.saver_def.restore_op_name = "save/restore_all"
    meta.graph_def.node.extend([
        node_def("v", "VarHandleOp", dtype=F32, shape=[2], shared_name="weights"),
        node_def("v_again", "VarHandleOp", dtype=F32, shape=[2], shared_name="weights"),
        node_def("other", "VarHandleOp", dtype=F32, shape=[2], shared_name="other"),
        const_def("save/Const", np.array(b"model", dtype=object), dtypes.string),
        const_def("save/RestoreV2/tensor_names", np.array([b"layer/w"], dtype=object), dtypes.string),
        const_def("save/RestoreV2/shape_and_slices", np.array([b""], dtype=object), dtypes.string),
        node_def("save/RestoreV2", "RestoreV2", ["save/Const", "save/RestoreV2/tensor_names",
                                                 "save/RestoreV2/shape_and_slices"], dtypes=[F32]),
        node_def("save/Identity", "Identity", ["save/RestoreV2"], T=F32),
        node_def("save/Assign", "AssignVariableOp", ["v", "save/Identity"], dtype=F32),
        node_def("save/restore_all", "NoOp", ["^save/Assign"]),
    ])
    keys = checkpoint_keys(meta, "test")
    assert keys == {"v": ("layer/w", ""), "v_again": ("layer/w", "")}


def test_lookups_wait_for_the_table_initializer():
    """module_lookup_tables: the __saved_model_init_op (LookupTableImportV2 of both tables) comes
    along, and every LookupTableFindV2 has it as a control input, so one run fills and reads."""
    from graphtool.saved_model import load_saved_model

    graph, _ = load_saved_model(str(MODELS / "module_lookup_tables" / "model"))
    finds = [n for n in graph.nodes if n.op == "LookupTableFindV2"]
    imports = [n for n in graph.nodes if n.op == "LookupTableImportV2"]
    assert len(finds) == 2 and len(imports) == 2
    for find in finds:
        assert any(init.op == "NoOp" for init in find.control_inputs), find.name
