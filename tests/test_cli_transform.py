"""`dftool transform` through the real entry point: every transform on a sample or fixture graph with
its exact report lines, the graphs it writes run (and compute what they should), the JSON report
validates against its schema, and every error path has its exit code and one-line message."""
from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest

from graphtool import dtypes
from graphtool.exec.session import Session

from graphtool.ir import Graph

from .helpers import REPO_ROOT, const, error_line, load_graph, op, placeholder, run_dftool, write_graph
from .test_report_schemas import validation_errors

SAMPLES = REPO_ROOT / "sample_graphs"
MLP = SAMPLES / "mlp.pb"
MLP_FEEDS = SAMPLES / "mlp.feeds.npz"
MOBILENET = REPO_ROOT / "tests" / "fixtures" / "tf2" / "keras_mobilenet_v2"


def transform(tmp_path, *args, source=MLP, out="out.pbtxt"):
    code, stdout, stderr = run_dftool("transform", source, tmp_path / out, *args)
    return code, stdout, stderr.splitlines()


def mlp_probs(graph, feeds=None) -> np.ndarray:
    feeds = dict(np.load(MLP_FEEDS)) if feeds is None else feeds
    return Session(graph, threads=1).run(["probs"], feeds).values[0]


def test_list_describes_every_transform_and_its_parameters():
    code, stdout, stderr = run_dftool("transform", "--list")
    assert code == 0, stderr
    names = [line for line in stdout.splitlines() if not line.startswith(" ")]
    assert names == ["add_default_attributes", "fold_batch_norms", "insert_logging", "obfuscate_names",
                     "quantize_weights", "remove_attribute", "remove_device", "rename_op", "round_weights",
                     "set_device", "sort_by_execution_order", "strip_unused_nodes"]
    block = stdout.split("set_device\n")[1].split("\nsort_by_execution_order")[0]
    assert block.splitlines() == [
        "    give nodes a device (all of them, or with if_default=true only those without one)",
        "    device=<text>: the device, e.g. /gpu:0, cpu:1 or /job:worker/task:1/device:CPU:0 (written as "
        "TensorFlow spells it: /device:GPU:0) [required]",
        "    if_default=<true|false>: only set it on nodes that have no device [default False]"]


def test_device_transforms_in_order_with_exact_report(tmp_path):
    code, _, lines = transform(tmp_path, "--apply", "set_device(device=gpu:0),remove_device",
                               "--apply", "set_device(device=cpu:1, if_default=true)")
    assert code == 0, lines
    assert lines == ["set_device(device=gpu:0): devices_set=11 (nodes 11 -> 11)",
                     "remove_device: devices_cleared=11 (nodes 11 -> 11)",
                     "set_device(device=cpu:1, if_default=true): devices_set=11 (nodes 11 -> 11)",
                     "nodes 11 -> 11, constants 3,496 -> 3,496 bytes"]
    graph = load_graph(tmp_path / "out.pbtxt")
    assert {n.device for n in graph.nodes} == {"/device:CPU:1"}


def test_set_device_if_default_leaves_placed_nodes(tmp_path):
    graph = Graph()
    op(graph, "Neg", "y", placeholder(graph, "x", [2]))
    graph.node("x").device = "/device:CPU:0"
    source = write_graph(graph, tmp_path / "g.pb")
    code, _, lines = transform(tmp_path, "--apply", "set_device(device=/gpu:0, if_default=true)", source=source)
    assert code == 0, lines
    assert lines[0] == "set_device(device=/gpu:0, if_default=true): devices_set=1 (nodes 2 -> 2)"
    graph = load_graph(tmp_path / "out.pbtxt")
    assert graph.node("x").device == "/device:CPU:0" and graph.node("y").device == "/device:GPU:0"


def test_attribute_transforms(tmp_path):
    graph = Graph()
    x = placeholder(graph, "x", [2, 2])
    out = op(graph, "Identity", "out", op(graph, "MatMul", "m", x, x))  # transpose_a/b left to their defaults
    for node in (graph.node("m"), out):
        node.set_attr("_class", [b"loc:@x"], "list(string)")
    source = write_graph(graph, tmp_path / "g.pb")
    code, _, lines = transform(tmp_path, "--apply", "add_default_attributes",
                               "--apply", "remove_attribute(attribute_name=_class, op_name=MatMul)", source=source)
    assert code == 0, lines
    assert lines[:2] == ["add_default_attributes: attributes_added=4, nodes_changed=1 (nodes 3 -> 3)",
                         "remove_attribute(attribute_name=_class, op_name=MatMul): attributes_removed=1 (nodes 3 -> 3)"]
    graph = load_graph(tmp_path / "out.pbtxt")
    m = graph.node("m")
    assert m.attr("transpose_a") is False and m.attr("transpose_b") is False and not m.has_attr("_class")
    assert graph.node("out").has_attr("_class")
    code, _, lines = transform(tmp_path, "--apply", "remove_attribute(attribute_name=_class)", source=source)
    assert lines[0] == "remove_attribute(attribute_name=_class): attributes_removed=2 (nodes 3 -> 3)"


