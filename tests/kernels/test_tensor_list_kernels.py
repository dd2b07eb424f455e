"""TensorList kernels: the value itself (versions, copy-on-write, threads) against a plain-Python
model, the kernels against numpy, and TensorFlow's error conditions with its messages (the
messages were recorded from TensorFlow 2.21's kernels). The TensorFlow fixtures
(op_tensor_list_*) run through tests/exec/test_tf_fixtures_run.py like every fixture."""
from __future__ import annotations

import random
import re
import threading

import numpy as np
import pytest

from graphtool import dtypes
from graphtool.builder import GraphBuilder
from graphtool.errors import RuntimeFailure
from graphtool.exec.kernels import KernelContext, KernelError
from graphtool.exec.kernels.tensor_list import tensor_list_push_back_batch
from graphtool.exec.kernels.tensor_list_value import TensorList, variant_scalar
from graphtool.exec.session import Session
from graphtool.shapes import Shape

F32 = dtypes.float32


def _shape(*dims):
    return np.asarray(dims, np.int32).reshape(len(dims))


def _run(b: GraphBuilder, fetches, feeds=None, threads: int = 1):
    names = [f if isinstance(f, str) else f.name for f in fetches]
    return Session(b.graph, threads=threads).run(names, feeds or {}, timeout=30).values


def _from(b, value, *dims):
    return b.op("TensorListFromTensor", [np.asarray(value, np.float32), _shape(*dims) if dims else np.int32(-1)])


def _stack(b, handle, *dims, **attrs):
    return b.op("TensorListStack", [handle, _shape(*dims) if dims else np.int32(-1)], element_dtype=F32, **attrs)


# --- the value: versions against a model ----------------------------------------------------------

def _random_walk(seed: int, steps: int = 400):
    """Random operations on random earlier versions; each version's elements must stay what a
    plain copy-per-operation model says."""
    rng = random.Random(seed)
    start = [np.float32(i) for i in range(5)]
    versions = [(TensorList(F32, Shape.unknown(), start), list(start))]
    for step in range(steps):
        # Mostly the newest version (as loops do), sometimes an old one (branches, backward passes).
        current, model = versions[-1] if rng.random() < 0.7 else rng.choice(versions)
        kind = rng.choice(["set", "push", "pop", "resize", "read"])
        value = np.float32(1000 + step)
        if kind == "set" and model:
            i = rng.randrange(len(model))
            versions.append((current.set(i, value), model[:i] + [value] + model[i + 1:]))
        elif kind == "push":
            versions.append((current.push(value), model + [value]))
        elif kind == "pop" and model:
            versions.append((current.popped(), model[:-1]))
        elif kind == "resize":
            size = rng.randrange(0, 9)
            versions.append((current.resized(size), (model + [None] * size)[:size]))
        else:
            assert current.elements() == model
        probe, probe_model = rng.choice(versions)
        assert probe.length == len(probe_model)
        if probe_model:
            i = rng.randrange(len(probe_model))
            assert probe.get(i) is probe_model[i] or probe.get(i) == probe_model[i]
    return versions


@pytest.mark.parametrize("seed", range(5))
def test_every_version_keeps_its_elements(seed):
    for tensor_list, model in _random_walk(seed):
        assert tensor_list.elements() == model


def test_deriving_from_the_newest_version_does_not_copy_the_elements():
    """Loops stay O(1) per step: a SetItem/PushBack on the newest version changes the shared
    store in place and leaves the old version a one-element diff."""
    base = TensorList(F32, Shape([]), [np.float32(0)] * 100_000)
    store = base._store.data
    current = base
    for i in range(1000):
        current = current.set(i, np.float32(i)).push(np.float32(-i))
    assert current._store.data is store and current._diff is None
    assert base.get(5) == 0 and current.get(5) == 5   # the old version is still intact
    assert current.length == 101_000


