"""Kernels asked by input *values* (not by the graph file) for more than the tensor bound fail the
step naming the node before allocating: Fill/RandomUniform/CropAndResize shapes fed at run time,
TensorList and TensorArray sizes. Small requests still run; --max-tensor-bytes moves the line."""
from __future__ import annotations

import numpy as np
import pytest

from graphtool import dtypes, limits
from graphtool.builder import GraphBuilder
from graphtool.errors import RuntimeFailure
from graphtool.exec.session import Session

from ..helpers import error_line, run_dftool, write_graph
from graphtool.ir import to_graphdef

HUGE = np.array([1 << 20, 1 << 20], np.int32)     # 4 TiB of float32


def _fed_shape_graph(op: str, **attrs):
    b = GraphBuilder()
    dims = b.placeholder(dtypes.int32, [2], name="dims")
    if op == "Fill":
        b.op("Fill", [dims, b.const(np.float32(1))], name="out")
    elif op == "CropAndResize":
        b.op("CropAndResize", [b.const(np.zeros((1, 4, 4, 1), np.float32)),
                               b.const(np.array([[0, 0, 1, 1]], np.float32)),
                               b.const(np.array([0], np.int32)), dims], name="out")
    else:
        b.op(op, [dims], name="out", dtype=dtypes.float32, **attrs)
    return b.graph


@pytest.mark.parametrize("op", ["Fill", "RandomUniform", "RandomStandardNormal", "CropAndResize"])
def test_an_output_sized_by_a_fed_value_beyond_the_bound_is_refused(op):
    session = Session(_fed_shape_graph(op), threads=1)
    small = session.run(["out:0"], {"dims:0": np.array([3, 2], np.int32)}).values[0]
    assert small.size in (6,)
    with pytest.raises(RuntimeFailure) as info:
        session.run(["out:0"], {"dims:0": HUGE})
    assert "node 'out'" in str(info.value) and "tensor bound" in str(info.value)


def test_the_bound_follows_max_tensor_bytes(monkeypatch):
    session = Session(_fed_shape_graph("Fill"), threads=1)
    assert session.run(["out:0"], {"dims:0": np.array([64, 64], np.int32)}).values[0].shape == (64, 64)
    monkeypatch.setattr(limits.current(), "max_tensor_bytes", 1024)
    with pytest.raises(RuntimeFailure, match="tensor bound of 1.0 KiB"):
        session.run(["out:0"], {"dims:0": np.array([64, 64], np.int32)})


def test_the_cli_says_it_in_one_line(tmp_path):
    path = write_graph(to_graphdef(_fed_shape_graph("Fill")), tmp_path / "fill.pb")
    np.save(tmp_path / "dims.npy", HUGE)
    code, _, err = run_dftool("run", path, "--feed", f"dims={tmp_path / 'dims.npy'}")
    assert code == 1 and "node 'out' (Fill)" in error_line(err) and "--max-tensor-bytes" in error_line(err)


def _list_graph(op: str):
    b = GraphBuilder()
    count = b.placeholder(dtypes.int32, [], name="count")
    shape = b.const(np.array([2], np.int32))
    if op == "TensorListReserve":
        b.op("TensorListReserve", [shape, count], name="out", element_dtype=dtypes.float32)
    elif op == "TensorListResize":
        empty = b.op("EmptyTensorList", [shape, b.const(np.int32(-1))], name="empty", element_dtype=dtypes.float32)
        b.op("TensorListResize", [empty, count], name="out")
    else:
        b.op("TensorArrayV3", [count], name="out", dtype=dtypes.float32)
    return b.graph


@pytest.mark.parametrize("op", ["TensorListReserve", "TensorListResize", "TensorArrayV3"])
def test_a_container_of_billions_of_slots_is_refused(op):
    session = Session(_list_graph(op), threads=1)
    session.run([], {"count:0": np.int32(5)}, targets=["out"])
    with pytest.raises(RuntimeFailure) as info:
        session.run([], {"count:0": np.int32(2**31 - 1)}, targets=["out"])
    assert "node 'out'" in str(info.value) and "tensor bound" in str(info.value)