def test_rename_op_and_its_opaque_note(tmp_path):
    code, _, lines = transform(tmp_path, "--apply", "rename_op(old_op_name=Relu, new_op_name=Relu6)")
    assert code == 0, lines
    assert lines[0] == "rename_op(old_op_name=Relu, new_op_name=Relu6): ops_renamed=1 (nodes 11 -> 11)"
    graph = load_graph(tmp_path / "out.pbtxt")
    assert Counter(n.op for n in graph.nodes)["Relu6"] == 1
    code, _, lines = transform(tmp_path, "--apply", "rename_op(old_op_name=Relu, new_op_name=MyRelu)")
    assert code == 0, lines
    assert lines[1] == "    note: MyRelu is not an op dftool knows: those nodes are kept as opaque ops"


def test_sort_by_execution_order_puts_inputs_first(tmp_path):
    graph = Graph()
    op(graph, "Neg", "out", op(graph, "Exp", "mid", placeholder(graph, "x", [2])))
    graph.reorder([graph.node("out"), graph.node("mid"), graph.node("x")])
    source = write_graph(graph, tmp_path / "g.pb")
    code, _, lines = transform(tmp_path, "--apply", "sort_by_execution_order", source=source)
    assert code == 0, lines
    assert lines[0] == "sort_by_execution_order: nodes_moved=2 (nodes 3 -> 3)"
    assert [n.name for n in load_graph(tmp_path / "out.pbtxt").nodes] == ["x", "mid", "out"]


@pytest.mark.parametrize("mode, stored", [("MIN_FIRST", np.uint8), ("SCALED", np.int8)])
def test_quantize_weights_keeps_outputs_within_the_quantization_error(tmp_path, mode, stored):
    code, _, lines = transform(tmp_path, "--apply", f"quantize_weights(minimum_size=100, mode={mode})")
    assert code == 0, lines
    assert lines == [f"quantize_weights(minimum_size=100, mode={mode}): consts_quantized=2, bytes_before=3328, "
                     "bytes_after=848 (nodes 11 -> 17)",
                     "    note: weights 3,328 -> 848 bytes",
                     "nodes 11 -> 17, constants 3,496 -> 1,016 bytes"]
    original, quantized = load_graph(MLP), load_graph(tmp_path / "out.pbtxt")
    assert Counter(n.op for n in quantized.nodes)["Dequantize"] == 2
    for name in ("dense/kernel", "logits/kernel"):
        weights = original.node(name).attr("value")
        node = quantized.node(name)  # the Dequantize took the Const's name
        assert node.op == "Dequantize" and node.attr("mode") == mode
        assert node.inputs[0].node.attr("value").view(stored).shape == weights.shape
        [value] = Session(quantized, threads=1).run([name], {}).values
        if mode == "MIN_FIRST":
            step = (max(weights.max(), 0) - min(weights.min(), 0)) / 255
        else:  # symmetric: the larger end's magnitude over 127 (qint8 spans -128..127)
            step = max(-weights.min() / 128, weights.max() / 127)
        assert np.abs(value - weights).max() <= step / 2 * 1.001
    # A probability moves by far less than the weights' own quantization error compounds to.
    np.testing.assert_allclose(mlp_probs(quantized), mlp_probs(original), atol=5e-3)


def test_round_weights_leaves_num_steps_levels(tmp_path):
    code, _, lines = transform(tmp_path, "--apply", "round_weights(num_steps=16, minimum_size=1)")
    assert code == 0, lines
    assert lines[0] == "round_weights(num_steps=16, minimum_size=1): consts_rounded=4 (nodes 11 -> 11)"
    original, rounded = load_graph(MLP), load_graph(tmp_path / "out.pbtxt")
    for name in ("dense/kernel", "logits/kernel"):
        before, after = original.node(name).attr("value"), rounded.node(name).attr("value")
        assert after.dtype == np.float32 and len(np.unique(after)) <= 16
        assert np.abs(after - before).max() <= (before.max() - before.min()) / 15 / 2 * 1.001


