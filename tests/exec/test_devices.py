"""Devices: the numpy-backed GPU test double runs graphs through the GPU code paths (GPU kernel
registrations, host->device feed copies, device->host fetch copies); the real GPU needs cupy."""
import json
from pathlib import Path

import numpy as np
import pytest

from graphtool import graph_io
from graphtool.errors import DeviceUnavailable
from graphtool.exec.device_factory import create_device
from graphtool.exec.devices import FakeGPUDevice
from graphtool.exec.session import Session
from graphtool.ir import from_graphdef

from .test_tf_fixtures_run import assert_matches

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "tf"


@pytest.mark.parametrize("case", ["mlp_frozen", "convnet_frozen", "cond", "while_loop", "grad_mlp",
                                  "op_math_binary_broadcast", "op_array_slice"])
def test_fixtures_on_the_gpu_test_double(case):
    spec = json.loads((FIXTURES / case / "case.json").read_text())
    graph = from_graphdef(graph_io.load_graphdef(str(FIXTURES / case / "graph.pb")), case)
    feeds = dict(np.load(FIXTURES / case / "feeds.npz"))
    expected = np.load(FIXTURES / case / "expected.npz")
    session = Session(graph, device="fakegpu")
    assert session.device.device_type == "GPU"
    result = session.run(spec["fetches"], feeds)
    for name, value in zip(spec["fetches"], result.values):
        assert_matches(name, value, expected[name], 1e-4, 1e-5)


def test_feeds_and_fetches_are_copied_across_the_device_boundary():
    device = FakeGPUDevice()
    host = np.arange(3.0)
    on_device = device.to_device(host)
    assert on_device is not host and np.array_equal(on_device, host)
    assert device.to_host(on_device) is not on_device
    assert device.name == "/job:localhost/replica:0/task:0/device:GPU:0"


def test_real_gpu_without_cupy_is_unavailable():
    try:
        import cupy  # noqa: F401
    except ImportError:
        with pytest.raises(DeviceUnavailable, match="cupy is not installed"):
            create_device("gpu")
    else:
        pytest.skip("cupy is installed: the GPU tests below run instead")


@pytest.mark.gpu
def test_fixture_on_a_real_gpu():
    cupy = pytest.importorskip("cupy", reason="cupy is not installed")
    try:
        if cupy.cuda.runtime.getDeviceCount() == 0:
            pytest.skip("no CUDA device")
    except cupy.cuda.runtime.CUDARuntimeError as exc:
        pytest.skip(f"no usable CUDA device: {exc}")
    spec = json.loads((FIXTURES / "mlp_frozen" / "case.json").read_text())
    graph = from_graphdef(graph_io.load_graphdef(str(FIXTURES / "mlp_frozen" / "graph.pb")))
    result = Session(graph, device="gpu").run(spec["fetches"], dict(np.load(FIXTURES / "mlp_frozen" / "feeds.npz")))
    expected = np.load(FIXTURES / "mlp_frozen" / "expected.npz")
    for name, value in zip(spec["fetches"], result.values):
        assert_matches(name, value, expected[name], 1e-4, 1e-5)


def test_device_interface():
    for device in (create_device("cpu"), create_device("fakegpu:1")):
        buffer = device.allocate((2, 3), np.float32)
        assert buffer.shape == (2, 3) and buffer.dtype == np.float32
        assert device.has_kernel("MatMul") and device.has_kernel("Merge")
    assert create_device("fakegpu:1").name.endswith("/device:GPU:1")
