"""Starting a collective member from the executor (see the package doc)."""
from __future__ import annotations

import numpy as np

from ...errors import RuntimeFailure
from ..transfer import frame_iter
from .exchange import DEAD_RESULT, Exchange, member
from .spec import CollectiveSpec


def start(step, tagged, inputs, is_dead: bool) -> None:
    """Start a COLLECTIVE item (`step` is a step.Step); it finishes through step.completions."""
    item, frame, it = tagged
    spec: CollectiveSpec = item.collective
    device = step.plan.device
    completions = step.completions

    def finish(result, error: BaseException | None) -> None:
        if error is None and result is not DEAD_RESULT:
            try:
                result = device.to_device(result)
            except BaseException as exc:
                error = exc
        if error is not None:
            completions.put((tagged, None, step._kernel_error(item, inputs, error)))
        elif result is DEAD_RESULT:
            completions.put((tagged, item.dead_outputs, None))
        else:
            completions.put((tagged, (result,), None))

    step.in_flight += 1
    try:
        value, shape = _member_input(spec, inputs, is_dead, device)
        link = Exchange(spec, shape, step.rendezvous, step.participant, _iterations(frame, it), finish)
    except BaseException as exc:
        finish(None, exc)
        return
    link.run(member(link, value))


def _iterations(frame, it: int) -> tuple:
    """The loop iterations the member runs in, outermost first, without the frames' names: the
    members of a group may each run in a loop of their own (one per device, differently named),
    and the k-th iteration of each meets the k-th of the others."""
    return tuple(("loop", iteration) for _, iteration in frame_iter(frame, it))


def _member_input(spec: CollectiveSpec, inputs, is_dead: bool, device) -> tuple[np.ndarray | None, tuple]:
    """(this member's contribution as a host array or None when dead, the shape it holds)."""
    if spec.receives:
        shape = spec.declared_shape if spec.declared_shape is not None else _shape_input(spec, device.to_host(inputs[3]))
        return (None if is_dead else np.empty(shape, spec.dtype)), shape
    if is_dead:
        return None, ()
    value = np.asarray(device.to_host(inputs[0]))
    if value.dtype != spec.dtype:
        raise RuntimeFailure(f"{spec.title}: the input is {value.dtype}, the node says T={spec.dtype}")
    n = len(spec.devices)
    if spec.kind in ("reduce_scatter", "all_to_all"):
        if value.ndim == 0 or value.shape[0] % n:
            what = "a scalar" if value.ndim == 0 else f"dim 0 of {value.shape[0]}"
            raise RuntimeFailure(f"{spec.title}: the input has {what}, which cannot be split into {n} equal "
                                 f"blocks (one per member)")
    if spec.kind == "gather" and value.ndim == 0:
        raise RuntimeFailure(f"{spec.title}: a gather concatenates along dim 0, so its input needs rank >= 1")
    return value, tuple(int(d) for d in value.shape)


def _shape_input(spec: CollectiveSpec, value) -> tuple:
    shape = np.asarray(value)
    if shape.ndim != 1 or not np.issubdtype(shape.dtype, np.integer) or (shape < 0).any():
        raise RuntimeFailure(f"{spec.title}: the shape input must be a vector of sizes >= 0, got {shape.tolist()}")
    return tuple(int(d) for d in shape)
