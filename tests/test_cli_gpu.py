"""The GPU on the command line where there is none: asking to run on it is exit 4 with one clear
line; placing for it is static and works anywhere."""
from __future__ import annotations

import pytest

from graphtool import graph_io
from tests.helpers import REPO_ROOT, run_dftool

MLP = str(REPO_ROOT / "sample_graphs" / "mlp.pb")
MLP_FEEDS = str(REPO_ROOT / "sample_graphs" / "mlp.feeds.npz")


def _gpu_present() -> bool:
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:   # no cupy, no driver, no device
        return False


needs_no_gpu = pytest.mark.skipif(_gpu_present(), reason="a GPU is present: these check the no-GPU path")


@needs_no_gpu
@pytest.mark.parametrize("command", ["run", "profile"])
def test_running_on_a_missing_gpu_is_exit_4(command):
    code, stdout, stderr = run_dftool(command, MLP, "--feeds", MLP_FEEDS, "--device", "gpu")
    assert code == 4, stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: --device gpu: ")
    assert "cupy is not installed" in lines[0] or "no usable CUDA device" in lines[0]
    assert "Traceback" not in stderr


def test_placing_for_a_gpu_needs_no_gpu(tmp_path):
    out = tmp_path / "placed.pb"
    code, _, stderr = run_dftool("place", MLP, str(out), "--devices", "gpu:0,cpu:0")
    assert code == 0, stderr
    devices = {node.device for node in graph_io.load_graphdef(str(out)).node}
    assert devices and all(d.startswith("/job:localhost/replica:0/task:0/device:") for d in devices)