def test_versions_are_safe_across_threads():
    base = TensorList(F32, Shape.unknown(), [np.float32(0)] * 50)
    errors = []

    def worker(offset):
        try:
            version = base
            for i in range(300):
                version = version.set(i % 50, np.float32(offset + i))
                assert version.get(i % 50) == offset + i
                assert base.get(i % 50) == 0
        except AssertionError as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(1000 * k,)) for k in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors and base.elements() == [0] * 50


# --- kernels against numpy ------------------------------------------------------------------------

def test_set_item_leaves_its_input_list_unchanged():
    b = GraphBuilder()
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    items = _from(b, x, 3)
    changed = b.op("TensorListSetItem", [items, np.int32(1), np.full(3, -1, np.float32)])
    before, after = _run(b, [_stack(b, items, 3), _stack(b, changed, 3)])
    np.testing.assert_array_equal(before, x)
    want = x.copy()
    want[1] = -1
    np.testing.assert_array_equal(after, want)


def test_unset_elements_read_as_zeros_of_the_known_shape():
    b = GraphBuilder()
    reserved = b.op("TensorListReserve", [_shape(-1, 2), np.int32(3)], element_dtype=F32)
    one = b.op("TensorListSetItem", [reserved, np.int32(1), np.ones((4, 2), np.float32)])
    # The list's [?,2] and the set element's [4,2] together size the zeros, as in TensorFlow.
    stacked, item, gathered = _run(b, [
        _stack(b, one), b.op("TensorListGetItem", [one, np.int32(2), np.int32(-1)], element_dtype=F32),
        b.op("TensorListGather", [one, np.int32([[0, 1]]), np.int32(-1)], element_dtype=F32)])
    np.testing.assert_array_equal(stacked, np.stack([np.zeros((4, 2)), np.ones((4, 2)), np.zeros((4, 2))]))
    np.testing.assert_array_equal(item, np.zeros((4, 2), np.float32))
    assert gathered.shape == (1, 2, 4, 2)   # indices' shape + element shape


def test_scatter_into_existing_list_leaves_a_gap_unset():
    """TensorFlow fills a gap with empty tensors whose Stack reads uninitialized memory; here the
    gap is unset and reads as zeros."""
    b = GraphBuilder()
    items = _from(b, np.ones((2, 3)), 3)
    grown = b.op("TensorListScatterIntoExistingList", [items, np.full((1, 3), 7, np.float32), np.int32([4])])
    (stacked,) = _run(b, [_stack(b, grown, 3)])
    np.testing.assert_array_equal(stacked, [[1] * 3, [1] * 3, [0] * 3, [0] * 3, [7] * 3])


def test_split_concat_and_lengths_match_numpy():
    b = GraphBuilder()
    rows = np.arange(14, dtype=np.float32).reshape(7, 2)
    split = b.op("TensorListSplit", [rows, _shape(-1, 2), np.int64([2, 0, 5])])
    joined, lengths = b.op("TensorListConcatV2", [split, _shape(-1, 2), np.zeros([0], np.int64)], element_dtype=F32)
    third = b.op("TensorListGetItem", [split, np.int32(2), np.int32(-1)], element_dtype=F32)
    got = _run(b, [joined, lengths, third])
    np.testing.assert_array_equal(got[0], rows)
    assert got[1].tolist() == [2, 0, 5] and got[1].dtype == np.int64
    np.testing.assert_array_equal(got[2], rows[2:])


def test_element_shape_and_length():
    b = GraphBuilder()
    known = _from(b, np.ones((4, 2, 3)), -1, 3)
    unknown = _from(b, np.ones((4, 3)))
    got = _run(b, [b.op("TensorListElementShape", [known], shape_type=dtypes.int64),
                   b.op("TensorListElementShape", [unknown], shape_type=dtypes.int32),
                   b.op("TensorListLength", [known])])
    assert got[0].tolist() == [-1, 3] and got[0].dtype == np.int64
    assert got[1].tolist() == -1 and got[1].shape == ()
    assert got[2] == 4 and got[2].dtype == np.int32


