"""The real cupy GPU device. Skipped, with the reason, where cupy or a CUDA device is missing (CI
has neither: the same paths are checked there on the simulated GPU, see test_gpu_kernels.py,
test_streams.py and test_swap.py)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

cupy = pytest.importorskip("cupy", reason="cupy is not installed (pip install 'dftool[gpu]' on a GPU machine)")


def _gpu_missing_reason() -> str | None:
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except (cupy.cuda.runtime.CUDARuntimeError, RuntimeError, OSError) as exc:
        return f"no usable CUDA device: {exc}"
    return None if count > 0 else "no CUDA device"


_REASON = _gpu_missing_reason()
if _REASON is not None:
    pytest.skip(_REASON, allow_module_level=True)

from graphtool import graph_io  # noqa: E402
from graphtool.exec.device_factory import create_device  # noqa: E402
from graphtool.exec.gpu import GPUDevice  # noqa: E402
from graphtool.exec.session import Session  # noqa: E402
from graphtool.ir import from_graphdef  # noqa: E402

from .test_swap import FEEDS, STEPS, run_loops  # noqa: E402
from .test_streams import two_branches  # noqa: E402
from .test_tf_fixtures_run import assert_matches  # noqa: E402

pytestmark = pytest.mark.gpu
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "tf"
CASES = sorted(json.loads(path.read_text())["name"] for path in FIXTURES.glob("*/case.json"))


@pytest.fixture(scope="module")
def gpu():
    return create_device("gpu")


@pytest.mark.parametrize("case", CASES)
def test_fixture_on_the_gpu_matches_the_cpu_and_tensorflow(case, gpu):
    spec = json.loads((FIXTURES / case / "case.json").read_text())
    graph = from_graphdef(graph_io.load_graphdef(str(FIXTURES / case / "graph.pb")), case)
    feeds = dict(np.load(FIXTURES / case / "feeds.npz"))
    on_gpu = Session(graph, device=gpu).run(spec["fetches"], feeds, timeout=120).values
    on_cpu = Session(graph, device="cpu").run(spec["fetches"], feeds, timeout=120).values
    expected = np.load(FIXTURES / case / "expected.npz")
    rtol, atol = max(spec.get("rtol", 0), 1e-4), max(spec.get("atol", 0), 1e-5)
    for name, gpu_value, cpu_value in zip(spec["fetches"], on_gpu, on_cpu):
        assert_matches(name, gpu_value, cpu_value, rtol, atol)
        assert_matches(name, gpu_value, expected[name], rtol, atol)


def test_tf32_is_off_by_default(gpu):
    """TensorFlow's own example: with TF32, 1.0001 rounds to 1.0 and the sum is exactly 1024.0;
    in float32 it is 1024 * float32(1.0001) = 1024.1024, give or take float32 summation error
    (measured 1024.112 on an H200)."""
    assert gpu.allow_tf32 is False
    x = cupy.full((1024, 1024), 1.0001, dtype=cupy.float32)
    product = float((x @ cupy.ones((1024, 1024), dtype=cupy.float32))[0, 0])
    assert abs(product - 1024 * float(np.float32(1.0001))) < 0.03


def test_branches_on_streams_give_the_cpu_values(gpu):
    graph = two_branches()
    feeds = {"x": np.linspace(-1, 1, 16, dtype=np.float32).reshape(4, 4)}
    session = Session(graph, device=gpu)
    np.testing.assert_allclose(session.run(["join:0"], feeds).values[0],
                               Session(graph).run(["join:0"], feeds).values[0], rtol=1e-5)
    executor, _, _ = next(iter(session._executors.values()))
    assert executor.streams.assignment.num_streams == 2


def test_copies_round_trip_through_pinned_memory(gpu):
    host = np.arange(12, dtype=np.float32).reshape(3, 4)
    on_device = gpu.to_device(host)
    assert isinstance(on_device, cupy.ndarray)
    back = gpu.to_host(on_device * 2)
    np.testing.assert_array_equal(back, host * 2)
    strings = np.array([b"a", b"b"], dtype=object)
    assert gpu.to_device(strings) is strings      # cupy cannot hold them: they stay on the host


def test_swap_memory_on_the_gpu():
    device = GPUDevice.create(0)
    swapped = run_loops(device, swap_memory=True)
    stats = device.swapper.stats
    # Swapping moves values, never changes them: equal to the same loops on the GPU without it; the
    # CPU's BLAS rounds float32 matmuls differently in the last bits (2e-6 measured on an H200).
    np.testing.assert_array_equal(swapped, run_loops(GPUDevice.create(0), swap_memory=False))
    np.testing.assert_allclose(swapped, run_loops("cpu", swap_memory=True), rtol=1e-5)
    assert stats.swapped_out == stats.swapped_in == STEPS
    assert stats.prefetch_hits == STEPS - 1
    # Copies out finish asynchronously, so a few originals may be held at once, never all of them.
    assert stats.peak_stack_device_bytes < STEPS * FEEDS["x"].nbytes
