"""Bounds on what a small hostile input can make dftool allocate (issue 14, defects 2, 3, 8, 10).

Every hostile file is generated here: graphs whose few bytes claim terabytes (filled constants,
Fill/Range/Tile/BroadcastTo/... of huge sizes, foldable ops on them) and feed archives whose
headers or compression ratios claim gigabytes. In-process checks measure numpy's allocations with
tracemalloc (numpy reports array data to it); the acceptance test runs inspect, prune, place and
optimize in a child process under an address-space limit and measures its peak resident memory.
"""
from __future__ import annotations

import io
import json
import os
import resource
import subprocess
import sys
import tempfile
import textwrap
import tracemalloc
import zipfile

import numpy as np
import pytest

from graphtool import dtypes, limits
from graphtool.errors import InvalidGraphError
from graphtool.ir import from_graphdef
from graphtool.opt.base import PassContext, registered_passes
from graphtool.proto import GraphDef
from graphtool.proto.attr_value_pb2 import AttrValue
from graphtool.proto.tensor_pb2 import TensorProto
from graphtool.shape_inference import infer_shapes
from graphtool.shapes import Shape
from graphtool.tensor import check_header, decoded_nbytes, to_ndarray
from tests.helpers import F32, REPO_ROOT, const_def, error_line, graph_def, node_def, run_dftool, write_graph

I32 = dtypes.int32
GIB = 1 << 30
# What one in-process inference or pass may allocate here: a few MiB of bookkeeping, nothing
# proportional to a claimed size.
SMALL = 16 << 20


@pytest.fixture(autouse=True)
def _fresh_limits():
    limits.reset()
    yield
    limits.reset()


# --- hostile graph builders ---------------------------------------------------------------------------

def filled(name: str, dims, dtype=F32, values=(1.0,), **kw):
    """A Const whose proto stores `values` and claims `dims`: the last value fills the rest."""
    proto = TensorProto(dtype=dtype.enum)
    proto.tensor_shape.CopyFrom(Shape(list(dims)).to_proto())
    field = {F32: "float_val", I32: "int_val", dtypes.string: "string_val"}[dtype]
    getattr(proto, field).extend(values)
    return node_def(name, "Const", value=AttrValue(tensor=proto), dtype=dtype, **kw)


def ints(name: str, values):
    return const_def(name, np.asarray(values), I32)


def _fill(n):
    return [ints("dims", [n, n]), const_def("v", 1.0), node_def("out", "Fill", ["dims", "v"], T=F32, index_type=I32)]


def _range(n):
    return [ints("start", 0), ints("limit", n), ints("delta", 1), node_def("out", "Range", ["start", "limit", "delta"], Tidx=I32)]


def _float_range(n):
    return [const_def("start", 0.0), const_def("limit", float(n)), const_def("delta", 1.0),
            node_def("out", "Range", ["start", "limit", "delta"], Tidx=F32)]


