"""BLAS thread budgets: a lone heavy kernel gets every thread, concurrent ones share them."""
from __future__ import annotations

import threading

import numpy as np
import pytest

from graphtool import dtypes
from graphtool.builder import GraphBuilder
from graphtool.exec import thread_budget
from graphtool.exec.session import Session
from graphtool.exec.kernels import registry

pytest.importorskip("threadpoolctl")


@pytest.fixture
def blas_limits(monkeypatch):
    """Record the BLAS limit every MatMul runs under (the kernel itself is unchanged)."""
    if not thread_budget.BLAS.current():
        pytest.skip("numpy's BLAS is not visible to threadpoolctl")
    seen = []
    original = registry.lookup("MatMul").fn

    def recording(ctx, a, b, **attrs):
        seen.append(thread_budget.BLAS.current()[0])
        return original(ctx, a, b, **attrs)
    for device_type in (registry.CPU,):
        key = ("MatMul", device_type)
        monkeypatch.setitem(registry._KERNELS, key, registry._KERNELS[key].__class__(
            **{**registry._KERNELS[key].__dict__, "fn": recording}))
    return seen


def _chain(n):
    b = GraphBuilder()
    h = b.placeholder(dtypes.float32, [64, 64], name="x")
    for k in range(n):
        h = b.matmul(h, b.const(np.eye(64, dtype=np.float32), name=f"w{k}"), name=f"layer{k}")
    return b.graph, h.name


def _branches(n):
    b = GraphBuilder()
    x = b.placeholder(dtypes.float32, [64, 64], name="x")
    outs = [b.matmul(x, b.const(np.eye(64, dtype=np.float32), name=f"w{k}"), name=f"branch{k}") for k in range(n)]
    return b.graph, [o.name for o in outs]


def test_a_lone_product_uses_every_thread(blas_limits):
    graph, fetch = _chain(3)
    x = np.ones((64, 64), np.float32)
    np.testing.assert_array_equal(Session(graph, threads=2).run([fetch], {"x": x}).values[0], x)
    assert blas_limits == [2, 2, 2]


def test_one_thread_means_one_blas_thread(blas_limits):
    graph, fetch = _chain(2)
    Session(graph, threads=1).run([fetch], {"x": np.ones((64, 64), np.float32)})
    assert blas_limits == [1, 1]


def test_concurrent_products_share_the_threads(blas_limits):
    graph, fetches = _branches(4)
    x = np.arange(64 * 64, dtype=np.float32).reshape(64, 64)
    values = Session(graph, threads=2).run(fetches, {"x": x}).values
    for value in values:
        np.testing.assert_array_equal(value, x)
    # Four independent products on two threads: each runs with one BLAS thread, so at most two
    # threads are busy (the first may run alone before the others are ready).
    assert sorted(blas_limits)[:3] == [1, 1, 1]
    assert thread_budget.BLAS.active == 0


def test_the_limit_never_changes_under_a_running_kernel():
    """enter() from many threads: the limit changes only when nothing runs."""
    changes_while_active = []
    blas = thread_budget._BlasThreads()

    class Library:
        def set_num_threads(self, n):
            if blas.active:
                changes_while_active.append(n)

        def get_num_threads(self):
            return 1
    blas._libraries = [Library()]

    def worker(k):
        for i in range(200):
            blas.enter(1 + (i + k) % 3)
            blas.leave()
    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert changes_while_active == [] and blas.active == 0


def test_usable_cores_follows_the_affinity():
    assert 1 <= thread_budget.usable_cores() <= (__import__("os").cpu_count() or 1)


def test_parallel_for_runs_every_task_once_on_the_granted_threads():
    seen, threads = [], set()
    lock = threading.Lock()

    def task(k):
        with lock:
            seen.append(k)
            threads.add(threading.get_ident())
    thread_budget.grant(2)
    try:
        thread_budget.parallel_for(task, list(range(50)))
    finally:
        thread_budget.grant(1)
    assert sorted(seen) == list(range(50)) and 1 <= len(threads) <= 2


def test_parallel_for_reraises_a_task_failure():
    def task(k):
        if k == 7:
            raise ValueError("block 7")
    thread_budget.grant(2)
    try:
        with pytest.raises(ValueError, match="block 7"):
            thread_budget.parallel_for(task, list(range(20)))
    finally:
        thread_budget.grant(1)