def test_add_n_and_zeros_like_of_lists():
    b = GraphBuilder()
    reserved = b.op("TensorListReserve", [_shape(2), np.int32(3)], element_dtype=F32)
    a = b.op("TensorListSetItem", [reserved, np.int32(0), np.float32([1, 2])])
    c = b.op("TensorListSetItem", [a, np.int32(2), np.float32([5, 6])])
    summed = b.op("AddN", [[a, c, b.op("ZerosLike", [c])]])
    (stacked,) = _run(b, [_stack(b, summed, 2)])
    np.testing.assert_array_equal(stacked, [[2, 4], [0, 0], [5, 6]])


def test_push_back_batch_matches_numpy():
    ctx = KernelContext(np, "batch", "TensorListPushBackBatch", [dtypes.variant], None)
    handles = np.empty(2, dtype=object)
    handles[0] = TensorList(F32, Shape([3]), [np.ones(3, np.float32)])
    handles[1] = TensorList(F32, Shape([3]), [])
    rows = np.arange(6, dtype=np.float32).reshape(2, 3)
    result = tensor_list_push_back_batch(ctx, handles, rows, element_dtype=F32)
    assert [lst.length for lst in result] == [2, 1] and handles[0].length == 1
    np.testing.assert_array_equal(result[0].get(1), rows[0])
    np.testing.assert_array_equal(result[1].get(0), rows[1])
    with pytest.raises(KernelError, match=re.escape("Expected tensor.shape[0] == input_handles.size, but saw 1 vs. 2")):
        tensor_list_push_back_batch(ctx, handles, rows[:1], element_dtype=F32)


def _rnn_graph(parallel_iterations: int):
    """out[i] = tanh(x[i] + out[i-1]) for i < n, written with SetItem into a reserved list."""
    b = GraphBuilder()
    x = b.placeholder("float32", [6, 2], name="x")
    n = b.placeholder("int32", [], name="n")
    inputs = b.op("TensorListFromTensor", [x, _shape(2)])
    outputs = b.op("TensorListReserve", [_shape(2), np.int32(6)], element_dtype=F32)

    def body(i, h, outputs):
        x_t = b.op("TensorListGetItem", [inputs, i, _shape(2)], element_dtype=F32)
        h = b.op("Tanh", [b.op("AddV2", [x_t, h])])
        return b.op("AddV2", [i, 1]), h, b.op("TensorListSetItem", [outputs, i, h])

    _, _, outputs = b.while_loop(lambda i, h, o: b.less(i, n), body, [0, np.zeros(2, np.float32), outputs],
                                 parallel_iterations=parallel_iterations)
    _stack(b, outputs, 2, name="out")
    return b


@pytest.mark.parametrize("parallel_iterations, threads", [(1, 1), (10, 4)])
def test_lists_through_a_while_loop_match_numpy(parallel_iterations, threads):
    x = np.random.default_rng(3).normal(size=(6, 2)).astype(np.float32)
    b = _rnn_graph(parallel_iterations)
    (out,) = _run(b, ["out:0"], {"x:0": x, "n:0": np.int32(4)}, threads=threads)
    want, h = np.zeros((6, 2), np.float32), np.zeros(2, np.float32)
    for i in range(4):
        h = np.tanh(x[i] + h)
        want[i] = h
    np.testing.assert_allclose(out, want, rtol=1e-6)


def test_a_long_loop_of_set_items_stays_linear():
    """2000 SetItems on a 2000-element list finish quickly: no step copies the list."""
    import time

    b = GraphBuilder()
    n = 2000
    outputs = b.op("TensorListReserve", [np.int32([]), np.int32(n)], element_dtype=F32)

    def body(i, outputs):
        return b.op("AddV2", [i, 1]), b.op("TensorListSetItem", [outputs, i, b.op("Cast", [i], DstT=F32)])

    _, outputs = b.while_loop(lambda i, o: b.less(i, n), body, [0, outputs])
    b.op("TensorListStack", [outputs, np.int32([])], element_dtype=F32, name="out")
    start = time.perf_counter()
    (out,) = _run(b, ["out:0"])
    assert time.perf_counter() - start < 30
    np.testing.assert_array_equal(out, np.arange(n, dtype=np.float32))