def test_obfuscate_names_keeps_inputs_and_outputs(tmp_path):
    code, _, lines = transform(tmp_path, "--apply", "obfuscate_names")
    assert code == 0, lines
    assert lines[0] == "obfuscate_names: nodes_renamed=9 (nodes 11 -> 11)"
    graph = load_graph(tmp_path / "out.pbtxt")
    assert sorted(n.name for n in graph.nodes) == sorted(["x", "probs", *"abcdefghi"])
    np.testing.assert_array_equal(mlp_probs(graph), mlp_probs(load_graph(MLP)))


def test_obfuscate_names_rewrites_colocation(tmp_path):
    graph = Graph()
    y = op(graph, "Mul", "y", placeholder(graph, "x", [2]), const(graph, "w", [1.0, 2.0]))
    y.set_attr("_class", [b"loc:@w"], "list(string)")
    source = write_graph(graph, tmp_path / "g.pb")
    code, _, lines = transform(tmp_path, "--apply", "obfuscate_names", source=source)
    assert code == 0, lines
    graph = load_graph(tmp_path / "out.pbtxt")
    assert graph.node("y").attr("_class") == ["loc:@a"] and graph.node("a").op == "Const"


def test_insert_logging_prints_the_values_when_run(tmp_path):
    code, _, lines = transform(tmp_path, "--apply", "insert_logging(op=Relu, show_name=true, summarize=4)",
                               out="logged.pb")
    assert code == 0, lines
    assert lines[0] == "insert_logging(op=Relu, show_name=true, summarize=4): nodes_logged=1 (nodes 11 -> 12)"
    feeds = dict(np.load(MLP_FEEDS))
    hidden = Session(load_graph(MLP), threads=1).run(["dense/Relu"], feeds).values[0]
    code, stdout, stderr = run_dftool("run", tmp_path / "logged.pb", "--feeds", MLP_FEEDS, "-q")
    assert code == 0, stderr
    shown = " ".join(f"{float(np.float32(v)):.6g}" if np.float32(f"{float(v):.6g}") == v else f"{float(v):.9g}"
                     for v in hidden.reshape(-1)[:4])
    # TensorFlow's Print: [SummarizeValue] with a matrix's rows bracketed and '...' where cut.
    assert stderr.splitlines() == [f"dense/Relu;[[{shown}...]...]"]
    np.testing.assert_array_equal(mlp_probs(load_graph(tmp_path / "logged.pb")), mlp_probs(load_graph(MLP)))


def test_insert_logging_of_an_output_keeps_its_name_and_first_n_counts(tmp_path, capfd):
    code, _, lines = transform(tmp_path, "--apply", 'insert_logging(prefix=probs, message="p: ", first_n=1)',
                               out="logged.pb")
    assert code == 0, lines
    graph = load_graph(tmp_path / "logged.pb")
    assert graph.node("probs").op == "Print" and graph.node("probs/logged").op == "Softmax"
    session = Session(graph, threads=1)
    feeds = dict(np.load(MLP_FEEDS))
    capfd.readouterr()
    first = session.run(["probs"], feeds).values[0]
    session.run(["probs"], feeds)
    printed = capfd.readouterr().err.splitlines()
    assert len(printed) == 1 and printed[0].startswith("p: [[") and printed[0].endswith("]]")
    np.testing.assert_array_equal(first, mlp_probs(load_graph(MLP)))


def test_strip_unused_nodes_with_a_shape_override(tmp_path):
    code, _, lines = transform(tmp_path, "--apply", 'strip_unused_nodes(name=dense/Relu, shape="2,32")')
    assert code == 0, lines
    assert lines == ['strip_unused_nodes(name=dense/Relu, shape="2,32"): nodes_removed=6, placeholders_added=1, '
                     'placeholders_changed=1 (nodes 11 -> 6)',
                     "    note: input dense/Relu:0 is Placeholder 'dense/Relu'",
                     "nodes 11 -> 6, constants 3,496 -> 1,320 bytes"]
    graph = load_graph(tmp_path / "out.pbtxt")
    placeholder = graph.node("dense/Relu")
    assert placeholder.op == "Placeholder" and list(placeholder.attr("shape")) == [2, 32]
    assert "x" not in graph
    code, _, stderr = run_dftool("transform", MLP, tmp_path / "bad.pb", "--apply",
                                 'strip_unused_nodes(name=dense/Relu, shape="2,64")')
    assert code == 2 and not (tmp_path / "bad.pb").exists()
    assert error_line(stderr).startswith("error: strip_unused_nodes: the input types/shapes do not fit the graph: "
                                         "node 'logits/MatMul' (MatMul)")


