"""Host<->device copies in a graph spanning the CPU and the GPU test double: every CPU->GPU edge
is one copy into device memory (one per tensor, however many GPU consumers it has), every GPU->CPU
edge one copy out, and the values equal a CPU-only run."""
from __future__ import annotations

import collections

import numpy as np

from graphtool.builder import GraphBuilder
from graphtool.exec.devices import FakeGPUDevice
from graphtool.exec.session import Session

CPU0, GPU0 = "/device:CPU:0", "/device:GPU:0"


def cpu_gpu_graph():
    """x, a on the CPU; b, c, d on the GPU (b and c both read a); e on the CPU reads d."""
    b = GraphBuilder()
    with b.device(CPU0):
        x = b.placeholder("float32", [3, 4], name="x")
        a = b.op("Square", [x], name="a")
    with b.device(GPU0):
        d = b.op("AddV2", [b.op("Exp", [a], name="b"), b.op("Neg", [a], name="c")], name="d")
    with b.device(CPU0):
        b.op("Sin", [d], name="e")
    return b.graph


def count_copies(device, copies) -> None:
    """Count `device`'s host<->device copies in `copies` (wrapping its methods)."""
    for kind in ("to_device", "to_host"):
        real = getattr(device, kind)

        def copy(array, kind=kind, real=real):
            copies[kind] += 1
            return real(array)
        setattr(device, kind, copy)


def test_every_cpu_gpu_edge_is_one_copy():
    feeds = {"x": np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)}
    session = Session(cpu_gpu_graph(), device=FakeGPUDevice())
    session.run(["e:0"], feeds)                      # compiles the parts
    executor = next(iter(session._executors.values()))[0]
    gpu_part = next(part for part in executor.parts if part.device.device_type == "GPU")
    edge_copies = collections.Counter()
    count_copies(gpu_part.device, edge_copies)
    value = session.run(["e:0"], feeds).values[0]
    np.testing.assert_allclose(value, Session(cpu_gpu_graph(), device="cpu").run(["e:0"], feeds).values[0],
                               rtol=1e-6)
    # a crosses into the GPU once for both of its GPU consumers; d comes back once.
    assert edge_copies == {"to_device": 1, "to_host": 1}
    transfers = collections.Counter(item.node.op for item in gpu_part.executor.plan.items
                                    if item.node.op in ("_Send", "_Recv"))
    assert transfers == {"_Recv": 1, "_Send": 1}