# --- TensorFlow's error conditions ----------------------------------------------------------------

def _fails(build, message):
    b = GraphBuilder()
    fetch = build(b)
    with pytest.raises(RuntimeFailure, match=re.escape(message)):
        _run(b, [fetch], {name: value for name, value in DYNAMIC_FEEDS.items()
                          if b.graph.get(name.split(":")[0]) is not None})


# Values the shape functions cannot see (fed through placeholders of unknown shape), so the
# kernels' own checks are reached rather than the static ones.
DYNAMIC_FEEDS = {"shape3:0": np.int32(3), "scalar:0": np.float32(1), "shape2:0": np.int32([2])}


def _dyn(b, name):
    value = DYNAMIC_FEEDS[f"{name}:0"]
    return b.placeholder(dtypes.from_numpy(value.dtype), None, name=name)


ERRORS = {
    "get_item_out_of_range": (lambda b: b.op("TensorListGetItem", [_from(b, np.ones((3, 2))), np.int32(3),
                                                                   np.int32(-1)], element_dtype=F32),
                              "Trying to access element 3 in a list with 3 elements."),
    "get_item_negative": (lambda b: b.op("TensorListGetItem", [_from(b, np.ones((3, 2))), np.int32(-1), np.int32(-1)],
                                         element_dtype=F32),
                          "Trying to access element -1 in a list with 3 elements."),
    "get_unset_unknown_shape": (
        lambda b: b.op("TensorListGetItem", [b.op("TensorListReserve", [np.int32(-1), np.int32(2)], element_dtype=F32),
                                             np.int32(0), np.int32(-1)], element_dtype=F32),
        "Trying to read an uninitialized tensor but element_shape is not fully defined: <unknown> and no list "
        "element is set."),
    "set_item_out_of_range": (lambda b: b.op("TensorListSetItem", [_from(b, np.ones((3, 2))), np.int32(3),
                                                                   np.ones(2, np.float32)]),
                              "Trying to modify element 3 in a list with 3 elements."),
    "set_item_shape": (lambda b: b.op("TensorListSetItem", [
        b.op("TensorListFromTensor", [np.ones((3, 2), np.float32), _dyn(b, "shape2")]), np.int32(0),
        np.ones(3, np.float32)]),
                       "Tried to set a tensor with incompatible shape at a list index. Item element shape: [3] "
                       "list shape: [2]"),
    "stack_num_elements": (lambda b: _stack(b, _from(b, np.ones((3, 2))), num_elements=2),
                           "Operation expected a list with 2 elements but got a list with 3 elements."),
    "stack_empty_unknown": (
        lambda b: _stack(b, b.op("EmptyTensorList", [np.int32(-1), np.int32(-1)], element_dtype=F32)),
        "Tried to stack elements of an empty list with non-fully-defined element_shape: <unknown>"),
    "pop_empty": (lambda b: b.op("TensorListPopBack", [b.op("EmptyTensorList", [np.int32(-1), np.int32(-1)],
                                                            element_dtype=F32), np.int32(-1)], element_dtype=F32)[1],
                  "Trying to pop from an empty list."),
    "push_full": (lambda b: _stack(b, b.op("TensorListPushBack", [
        b.op("TensorListPushBack", [b.op("EmptyTensorList", [np.int32([]), np.int32(1)], element_dtype=F32),
                                    np.float32(1)]), np.float32(2)])),
        "Tried to push item into a full list list size: 1 max_num_elements: 1"),
    "gather_out_of_range": (lambda b: b.op("TensorListGather", [_from(b, np.ones((3, 2))), np.int32([0, 5]),
                                                                np.int32(-1)], element_dtype=F32),
                            "Index 5 out o range; list only has 3 elements."),
    "from_scalar": (lambda b: b.op("TensorListLength", [b.op("TensorListFromTensor", [_dyn(b, "scalar"),
                                                                                      np.int32(-1)])]),
                    "Tensor must be at least a vector, but saw shape: []"),
    "bad_scalar_shape": (lambda b: b.op("TensorListLength", [b.op("TensorListReserve", [_dyn(b, "shape3"),
                                                                                        np.int32(3)],
                                                                  element_dtype=F32)]),
                         "The only valid scalar shape tensor is the fully unknown shape specified as -1."),
    "reserve_negative": (lambda b: b.op("TensorListLength", [b.op("TensorListReserve", [np.int32(-1), np.int32(-1)],
                                                                  element_dtype=F32)]),
                         "The num_elements to reserve must be a non negative number, but got -1"),
    "scatter_negative": (lambda b: b.op("TensorListLength", [b.op("TensorListScatterV2", [
        np.ones((1, 2), np.float32), np.int32([-1]), np.int32(-1), np.int32(-1)])]),
        "Indices in TensorListScatter must all be non-negative."),
    "scatter_past_num_elements": (lambda b: b.op("TensorListLength", [b.op("TensorListScatterV2", [
        np.ones((1, 2), np.float32), np.int32([4]), np.int32(-1), np.int32(3)])]),
        "TensorListScatter: Trying to scatter at index 4 in list with size 3"),
    "split_unused": (lambda b: b.op("TensorListLength", [b.op("TensorListSplit", [
        np.ones(3, np.float32), np.int32(-1), np.int64([1, 1])])]),
        "Unused values in tensor. Length of tensor: 3 Values used: 2"),
    "resize_negative": (lambda b: b.op("TensorListLength", [b.op("TensorListResize", [_from(b, np.ones(2)),
                                                                                      np.int32(-1)])]),
                        "TensorListSlice expects size to be non-negative. Got: -1"),
    "concat_scalars": (lambda b: b.op("TensorListConcatV2", [_from(b, np.ones(2)), np.int32(-1),
                                                             np.zeros([0], np.int64)], element_dtype=F32)[0],
                       "Concat saw a scalar shape at index 0 but requires at least vectors."),
    "add_n_lengths": (lambda b: _stack(b, b.op("AddN", [[_from(b, np.ones((2, 2))), _from(b, np.ones((1, 2)))]])),
                      "Trying to add two lists of tensors with different lengths. One is 2 and the other is 1"),
}


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_tensorflow_error_conditions(case):
    build, message = ERRORS[case]
    _fails(build, message)


def test_element_dtype_is_checked_statically_and_by_the_kernel():
    from graphtool.builder.binding import GraphBuildError
    from graphtool.exec.kernels.tensor_list import tensor_list_get_item

    b = GraphBuilder()
    with pytest.raises(GraphBuildError, match="Expected list with element dtype int32 but got list with element "
                                              "dtype float32"):
        b.op("TensorListGetItem", [_from(b, np.ones((3, 2))), np.int32(0), np.int32(-1)], element_dtype=dtypes.int32)
    ctx = KernelContext(np, "get", "TensorListGetItem", [dtypes.int32], None)
    handle = variant_scalar(TensorList(F32, Shape([2]), [np.ones(2, np.float32)]))
    with pytest.raises(KernelError, match="Invalid data types; op elements int32 but list elements float32"):
        tensor_list_get_item(ctx, handle, np.int32(0), np.int32(-1), element_dtype=dtypes.int32)


def test_a_list_tensor_is_a_scalar_object():
    holder = variant_scalar(TensorList(F32, Shape.unknown(), []))
    assert holder.shape == () and holder.dtype == object and isinstance(holder[()], TensorList)