def test_fold_batch_norms_on_keras_mobilenet_v2_matches_tensorflow(tmp_path):
    code, stdout, lines = transform(tmp_path, "--apply", "fold_batch_norms", "--json", source=MOBILENET / "graph.pb",
                                    out="folded.pb")
    assert code == 0, lines
    assert lines == ["fold_batch_norms: scales_folded=52, adds_to_bias=52 (nodes 1052 -> 272)",
                     "nodes 1052 -> 272, constants 1,692,416 -> 1,607,728 bytes"]
    report = json.loads(stdout)
    assert validation_errors("transform", report) == []
    assert report["transforms"][0]["counts"] == {"scales_folded": 52, "adds_to_bias": 52}
    assert report["inputs"] == ["x"] and report["outputs"] == ["Identity"]
    case = json.loads((MOBILENET / "case.json").read_text())
    code, _, stderr = run_dftool("run", tmp_path / "folded.pb", "--feeds", MOBILENET / "feeds.npz",
                                 "--expect", MOBILENET / "expected.npz", "--rtol", case["rtol"], "--atol", case["atol"])
    assert code == 0, stderr


def test_json_report_of_several_transforms_validates(tmp_path):
    path = tmp_path / "report.json"
    code, _, lines = transform(tmp_path, "--apply", "remove_device,strip_unused_nodes(type=float)",
                               "--report", path, "-q")
    assert code == 0 and lines == []
    report = json.loads(path.read_text())
    assert validation_errors("transform", report) == []
    assert [t["name"] for t in report["transforms"]] == ["remove_device", "strip_unused_nodes"]
    assert report["transforms"][1]["params"] == {"type": ["float"]}


@pytest.mark.parametrize("args, code, message", [
    (["--apply", "bogus"], 2, "error: unknown transform 'bogus' (hint: dftool transform --list describes them)"),
    (["--apply", "set_device(dev=1)"], 2,
     "error: transform set_device: unknown parameter 'dev' (hint: did you mean 'device'? its parameters: device, "
     "if_default)"),
    (["--apply", "set_device"], 2, "error: transform set_device needs device=..."),
    (["--apply", "set_device(device=a, device=b)"], 2, "error: transform set_device: parameter 'device' given 2 times"),
    (["--apply", "round_weights(num_steps=x)"], 2, "error: round_weights(num_steps=x): expected an integer"),
    (["--apply", "round_weights(num_steps=1)"], 2, "error: round_weights(num_steps=1): needs at least 2 steps"),
    (["--apply", "quantize_weights(mode=MIN_COMBINED)"], 2,
     "error: quantize_weights(mode=MIN_COMBINED): expected MIN_FIRST or SCALED"),
    (["--apply", "set_device(if_default=maybe, device=gpu)"], 2,
     "error: set_device(if_default=maybe): expected true or false"),
    (["--apply", "set_device(device=/foo:1)"], 2, "error: set_device(device=/foo:1): bad device name '/foo:1'"),
    (["--apply", "fold_batch_norms("], 2, "error: --apply 'fold_batch_norms(': expected a parameter name at position 18"),
    (["--apply", 'insert_logging(message="x)'], 2,
     "error: --apply 'insert_logging(message=\"x)': unterminated quoted value at position 27"),
    (["--apply", "remove_device", "--outputs", "nope"], 2, "error: --outputs nope: no node named 'nope' in the graph"),
    (["--apply", "strip_unused_nodes(type=floaty)"], 2, "error: strip_unused_nodes(type=floaty): unknown dtype"),
    (["--apply", "strip_unused_nodes(name=nope)"], 2,
     "error: strip_unused_nodes(name=nope): no node named 'nope' in the graph"),
    ([], 2, "error: transform needs --apply T[,T...] (hint: dftool transform --list shows the transforms)"),
    (["--apply", "remove_attribute(attribute_name=T, op_name=Relu)"], 1,
     "error: transform remove_attribute(attribute_name=T, op_name=Relu): left an invalid graph: node 'dense/Relu' "
     "(Relu): missing required attr 'T' (type)"),
])
def test_errors_are_one_line_and_leave_out_untouched(tmp_path, args, code, message):
    out = tmp_path / "out.pb"
    out.write_bytes(b"old")
    got, _, stderr = run_dftool("transform", MLP, out, *args)
    assert got == code, stderr
    assert error_line(stderr).startswith(message), stderr
    assert "Traceback" not in stderr and out.read_bytes() == b"old"


