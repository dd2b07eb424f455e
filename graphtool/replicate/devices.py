"""The devices of a replicated graph: one per replica, and the device of what stays single (the
split inputs, savers, summaries, the loss mean; in ps mode the variables and their updates)."""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import UsageError
from ..placement.device_names import canonical_device_name, parse_device_list, parse_device_name

MODES = ("allreduce", "ps")
RUNNABLE_TYPES = frozenset({"CPU", "GPU"})


@dataclass(frozen=True)
class ReplicaDevices:
    replicas: list[str]
    shared: str          # allreduce: replica 0's device; ps: the parameter server


def resolve_devices(devices: str | list[str] | None, replicas: int, mode: str) -> ReplicaDevices:
    """Default: /device:CPU:0 .. CPU:N-1, shared on CPU:0. `devices` lists N devices (allreduce,
    or ps with the parameter server on the first replica's device) or, in ps mode, N + 1: the
    parameter server first, then the replicas."""
    if mode not in MODES:
        raise UsageError(f"--mode: unknown mode '{mode}'", hint="allreduce or ps")
    if replicas < 1:
        raise UsageError(f"--replicas must be at least 1, not {replicas}")
    if devices is None:
        names = [canonical_device_name(f"cpu:{i}") for i in range(replicas)]
        return ReplicaDevices(names, names[0])
    text = devices if isinstance(devices, str) else ",".join(devices)
    raw = [item for item in text.split(",")]
    try:
        names = parse_device_list(text)
    except UsageError as exc:
        raise UsageError(f"--devices: {exc}", hint=exc.hint) from None
    for item, name in zip(raw, names):
        kind = parse_device_name(name).type
        if kind not in RUNNABLE_TYPES:
            raise UsageError(f"--devices: '{item.strip()}' is a {kind} device; dftool runs on CPU and GPU devices")
    if len(names) != len(raw):
        raise UsageError(f"--devices: '{text}' names a device twice; every replica needs its own device")
    wanted = "N" if mode == "allreduce" else "N (the parameter server on the first) or N + 1 (the parameter server first)"
    if len(names) == replicas:
        return ReplicaDevices(names, names[0])
    if mode == "ps" and len(names) == replicas + 1:
        return ReplicaDevices(names[1:], names[0])
    raise UsageError(f"--devices: {len(names)} device(s) for {replicas} replicas",
                     hint=f"{mode} mode takes {wanted} devices, N = --replicas")