@pytest.mark.parametrize("shape,filter_shape,strides,padding,depthwise", [
    ((3, 17, 13, 5), (3, 3, 5, 4), [1, 1, 1, 1], "SAME", False),
    ((1, 40, 9, 3), (5, 2, 3, 6), [1, 2, 1, 1], "VALID", False),
    ((2, 9, 9, 6), (3, 3, 6, 2), [1, 1, 1, 1], "SAME", True),
    ((1, 120, 64, 16), (3, 3, 16, 16), [1, 1, 1, 1], "SAME", False),   # per-tap products, blocks of rows
    ((9, 30, 25, 8), (3, 3, 8, 8), [1, 1, 1, 1], "VALID", False),      # per-tap products, blocks of images
    ((4, 64, 64, 24), (1, 1, 24, 40), [1, 2, 2, 1], "SAME", False),    # pointwise products
])
def test_a_convolution_split_over_threads_equals_the_single_thread_one(shape, filter_shape, strides, padding,
                                                                       depthwise):
    from graphtool.exec.kernels.nn_conv import conv2d, depthwise_conv2d
    from graphtool.exec.kernels import KernelContext

    rng = np.random.default_rng(3)
    image = rng.standard_normal(shape, dtype=np.float32)
    filt = rng.standard_normal(filter_shape, dtype=np.float32)
    fn = depthwise_conv2d if depthwise else conv2d
    ctx = KernelContext(np, "conv", "DepthwiseConv2dNative" if depthwise else "Conv2D", [dtypes.float32], "CPU")
    attrs = dict(strides=strides, padding=padding, explicit_paddings=[], data_format="NHWC", dilations=[1, 1, 1, 1])
    alone = fn(ctx, image, filt, **attrs)
    thread_budget.grant(2)
    try:
        split = fn(ctx, image, filt, **attrs)
    finally:
        thread_budget.grant(1)
    np.testing.assert_array_equal(split, alone)


@pytest.mark.parametrize("depthwise", [False, True])
@pytest.mark.parametrize("small_blocks", [False, True])
def test_conv_backprops_split_over_threads_equal_the_single_thread_ones(monkeypatch, depthwise, small_blocks):
    """Conv2DBackpropInput (blocks of images) and Conv2DBackpropFilter (blocks' products summed in
    block order) give the same bits on one thread or two."""
    from graphtool.exec.kernels import KernelContext, nn_window
    from graphtool.exec.kernels.nn_conv import (conv2d_backprop_filter, conv2d_backprop_input,
                                                depthwise_conv2d_backprop_input)

    rng = np.random.default_rng(4)
    image = rng.standard_normal((5, 11, 9, 6), dtype=np.float32)
    filt = rng.standard_normal((3, 3, 6, 1 if depthwise else 4), dtype=np.float32)
    grad = rng.standard_normal((5, 6, 5, 6 if depthwise else 4), dtype=np.float32)
    attrs = dict(strides=[1, 2, 2, 1], padding="SAME", explicit_paddings=[], data_format="NHWC", dilations=[1, 1, 1, 1])
    sizes = np.array(image.shape, np.int32)
    if small_blocks:   # one image (input) or one output row (filter) per block
        monkeypatch.setattr(nn_window, "CHUNK_BYTES", 1)
    ops = [("DepthwiseConv2dNativeBackpropInput", lambda ctx: depthwise_conv2d_backprop_input(ctx, sizes, filt, grad, **attrs))]
    if not depthwise:
        ops = [("Conv2DBackpropInput", lambda ctx: conv2d_backprop_input(ctx, sizes, filt, grad, **attrs)),
               ("Conv2DBackpropFilter", lambda ctx: conv2d_backprop_filter(ctx, image, np.array(filt.shape, np.int32),
                                                                           grad, **attrs))]
    for op, run in ops:
        ctx = KernelContext(np, "grad", op, [dtypes.float32], "CPU")
        alone = run(ctx)
        thread_budget.grant(2)
        try:
            split = run(ctx)
        finally:
            thread_budget.grant(1)
        np.testing.assert_array_equal(split, alone, err_msg=op)


def test_host_memory_is_kept_on_glibc():
    import platform

    from graphtool.exec.host_memory import keep_freed_memory

    kept = keep_freed_memory()
    assert kept is keep_freed_memory()   # once per process, the same answer after
    if platform.libc_ver()[0] == "glibc":
        assert kept