def test_print_op_passes_its_gradient_to_the_input(capfd):
    from graphtool.grad import add_gradients

    graph = Graph()
    x = graph.add_node("Placeholder", "x", attrs={"dtype": dtypes.float32, "shape": [3]})
    printed = graph.add_node("Print", "p", inputs=[x.output(0), x.output(0)],
                             attrs={"T": dtypes.float32, "U": [dtypes.float32], "message": "x="})
    graph.add_node("Square", "y", inputs=[printed.output(0)], attrs={"T": dtypes.float32})
    add_gradients(graph, "y", ["x"])
    value = np.array([1.0, -2.0, 0.5], np.float32)
    capfd.readouterr()
    [grad] = Session(graph, threads=1).run(["grad/x"], {"x": value}).values
    np.testing.assert_array_equal(grad, 2 * value)
    assert capfd.readouterr().err == "x=[1 -2 0.5]\n"


@pytest.mark.parametrize("values, summarize, expected", [
    # What tf.compat.v1.Print logged for these (TensorFlow 2.21): message + "[" + SummarizeValue + "]".
    ([np.array([[0.248495847, 0, 0.1], [3, 4, 5]], np.float32), np.array([True, False]),
      np.array([b"ab", b"c"], object), np.arange(5, dtype=np.int32), np.float64(2.5)], 4,
     "m;[[0.248495847 0 0.1][3...]...][1 0][ab c][0 1 2 3...][2.5]"),
    ([np.arange(8).reshape(2, 2, 2)], -1, "m;[[[0 1][2 3]][[4 5][6 7]]]"),
    ([np.arange(8).reshape(2, 2, 2)], 3, "m;[[[0 1][2...]]...]"),
])
def test_print_formats_values_as_tensorflow(values, summarize, expected):
    from graphtool.exec.kernels.core import summarize_value

    assert "m;" + "".join(f"[{summarize_value(v, summarize)}]" for v in values) == expected


def test_insert_logging_skips_what_it_cannot_log(tmp_path):
    graph = Graph()
    x = placeholder(graph, "x", [4, 6])
    axis = const(graph, "axis", 1, dtype=dtypes.int32)
    graph.add_node("Split", "split", inputs=[axis.output(0), x.output(0)], attrs={"T": dtypes.float32, "num_split": 2})
    source = write_graph(graph, tmp_path / "g.pb")
    code, _, lines = transform(tmp_path, "--apply", "insert_logging(prefix=split)", source=source)
    assert code == 0, lines
    assert lines[:3] == ["insert_logging(prefix=split): nodes_skipped=1 (nodes 3 -> 3)",
                         "    note: not logged (control flow, no printable output, or a multi-output graph output): split",
                         "    note: no node could be logged"]


def test_compare_reports_the_accuracy_quantize_weights_costs(tmp_path):
    """8-bit weights change the convnet's probabilities by a little: `compare` fails them at its
    default tolerances, says how much they moved and which tolerance would pass, and passes at a
    tolerance one quantization step allows."""
    quantized = tmp_path / "q.pb"
    code, _, stderr = run_dftool("transform", SAMPLES / "convnet.pb", quantized,
                                 "--apply", "quantize_weights(minimum_size=10)", "-q")
    assert code == 0, stderr
    common = [SAMPLES / "convnet.pb", quantized, "--feeds", SAMPLES / "convnet.feeds.npz", "--json"]
    code, stdout, stderr = run_dftool("compare", *common)
    assert code == 1 and "error: 1 of 1 output(s) differ beyond rtol 1e-05, atol 1e-08: probs" in stderr
    (probs,) = json.loads(stdout)["outputs"]
    assert probs["status"] == "FAILED" and probs["mismatches"] > 0
    # Softmax outputs lie in [0, 1]; 8 bits per weight moves them by well under 1e-2, but not by nothing.
    assert 1e-6 < probs["abs_error"]["max"] < 1e-2 and probs["min_atol"] == pytest.approx(probs["abs_error"]["max"], rel=1e-3)
    code, stdout, _ = run_dftool("compare", *common, "--rtol", "0", "--atol", f"{probs['min_atol'] * 1.01:.6g}")
    assert code == 0 and json.loads(stdout)["passed"] is True
