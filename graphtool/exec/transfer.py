"""How the executor runs the transfer nodes of a partitioned graph (`_Send`, `_Recv` and their
`_Host*` forms), against the step's Rendezvous.

As in TensorFlow's executor, transfer nodes run even when their inputs are dead: a `_Send` with a
dead input sends a dead marker (so the peer's `_Recv` in the same frame iteration is not left
waiting), and a `_Recv` whose control input is dead still receives, and outputs what was sent,
dead or alive. Its control edges carry its own input deadness, its data output the received one.

A `_Recv` never holds an executor thread: it registers a callback with the rendezvous and the
scheduling loop goes on; the callback (run by whichever thread delivers the value) hands the
result to the scheduling loop through the step's completion queue, exactly like a kernel that
finished on the thread pool. It counts as in flight meanwhile, so the step does not end early.

Values leave a device through `Device.to_host` and enter one through `Device.to_device`: free on
CPUs (the array is shared, as TensorFlow's local rendezvous shares a CPU tensor), real copies on
a GPU or the FakeGPU test double. `_HostRecv` outputs stay in host memory.
"""
from __future__ import annotations

from .plan import SEND
from .rendezvous import Rendezvous


def frame_iter(frame, it: int) -> tuple:
    """((frame_name, iteration), ...) from the root frame down to `frame` at iteration `it`: the
    part of a rendezvous key that tells loop iterations (and outer iterations) apart."""
    path = []
    while frame.parent is not None:
        path.append((frame.template.name, it))
        frame, it = frame.parent, frame.parent_iter
    path.reverse()
    return tuple(path)


def local_rendezvous(participant) -> Rendezvous:
    """A rendezvous for one executor running a graph that sends to itself."""
    return Rendezvous(participants=[participant])


def run_transfer(step, tagged, inputs, is_dead: bool) -> None:
    """Run a SEND or RECV item (`step` is a step.Step)."""
    item = tagged[0]
    if item.kind == SEND:
        _send(step, tagged, inputs, is_dead)
    else:
        _start_recv(step, tagged, is_dead)


def _key(tagged) -> tuple:
    item, frame, it = tagged
    return item.transfer_key + (frame_iter(frame, it),)


def _send(step, tagged, inputs, is_dead: bool) -> None:
    item = tagged[0]
    value = None
    if not is_dead:
        try:
            value = step.plan.device.to_host(inputs[0])
        except BaseException as exc:
            step.error = step._kernel_error(item, inputs, exc)
            return
    step.rendezvous.send(_key(tagged), value, is_dead)
    # A Send has no outputs; its control edges carry its own input deadness (as in TensorFlow).
    step._finish(tagged, (), is_dead)


def _start_recv(step, tagged, is_dead: bool) -> None:
    item = tagged[0]
    device = step.plan.device
    into_device = item.node.op == "_Recv"     # a _HostRecv's output stays in host memory
    completions = step.completions

    def arrived(value, value_is_dead: bool, error: BaseException | None = None) -> None:
        # Runs on the sender's thread (or this one, if the value was already there).
        if error is None and not value_is_dead and into_device:
            try:
                value = device.to_device(value)
            except BaseException as exc:
                error = step._kernel_error(item, (value,), exc)
        if error is not None:
            completions.put((tagged, None, error))
        else:
            completions.put((tagged, item.dead_outputs if value_is_dead else (value,), None))

    step.in_flight += 1
    step.rendezvous.recv_async(_key(tagged), arrived, step.participant)


def recv_control_dead(tagged) -> bool:
    """Whether a completed Recv's own (control) inputs were dead: what its control edges carry.
    The iteration's dead counts are never reset, and the iteration lives until the Recv finishes."""
    item, frame, it = tagged
    return frame.iterations[it].dead[item.local] > 0


def before_waiting(step) -> None:
    """Called when the scheduling loop is about to block on its completion queue: a failed step
    wakes every Recv (its own and other devices'); otherwise the rendezvous learns that this
    executor is idle, which lets it detect a deadlock across devices."""
    if step.error is not None:
        step.rendezvous.abort(step.error, step.participant)
    else:
        step.rendezvous.idle(step.participant, step.in_flight)