def _tile(n):
    return [const_def("x", np.arange(64, dtype=np.float32)), ints("m", [n // 64]),
            node_def("out", "Tile", ["x", "m"], T=F32, Tmultiples=I32)]


def _broadcast_to(n):
    return [const_def("x", 1.0), ints("shape", [n, n]), node_def("out", "BroadcastTo", ["x", "shape"], T=F32, Tidx=I32)]


def _zeros_like_filled(n):
    return [filled("big", [n]), node_def("out", "ZerosLike", ["big"], T=F32)]


def _ones_like_placeholder(n):
    return [node_def("p", "Placeholder", dtype=F32, shape=Shape([n, n])), node_def("out", "OnesLike", ["p"], T=F32)]


def _outer_add(n):
    return [const_def("a", np.ones((n, 1), np.float32)), const_def("b", np.ones((1, n), np.float32)),
            node_def("out", "Add", ["a", "b"], T=F32)]


def _concat(n):
    count = n // 4096
    return [const_def("a", np.arange(4096, dtype=np.float32)), ints("axis", 0),
            node_def("out", "ConcatV2", ["a"] * count + ["axis"], T=F32, N=count, Tidx=I32)]


def _pack(n):
    count = n // 4096
    return [const_def("a", np.arange(4096, dtype=np.float32)), node_def("out", "Pack", ["a"] * count, T=F32, N=count)]


def _gather(n):
    return [const_def("params", np.ones((1, 4096), np.float32)), ints("indices", np.zeros(n // 4096)), ints("axis", 0),
            node_def("out", "GatherV2", ["params", "indices", "axis"], Tparams=F32, Tindices=I32, Taxis=I32)]


def _dynamic_stitch(n):
    return [ints("indices", [n - 1]), const_def("data", [1.0]),
            node_def("out", "DynamicStitch", ["indices", "data"], T=F32, N=1)]


# Each makes a graph whose output 'out' has about n elements (n large) and the expected shape.
INFERENCE_BOMBS = {
    "Fill": (_fill, lambda n: [n, n]),
    "Range": (_range, lambda n: [n]),
    "Range(float)": (_float_range, lambda n: [n]),
    "Tile": (_tile, lambda n: [n]),
    "BroadcastTo": (_broadcast_to, lambda n: [n, n]),
    "ZerosLike(filled Const)": (_zeros_like_filled, lambda n: [n]),
    "OnesLike(Placeholder)": (_ones_like_placeholder, lambda n: [n, n]),
    "Add(outer product)": (_outer_add, lambda n: [n, n]),
    "ConcatV2": (_concat, lambda n: [n]),
    "Pack": (_pack, lambda n: [n // 4096, 4096]),
    "GatherV2": (_gather, lambda n: [n // 4096, 4096]),
    "DynamicStitch": (_dynamic_stitch, lambda n: [n]),
}


def _traced_peak(function):
    """(result, peak bytes numpy and Python allocated while `function` ran)."""
    tracemalloc.start()
    try:
        result = function()
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


# --- defect 2: static inference checks sizes before building values -----------------------------------

@pytest.mark.parametrize("case", INFERENCE_BOMBS)
def test_inference_builds_no_value_of_a_big_output(case):
    make, expected_shape = INFERENCE_BOMBS[case]
    # 2^24 elements would be 64-128 MiB if built (so a regression shows, and still fits in memory).
    n = 1 << 24 if case not in ("Fill", "BroadcastTo", "OnesLike(Placeholder)", "Add(outer product)") else 1 << 12
    n = n if case not in ("ConcatV2", "Pack") else 1 << 21  # 512 inputs of 4096 elements
    graph = from_graphdef(graph_def(*make(n)), case)
    result, peak = _traced_peak(lambda: infer_shapes(graph))
    out = graph.tensor("out")
    assert not result.errors, result.errors
    assert result.shape(out) == Shape(expected_shape(n))
    assert result.value(out) is None
    assert peak < SMALL, f"{case}: inference allocated {peak / 2**20:.0f} MiB"


@pytest.mark.parametrize("case", ["Fill", "Range", "Tile", "BroadcastTo", "ZerosLike(filled Const)",
                                  "OnesLike(Placeholder)", "DynamicStitch", "GatherV2"])
def test_inference_of_terabyte_claims_is_instant(case):
    make, expected_shape = INFERENCE_BOMBS[case]
    n = 1 << 40 if case not in ("Fill", "BroadcastTo", "OnesLike(Placeholder)") else 1 << 20
    if case in ("Range", "Tile", "DynamicStitch"):
        n = 2**31 - 64  # int32 operands
    if case == "GatherV2":
        n = 1 << 24
    graph = from_graphdef(graph_def(*make(n)), case)
    result, peak = _traced_peak(lambda: infer_shapes(graph))
    assert result.shape(graph.tensor("out")) == Shape(expected_shape(n))
    assert peak < SMALL


@pytest.mark.parametrize("case, expected", [
    ("Fill", np.ones((8, 8), np.float32)),
    ("Range", np.arange(64, dtype=np.int32)),
    ("Range(float)", np.arange(64, dtype=np.float32)),
    ("Tile", np.arange(64, dtype=np.float32)),
    ("Add(outer product)", np.full((64, 64), 2.0, np.float32)),
    ("DynamicStitch", np.array([None] * 63 + [1.0], dtype=object)),
])
def test_small_values_are_still_inferred(case, expected):
    """The cap drops only what is too big: small shape-like values keep flowing (the Fill, Range
    and Tile kernels' results, computed statically)."""
    make, _ = INFERENCE_BOMBS[case]
    graph = from_graphdef(graph_def(*make(64 if case != "Fill" else 8)), case)
    result = infer_shapes(graph)
    out = graph.tensor("out")
    value = result.info[out].value
    assert value is not None and value.shape == expected.shape
    if value.dtype == object:
        assert list(value) == list(expected)
    else:
        np.testing.assert_array_equal(value, expected)


# --- defect 3: filled constants are bounded when decoded, and read from headers otherwise --------------

def _filled_proto(dims, values=(1.0,), dtype=F32):
    return filled("c", dims, dtype, values).attr["value"].tensor


def test_a_filled_constant_is_decoded_only_within_max_tensor_bytes():
    proto = _filled_proto([1 << 28])  # 1 GiB of float32 from one stored value
    check_header(proto, "node 'c'")    # a valid tensor (TensorFlow accepts it) ...
    assert decoded_nbytes(proto) == GIB
    limits.configure(max_tensor_bytes=1 << 20)
    with pytest.raises(InvalidGraphError, match=r"node 'c'.*would take 1\.0 GiB, above the tensor size limit of 1\.0 MiB"):
        to_ndarray(proto, "node 'c'")  # ... that is not expanded beyond the bound
    small = _filled_proto([1 << 18], values=(3.0,))  # exactly the bound
    np.testing.assert_array_equal(to_ndarray(small, "node 'c'"), np.full(1 << 18, 3.0, np.float32))


def test_a_tensor_stored_in_full_is_not_limited_by_max_tensor_bytes():
    """Real weights are stored byte for byte: the input-size bound covers them already."""
    limits.configure(max_tensor_bytes=1024)
    value = np.arange(4096, dtype=np.float32)
    proto = TensorProto(dtype=F32.enum, tensor_content=value.tobytes())
    proto.tensor_shape.CopyFrom(Shape([4096]).to_proto())
    np.testing.assert_array_equal(to_ndarray(proto), value)


@pytest.mark.parametrize("mutate, message", [
    (lambda p: setattr(p, "tensor_content", b"abc"), "tensor_content has 3 bytes"),
    (lambda p: p.float_val.extend([1.0] * 5), "6 values for shape"),
    (lambda p: [setattr(dim, "size", 1 << 62) for dim in p.tensor_shape.dim], "more than 2^63 elements"),
])
def test_malformed_tensor_headers_are_one_line_errors(tmp_path, mutate, message):
    node = filled("c", [4, 1])
    mutate(node.attr["value"].tensor)
    path = write_graph(graph_def(node), tmp_path / "g.pb")
    code, _, err = run_dftool("prune", path, tmp_path / "out.pb", "--fetch", "c")
    assert code == 3
    line = error_line(err)
    assert message in line and "node 'c'" in line and path in line


def test_inspect_reports_filled_constants_from_their_headers(tmp_path):
    """Six 59-byte Consts claiming 4 GiB each: parameters from the shapes, nothing decoded."""
    nodes = [filled(f"c{i}", [GIB]) for i in range(6)]
    nodes.append(node_def("out", "AddN", [f"c{i}" for i in range(6)], T=F32, N=6))
    path = write_graph(graph_def(*nodes), tmp_path / "g.pb")
    code, out, err = run_dftool("inspect", path, "--json")
    assert code == 0, err
    report = json.loads(out)
    assert report["parameters"] == {"tensors": 6, "elements": 6 * GIB, "bytes": 24 * GIB,
                                    "unknown_shape_variables": 0}
    assert report["outputs"][0]["shape"] == [GIB]


@pytest.mark.parametrize("dtype, values", [(F32, (1.0,)), (dtypes.string, (b"spam",))])
def test_running_an_oversized_filled_constant_is_a_one_line_exit_3(tmp_path, dtype, values):
    path = write_graph(graph_def(filled("big", [GIB], dtype, values),
                                 node_def("out", "Identity", ["big"], T=dtype)), tmp_path / "g.pb")
    code, _, err = run_dftool("run", path, "--fetch", "out")
    assert code == 3
    line = error_line(err)
    assert "node 'big'" in line and "above the tensor size limit of 1.0 GiB" in line and "--max-tensor-bytes" in line


def test_the_environment_and_the_option_set_the_tensor_bound(tmp_path, monkeypatch):
    path = write_graph(graph_def(filled("c", [1 << 16], values=(2.0,)), node_def("out", "Identity", ["c"], T=F32)),
                       tmp_path / "g.pb")
    monkeypatch.setenv("DFTOOL_MAX_TENSOR_BYTES", "64K")
    code, _, err = run_dftool("run", path, "--fetch", "out")
    assert code == 3 and "above the tensor size limit of 64.0 KiB" in error_line(err)
    monkeypatch.setenv("DFTOOL_MAX_TENSOR_BYTES", "256K")
    code, out, err = run_dftool("run", path, "--fetch", "out")
    assert code == 0 and "float32[65536]  [2., 2., 2., 2., 2., 2.] ..." in out, err
    code, _, err = run_dftool("run", path, "--fetch", "out", "--max-tensor-bytes", "100K")  # the option wins
    assert code == 3 and "above the tensor size limit of 100.0 KiB" in error_line(err)


@pytest.mark.parametrize("nodes, message", [
    ([const_def("x", [1.0, 2.0]), node_def("out", "Unpack", ["x"], T=F32, num=GIB, axis=0)],
     "node 'out' (Unpack): cannot size its outputs: attr 'num' = 1073741824 is more than the 65,536 outputs"),
    ([const_def("x", [1.0]), node_def("out", "ShapeN", ["x"], T=F32, N=GIB, out_type=I32)],
     "node 'out' (ShapeN): cannot size its inputs: attr 'N' = 1073741824 is more than the 65,536 inputs"),
    ([node_def("out", "Placeholder", dtype=F32, shape=Shape([1] * 254))],
     "node 'out' (Placeholder): attr 'shape': a shape of rank 255 is above TensorFlow's maximum rank 254"),
], ids=["outputs", "inputs", "rank"])
def test_a_few_bytes_cannot_size_a_billion_outputs_or_dims(tmp_path, nodes, message):
    """Counts and ranks that attrs claim are checked before any per-output or per-dim list is made."""
    if "rank 255" in message:  # Shape itself refuses rank 255: add the last dim to the proto
        nodes[0].attr["shape"].shape.dim.add(size=1)
    path = write_graph(graph_def(*nodes), tmp_path / "g.pb")
    code, _, err = run_dftool("optimize", path, tmp_path / "out.pb")
    assert code == 3 and message in error_line(err), err


def test_a_shape_vector_of_a_billion_entries_is_a_shape_error_not_an_allocation():
    nodes = ACCEPTANCE_GRAPHS["Reshape to a 2^30-entry shape vector"]()
    graph = from_graphdef(graph_def(*nodes), "g")
    result, peak = _traced_peak(lambda: infer_shapes(graph))
    assert "more than the 254 dimensions a shape may have" in result.errors[graph.node("out")]
    assert peak < SMALL


# --- constant folding: sizes from shapes first, nothing beyond --fold-max-bytes -----------------------

def _run_pass(name: str, nodes, fetches=("out",), fold_max_bytes=10 << 20):
    graph = from_graphdef(graph_def(*nodes), "g")
    ctx = PassContext(fetches=[graph.tensor(f) for f in fetches], fold_max_bytes=fold_max_bytes)
    result, peak = _traced_peak(lambda: registered_passes()[name]().run(graph, ctx))
    return graph, result, peak


@pytest.mark.parametrize("nodes", [
    [filled("a", [1 << 28]), filled("b", [1 << 28], values=(2.0,)), node_def("out", "Add", ["a", "b"], T=F32)],
    [filled("a", [1 << 22]), node_def("out", "Neg", ["a"], T=F32)],
    [filled("a", [1 << 22]), ints("axis", 0), node_def("out", "Sum", ["a", "axis"], T=F32, Tidx=I32)],
    _fill(1 << 20), _range(2**31 - 1), _tile(1 << 30), _broadcast_to(1 << 16),
    [const_def("data", [1.0, 2.0]), ints("ids", [0, 1 << 30]),
     node_def("out", "SegmentSum", ["data", "ids"], T=F32, Tindices=I32)],
    [const_def("data", [1.0]), ints("ids", [0]), ints("count", 1 << 30),
     node_def("out", "UnsortedSegmentSum", ["data", "ids", "count"], T=F32, Tindices=I32, Tnumsegments=I32)],
], ids=["Add(filled)", "Neg(filled)", "Sum(filled)", "Fill", "Range", "Tile", "BroadcastTo", "SegmentSum",
        "UnsortedSegmentSum"])
def test_constfold_leaves_what_would_exceed_fold_max_bytes(nodes):
    graph, result, peak = _run_pass("constfold", nodes)
    assert not result.changed and result.stats.get("fold_too_big") == 1, result.stats
    assert graph.node("out").op != "Const"
    assert peak < SMALL, f"constfold allocated {peak / 2**20:.0f} MiB"


def test_constfold_leaves_a_fold_that_would_compute_for_minutes():
    """10 MiB of image and 400 KB of filter, all filled from two values: 5e10 multiply-adds."""
    nodes = [filled("x", [1, 512, 512, 10]), filled("w", [100, 100, 10, 1]),
             node_def("out", "Conv2D", ["x", "w"], T=F32, strides=[1, 1, 1, 1], padding="SAME")]
    graph, result, _ = _run_pass("constfold", nodes, fold_max_bytes=16 << 20)
    assert result.stats == {"fold_too_costly": 1}
    assert graph.node("out").op == "Conv2D"


def test_constfold_still_folds_small_filled_constants():
    nodes = [filled("a", [1000]), filled("b", [1000], values=(2.0,)), node_def("out", "Add", ["a", "b"], T=F32)]
    graph, result, _ = _run_pass("constfold", nodes)
    assert result.stats.get("nodes_folded") == 1
    np.testing.assert_array_equal(graph.node("out").attr("value"), np.full(1000, 3.0, np.float32))
    # ... and a fold just above a small --fold-max-bytes is declined, measured from the shapes
    _, result, _ = _run_pass("constfold", nodes, fold_max_bytes=3999)
    assert result.stats == {"fold_too_big": 1}


def test_cse_merges_huge_filled_constants_by_their_encoding():
    nodes = [filled("a", [1 << 30]), filled("b", [1 << 30]), filled("c", [1 << 30], values=(2.0,)),
             node_def("out", "AddN", ["a", "b", "c"], T=F32, N=3)]
    graph, result, peak = _run_pass("cse", nodes)
    assert result.stats == {"nodes_merged": 1}
    assert [n.name for n in graph.node("out").input_nodes()] == ["a", "a", "c"]
    assert peak < SMALL


# --- defects 8 and 10: feed files are checked from their headers -------------------------------------

@pytest.fixture
def feed_graph(tmp_path):
    nodes = [node_def("x", "Placeholder", dtype=F32, shape=Shape([None])), node_def("y", "Identity", ["x"], T=F32)]
    return write_graph(graph_def(*nodes), tmp_path / "g.pb")


def _npy_header(shape, descr="<f4") -> bytes:
    buffer = io.BytesIO()
    np.lib.format.write_array_header_1_0(buffer, {"descr": descr, "fortran_order": False, "shape": tuple(shape)})
    return buffer.getvalue()


def _write_npz(path, members: dict[str, bytes], compression=zipfile.ZIP_DEFLATED) -> str:
    with zipfile.ZipFile(path, "w", compression) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return str(path)


def _pickled(value) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, value, allow_pickle=True)
    return buffer.getvalue()


@pytest.mark.parametrize("members, message", [
    ({"x.npy": _npy_header([GIB]) + bytes(64)}, "key 'x': float32[1073741824] would take 4.0 GiB, above the tensor size limit"),
    ({"x.npy": _pickled(np.array(["a", None], dtype=object))}, "key 'x': holds Python objects (a pickle)"),
    ({"x.npy": _npy_header([1000]) + bytes(100)}, "key 'x': not a readable array (EOF"),
    ({"x.npy": b"\x93NUMPY\x09\x00junk"}, "key 'x': not a readable array"),
    ({"x": b"raw bytes"}, "key 'x': not an .npy array"),
    ({"x.npy": _npy_header([2, 3]) + bytes(24)}, "feed 'x': shape [2, 3] does not fit [?]"),
    ({"x.npy": _npy_header([3], "<i4") + bytes(12)}, "feed 'x': dtype int32 does not match the expected float32"),
], ids=["claims 4 GiB", "pickle", "truncated", "bad version", "not npy", "shape", "dtype"])
def test_bad_feed_archives_are_one_line_exit_2(tmp_path, feed_graph, members, message):
    path = _write_npz(tmp_path / "feeds.npz", members)
    code, _, err = run_dftool("run", feed_graph, "--feeds", path)
    assert code == 2, err
    line = error_line(err)
    assert message in line and path in line


def test_a_corrupt_archive_and_a_bad_npy_name_the_file(tmp_path, feed_graph):
    corrupt = tmp_path / "corrupt.npz"
    corrupt.write_bytes(b"PK\x03\x04" + bytes(100))
    code, _, err = run_dftool("run", feed_graph, "--feeds", corrupt)
    assert code == 2 and f"--feeds '{corrupt}': not a readable .npz archive" in error_line(err)
    claim = tmp_path / "x.npy"
    claim.write_bytes(_npy_header([1 << 40]))
    code, _, err = run_dftool("run", feed_graph, "--feed", f"x={claim}")
    assert code == 2 and f"--feed x '{claim}': float32[1099511627776] would take 4.0 TiB" in error_line(err)
    pickled = tmp_path / "p.npy"
    pickled.write_bytes(_pickled(np.array([{}], dtype=object)))
    code, _, err = run_dftool("run", feed_graph, "--feed", f"x={pickled}")
    assert code == 2 and "holds Python objects" in error_line(err)


# The child reports its own high-water mark (VmHWM: the peak of the memory map exec gave it).
# ru_maxrss cannot tell: Linux carries the forking parent's peak into the child's, so a test
# process that has loaded JAX (the JIT tests) would make every child look 300 MB big.
_REPORT_PEAK = """
import atexit, os, sys
def report():
    with open("/proc/self/status") as status:
        kib = next(line.split()[1] for line in status if line.startswith("VmHWM:"))
    with open(os.environ["DFTOOL_TEST_PEAK_FILE"], "w") as out:
        out.write(kib)
atexit.register(report)
from cli.main import run
sys.argv = ["dftool", *sys.argv[1:]]
run()
"""


def _child_peak_rss(*args, env=None) -> tuple[int, str, int]:
    """Run dftool in a child; (exit code, stderr, its peak resident memory in bytes)."""
    if not os.path.exists("/proc/self/status"):
        pytest.skip("needs /proc to read a child's own peak memory")
    with tempfile.TemporaryDirectory() as scratch:
        peak_file = os.path.join(scratch, "peak")
        proc = subprocess.run([sys.executable, "-c", _REPORT_PEAK, *map(str, args)], cwd=REPO_ROOT,
                              env={**os.environ, "PYTHONPATH": str(REPO_ROOT), "DFTOOL_TEST_PEAK_FILE": peak_file,
                                   **(env or {})},
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=300)
        with open(peak_file) as handle:
            peak = int(handle.read()) * 1024
    return proc.returncode, proc.stderr.decode(), peak


def test_a_zip_bomb_feed_is_refused_before_decompressing(tmp_path, feed_graph):
    """4.6 MB on disk, 1 GiB + 64 KiB of zeros inside: the header is enough to refuse it."""
    count = (GIB + (64 << 10)) // 4
    path = tmp_path / "bomb.npz"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        with archive.open("x.npy", "w", force_zip64=True) as member:
            member.write(_npy_header([count]))
            chunk = bytes(64 << 20)
            for _ in range(16):
                member.write(chunk)
            member.write(bytes(64 << 10))
    assert path.stat().st_size < 8 << 20
    code, err, peak = _child_peak_rss("run", feed_graph, "--feeds", path)
    assert code == 2 and "would take 1.0 GiB, above the tensor size limit of 1.0 GiB" in error_line(err)
    assert peak < 256 << 20, f"peak RSS {peak >> 20} MiB"


def test_expect_files_are_read_through_the_same_checks(tmp_path, feed_graph):
    np.save(tmp_path / "x.npy", np.arange(3, dtype=np.float32))
    # An entry claiming 4 GiB for a fetch of 3 values: a shape mismatch, found without decoding it.
    bomb = _write_npz(tmp_path / "bomb.npz", {"y.npy": _npy_header([GIB]) + bytes(64)})
    code, _, err = run_dftool("run", feed_graph, "--feed", f"x={tmp_path / 'x.npy'}", "--expect", bomb)
    assert code == 1 and "y: shape [3], expected [1073741824]" in error_line(err)
    pickled = _write_npz(tmp_path / "p.npz", {"y.npy": _pickled(np.array([None, 1, 2], dtype=object))})
    code, _, err = run_dftool("run", feed_graph, "--feed", f"x={tmp_path / 'x.npy'}", "--expect", pickled)
    assert code == 2 and f"--expect '{pickled}' key 'y': holds Python objects" in error_line(err)


# --- acceptance: inspect, prune, place, optimize of any graph under 1 MiB stay below 1 GiB ------------

def _while_loop_bomb():
    """A loop (parallel_iterations 2^31-1) whose body Fills a huge tensor each iteration."""
    frame = {"frame_name": "loop", "parallel_iterations": 2**31 - 1}
    return [
        const_def("init", 0.0), node_def("enter", "Enter", ["init"], T=F32, **frame),
        node_def("merge", "Merge", ["enter", "next"], T=F32, N=2),
        node_def("limit", "Const", ["^merge"], value=np.asarray(16.0, np.float32), dtype=F32),
        node_def("less", "Less", ["merge", "limit"], T=F32), node_def("cond", "LoopCond", ["less"]),
        node_def("switch", "Switch", ["merge", "cond"], T=F32), node_def("body", "Identity", ["switch:1"], T=F32),
        ints("dims", [1 << 20, 1 << 20]), node_def("dims_in", "Enter", ["dims"], T=I32, is_constant=True, **frame),
        node_def("fill", "Fill", ["dims_in", "body"], T=F32, index_type=I32),
        node_def("sum", "Max", ["fill", "axes_in"], T=F32, Tidx=I32),
        ints("axes", [0, 1]), node_def("axes_in", "Enter", ["axes"], T=I32, is_constant=True, **frame),
        node_def("next", "NextIteration", ["sum"], T=F32),
        node_def("out", "Exit", ["switch"], T=F32),
    ]


def _call_tree(depth: int = 24, fan: int = 2):
    """A 5 KB library: F0 calls F1 twice, F1 calls F2 twice, ...: 2^24 copies once inlined."""
    graph = graph_def(const_def("x", 1.0))
    for level in range(depth):
        function = graph.library.function.add()
        function.signature.name = f"F{level}"
        function.signature.input_arg.add(name="a", type=F32.enum)
        function.signature.output_arg.add(name="o", type=F32.enum)
        previous = "a"
        for k in range(fan):
            if level + 1 < depth:
                call = node_def(f"c{k}", "PartitionedCall", [previous], Tin=[F32], Tout=[F32])
                call.attr["f"].func.name = f"F{level + 1}"
            else:
                call = node_def(f"c{k}", "Identity", [previous], T=F32)
            function.node_def.append(call)
            previous = f"c{k}:output:0"
        function.ret["o"] = previous
    call = node_def("out", "PartitionedCall", ["x"], Tin=[F32], Tout=[F32])
    call.attr["f"].func.name = "F0"
    graph.node.append(call)
    return graph


def test_inlining_an_exponential_call_tree_is_refused(monkeypatch):
    """Counted as bodies are inlined, at every level; the acceptance test below runs the real
    bound (262,144 nodes) through place and optimize."""
    from graphtool.functions import lowering

    monkeypatch.setattr(lowering, "MAX_INLINED_NODES", 5000)
    graph = from_graphdef(_call_tree(), "g")
    with pytest.raises(InvalidGraphError, match=r"node '\w+' \(PartitionedCall\): inlining function 'F\d+' "
                                                r"takes the graph past 5,000 inlined nodes"):
        lowering.lower_functional_ops(graph)
    small = from_graphdef(_call_tree(depth=6), "g")   # 2^6 leaves: well within, and lowered
    report = lowering.lower_functional_ops(small)
    assert report.counts["PartitionedCall"] == 2**6 - 1 and report.inlined_nodes < 5000


def _nested_frames(depth: int = 2000):
    """2,000 loop frames (twice the recursion limit), each inside the previous one."""
    nodes, previous = [const_def("x", 1.0)], "x"
    for level in range(depth):
        nodes.append(node_def(f"enter{level}", "Enter", [previous], T=F32, frame_name=f"frame{level}"))
        previous = f"enter{level}"
    for level in reversed(range(depth)):
        nodes.append(node_def(f"exit{level}", "Exit", [previous], T=F32))
        previous = f"exit{level}"
    return nodes + [node_def("out", "Identity", [previous], T=F32)]


def _many_filled():
    """3,000 Consts of 1 GiB each (3 TiB on paper) in 200 KB, all added up."""
    count = 3000
    return [filled(f"c{i}", [1 << 28], values=(float(i),)) for i in range(count)] + \
        [node_def("out", "AddN", [f"c{i}" for i in range(count)], T=F32, N=count)]


ACCEPTANCE_GRAPHS = {
    "filled consts": lambda: [filled(f"c{i}", [GIB]) for i in range(6)] + [
        node_def("out", "AddN", [f"c{i}" for i in range(6)], T=F32, N=6)],
    "filled strings": lambda: [filled("s", [GIB], dtypes.string, (b"x" * 100,)),
                               node_def("out", "StringJoin", ["s", "s"], N=2)],
    "Add of filled 1 GiB consts": lambda: [filled("a", [1 << 28]), filled("b", [1 << 28], values=(2.0,)),
                                           node_def("out", "Add", ["a", "b"], T=F32)],
    "Mul chain of filled consts": lambda: [
        node_def("x", "Placeholder", dtype=F32, shape=Shape([1 << 28])), filled("a", [1 << 28]),
        filled("b", [1 << 28], values=(2.0,)), node_def("m", "Mul", ["x", "a"], T=F32),
        node_def("out", "Mul", ["m", "b"], T=F32)],
    "Fill": lambda: _fill(1 << 20), "Range": lambda: _range(2**31 - 1), "Range(float)": lambda: _float_range(1e15),
    "Tile": lambda: _tile(1 << 30), "BroadcastTo": lambda: _broadcast_to(1 << 20),
    "ZerosLike": lambda: _zeros_like_filled(1 << 40), "OnesLike(Placeholder)": lambda: _ones_like_placeholder(1 << 30),
    "outer Add": lambda: _outer_add(4096), "ConcatV2": lambda: _concat(1 << 25), "Pack": lambda: _pack(1 << 25),
    "GatherV2": lambda: _gather(1 << 24), "DynamicStitch": lambda: _dynamic_stitch(2**31 - 1),
    "Reshape": lambda: [const_def("x", 1.0), ints("shape", [1 << 30, 1 << 30]),
                        node_def("out", "Reshape", ["x", "shape"], T=F32, Tshape=I32)],
    "Pad": lambda: [const_def("x", [1.0]), ints("pad", [[1 << 30, 1 << 30]]),
                    node_def("out", "Pad", ["x", "pad"], T=F32, Tpaddings=I32)],
    "SegmentSum": lambda: [const_def("data", [1.0, 2.0]), ints("ids", [0, 2**31 - 2]),
                           node_def("out", "SegmentSum", ["data", "ids"], T=F32, Tindices=I32)],
    "OneHot": lambda: [ints("i", [0, 1]), ints("depth", 2**31 - 1), const_def("on", 1.0), const_def("off", 0.0),
                       node_def("out", "OneHot", ["i", "depth", "on", "off"], T=F32, TI=I32, axis=-1)],
    "Fill(Shape(huge Placeholder))": lambda: [
        node_def("p", "Placeholder", dtype=F32, shape=Shape([1 << 30, 1 << 30])),
        node_def("shape", "Shape", ["p"], T=F32, out_type=I32), const_def("v", 1.0),
        node_def("out", "Fill", ["shape", "v"], T=F32, index_type=I32)],
    "Split into 2^30 outputs": lambda: [const_def("x", [1.0, 2.0]), ints("axis", 0),
                                        node_def("out", "Split", ["axis", "x"], T=F32, num_split=GIB)],
    "ShapeN of 2^30 inputs": lambda: [const_def("x", [1.0]),
                                      node_def("out", "ShapeN", ["x"], T=F32, N=GIB, out_type=I32)],
    "Reshape to a 2^30-entry shape vector": lambda: [
        const_def("x", 1.0), node_def("shape", "Placeholder", dtype=I32, shape=Shape([GIB])),
        node_def("out", "Reshape", ["x", "shape"], T=F32, Tshape=I32)],
    "Fill of a filled 2^30-entry dims": lambda: [filled("dims", [GIB], I32, (1,)), const_def("v", 1.0),
                                                 node_def("out", "Fill", ["dims", "v"], T=F32, index_type=I32)],
    "Conv2D of filled consts": lambda: [
        filled("x", [1, 512, 512, 10]), filled("w", [100, 100, 10, 1]),
        node_def("out", "Conv2D", ["x", "w"], T=F32, strides=[1, 1, 1, 1], padding="SAME")],
    "while loop": _while_loop_bomb,
    "exponential call tree": _call_tree,
    "2,000 nested loop frames": _nested_frames,
    "3,000 filled consts": _many_filled,
}

_CHILD = textwrap.dedent("""
    import contextlib, io, json, resource, sys, time
    from cli.main import main
    import graphtool.exec.session, graphtool.opt.manager  # imported before measuring the baseline

    def vm_size():
        with open("/proc/self/status") as status:
            return next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmSize:"))

    headroom = int(sys.argv[1])
    baseline = vm_size()
    resource.setrlimit(resource.RLIMIT_AS, (baseline + headroom, baseline + headroom))
    results = []
    for job in json.loads(sys.argv[2]):
        stdout, stderr = io.StringIO(), io.StringIO()
        start = time.perf_counter()
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            code = main(job)
        results.append({"args": job, "code": code, "stderr": stderr.getvalue(), "seconds": time.perf_counter() - start})
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"baseline": baseline, "peak_rss": peak, "results": results}))
""")


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="measures address space through /proc")
def test_small_hostile_graphs_stay_below_one_gib(tmp_path):
    """Every command that does not execute the graph, on every generated hostile graph (each
    under 1 MiB), in one child process limited to its start-up address space + 1.5 GiB: a clean
    exit (0, or one `error:` line) and a peak resident memory below 1 GiB in all."""
    jobs = []
    for index, (name, make) in enumerate(ACCEPTANCE_GRAPHS.items()):
        made = make()
        path = write_graph(made if isinstance(made, GraphDef) else graph_def(*made), tmp_path / f"g{index}.pb")
        assert os.path.getsize(path) < 1 << 20, name
        out = str(tmp_path / f"o{index}.pb")
        jobs += [["inspect", path, "--json"], ["prune", path, out, "--fetch", "out"],
                 ["place", path, out], ["optimize", path, out]]
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
           "DFTOOL_MAX_TENSOR_BYTES": "", "DFTOOL_MAX_INPUT_BYTES": ""}
    proc = subprocess.run([sys.executable, "-c", _CHILD, str(3 * GIB // 2), json.dumps(jobs)], cwd=REPO_ROOT,
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads(proc.stdout.splitlines()[-1])
    failures = []
    for result in report["results"]:
        lines = result["stderr"].splitlines()
        if result["args"][0] == "inspect":  # an invalid graph is still reported, then the error
            lines = [line for line in lines if line.startswith("error: ")]
        if result["code"] not in (0, 3) or (result["code"] and not (len(lines) == 1 and lines[0].startswith("error: "))):
            failures.append(f"{' '.join(result['args'][:1])} {result['args'][1]}: exit {result['code']}: "
                            f"{result['stderr'][-300:]}")
        assert "internal error" not in result["stderr"] and "Traceback" not in result["stderr"]
    assert not failures, "\n".join(failures)
    assert report["peak_rss"] < GIB, f"peak RSS {report['peak_rss'] >> 20} MiB"


@pytest.mark.parametrize("command", [["inspect"], ["optimize", "OUT"], ["run"], ["prune", "OUT", "--fetch", "out"]])
def test_an_empty_tensor_whose_dims_multiply_past_int64_is_an_invalid_graph(tmp_path, command):
    """[2**62, 2, 0] holds no element, yet no strided array can have that shape (found by the
    offline fuzzer: cse and the Const kernel failed in numpy's reshape)."""
    path = write_graph(graph_def(filled("c", [1 << 62, 2, 0], values=()), node_def("out", "Identity", ["c"], T=F32)),
                       tmp_path / "g.pb")
    argv = [str(tmp_path / "o.pb") if a == "OUT" else a for a in command]
    code, _, err = run_dftool(argv[0], path, *argv[1:])
    # inspect summarises a graph with problems before its error line; the others print only that.
    line = err.splitlines()[-1] if command == ["inspect"] else error_line(err)
    assert code == 3 and line.startswith("error: ") and "node 'c'" in line and "cannot be represented" in line
