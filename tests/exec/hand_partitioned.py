"""Hand-partitioned graphs for the multi-device runtime tests: every cross-device edge is already a
`_Send`/`_Recv` pair, and a loop spanning two devices has a control skeleton on each, the way
partitioning lays it out (so these tests do not depend on place/partition)."""
from __future__ import annotations

from graphtool import dtypes
from graphtool.ir import Graph, Node, TensorRef

from ..helpers import const, op, placeholder

F32, I32, BOOL = dtypes.float32, dtypes.int32, dtypes.bool_
LOCAL = "/job:localhost/replica:0/task:0"
CPU0, CPU1, GPU0 = f"{LOCAL}/device:CPU:0", f"{LOCAL}/device:CPU:1", f"{LOCAL}/device:GPU:0"


def on(device: str, node: Node) -> Node:
    """`node`, pinned to `device`."""
    node.device = device
    return node


def transfer(graph: Graph, value: Node | TensorRef, src: str, dst: str, tensor_name: str,
             control_inputs=(), dtype=F32) -> Node:
    """A `_Send` of `value` on `src` and its `_Recv` on `dst` (returned), with TensorFlow's attrs."""
    ref = value if isinstance(value, TensorRef) else value.output(0)
    attrs = dict(tensor_name=tensor_name, send_device=src, recv_device=dst, send_device_incarnation=1,
                 client_terminated=False)
    base = tensor_name.replace(":", "_")
    graph.add_node("_Send", f"{base}/send", inputs=[ref], attrs={"T": dtype, **attrs}, device=src)
    return graph.add_node("_Recv", f"{base}/recv", control_inputs=list(control_inputs),
                          attrs={"tensor_type": dtype, **attrs}, device=dst)


def root_transfer_graph() -> Graph:
    """x (fed, CPU:0) * 2 -> CPU:1, + 1 = `z`; `z` back to CPU:0, + x = `back`; `b` (fed, CPU:1)."""
    g = Graph()
    x = on(CPU0, placeholder(g, "x", [3]))
    y = on(CPU0, op(g, "Mul", "y", x, const(g, "two", 2.0, device=CPU0)))
    z = on(CPU1, op(g, "AddV2", "z", transfer(g, y, CPU0, CPU1, "y:0"), const(g, "one", 1.0, device=CPU1)))
    b = on(CPU1, placeholder(g, "b", [3]))
    on(CPU1, op(g, "Mul", "zb", z, b))
    on(CPU0, op(g, "AddV2", "back", transfer(g, z, CPU1, CPU0, "z:0"), x))
    on(CPU1, g.add_node("NoOp", "after_z", control_inputs=[z]))
    return g


def ping_pong_graph(rounds: int = 4) -> Graph:
    """A value bouncing between CPU:0 and CPU:1 `rounds` times (+1 on each side). Every _Recv is
    added first, so each device meets a Recv before it can run the Send its peer waits for: with
    one thread per device this finishes only if a waiting Recv does not hold the thread."""
    g = Graph()
    devices = [CPU0, CPU1]
    recvs = []
    for k in range(1, rounds + 1):
        src, dst = devices[(k - 1) % 2], devices[k % 2]
        attrs = dict(tensor_name=f"v{k}:0", send_device=src, recv_device=dst, send_device_incarnation=1)
        recvs.append(g.add_node("_Recv", f"v{k}/recv", attrs={"tensor_type": F32, **attrs}, device=dst))
    value = on(CPU0, placeholder(g, "x", []))
    for k in range(1, rounds + 1):
        src = devices[(k - 1) % 2]
        value = on(src, op(g, "AddV2", f"v{k}", value, const(g, f"one{k}", 1.0, device=src)))
        attrs = dict(tensor_name=f"v{k}:0", send_device=src, recv_device=devices[k % 2], send_device_incarnation=1)
        g.add_node("_Send", f"v{k}/send", inputs=[value.output(0)], attrs={"T": F32, **attrs}, device=src)
        value = recvs[k - 1]
    on(devices[rounds % 2], op(g, "Identity", "result", value))
    return g


def cond_graph() -> Graph:
    """A cond whose true branch runs on CPU:1: `out` = 3x if p else -x. On CPU:1, `late` receives
    x under a control input that is dead when p is false (it still receives), and `after_late`
    hangs off its control edge (dead then)."""
    g = Graph()
    p = on(CPU0, placeholder(g, "p", [], dtype=BOOL))
    x = on(CPU0, placeholder(g, "x", [2]))
    switch = on(CPU0, op(g, "Switch", "switch", x, p))
    taken = transfer(g, switch.output(1), CPU0, CPU1, "switch:1")
    tripled = on(CPU1, op(g, "Mul", "tripled", taken, const(g, "three", 3.0, device=CPU1)))
    back = transfer(g, tripled, CPU1, CPU0, "tripled:0")
    negated = on(CPU0, op(g, "Neg", "negated", switch.output(0)))
    merge = on(CPU0, op(g, "Merge", "merge", negated, back, N=2))
    on(CPU0, op(g, "Identity", "out", merge))
    late = transfer(g, x, CPU0, CPU1, "x:0", control_inputs=[tripled])
    on(CPU1, op(g, "Identity", "late_value", late))
    on(CPU1, const(g, "after_late", 1.0, control_inputs=[late]))
    return g


def loop_graph(steps: int, parallel_iterations: int) -> Graph:
    """`x = tanh(x * w)` `steps` times in ONE while loop whose counter and predicate live on CPU:0
    and whose body runs on CPU:1: CPU:0 sends the predicate and x each iteration and receives the
    new x; CPU:1 iterates on its own control skeleton (Enter/Merge/Switch/NextIteration/Exit,
    driven by the received predicate), with `w` entering as a loop constant. Output `out`."""
    g = Graph()
    frame = {"frame_name": "loop/ctx", "parallel_iterations": parallel_iterations}

    def loop_variable(device, name, init, dtype=F32):
        """Enter + Merge of one loop variable (the Merge's back edge is wired by the caller)."""
        enter = on(device, op(g, "Enter", f"{name}/enter", init, dtype=dtype, **frame))
        return on(device, op(g, "Merge", f"{name}/merge", enter, enter, dtype=dtype, N=2))

    # CPU:0: the counter, the predicate, and x's own slot in the loop.
    i_merge = loop_variable(CPU0, "i", const(g, "i0", 0, dtype=I32, device=CPU0), I32)
    x_merge = loop_variable(CPU0, "xs", on(CPU0, placeholder(g, "x", [2])))
    limit = const(g, "limit", steps, dtype=I32, device=CPU0, control_inputs=[i_merge])
    cond = on(CPU0, g.add_node("LoopCond", "cond",
                               inputs=[on(CPU0, op(g, "Less", "less", i_merge, limit, dtype=I32)).output(0)]))
    i_switch = on(CPU0, op(g, "Switch", "i/switch", i_merge, cond, dtype=I32))
    x_switch = on(CPU0, op(g, "Switch", "xs/switch", x_merge, cond))
    i_body = on(CPU0, op(g, "Identity", "i/body", i_switch.output(1), dtype=I32))
    x_body = on(CPU0, op(g, "Identity", "xs/body", x_switch.output(1)))
    one = const(g, "one", 1, dtype=I32, device=CPU0, control_inputs=[i_body])
    i_add = on(CPU0, op(g, "AddV2", "i/add", i_body, one, dtype=I32))
    i_merge.set_input(1, on(CPU0, op(g, "NextIteration", "i/next", i_add, dtype=I32)).output(0))
    on(CPU0, op(g, "Exit", "i/exit", i_switch.output(0), dtype=I32))

    # CPU:1: its own skeleton, driven by the predicate received from CPU:0.
    d_merge = loop_variable(CPU1, "skeleton", const(g, "d0", 0.0, device=CPU1))
    predicate = transfer(g, cond, CPU0, CPU1, "cond:0", control_inputs=[d_merge], dtype=BOOL)
    d_switch = on(CPU1, op(g, "Switch", "skeleton/switch", d_merge, predicate))
    pivot = on(CPU1, op(g, "Identity", "skeleton/pivot", d_switch.output(1)))
    d_merge.set_input(1, on(CPU1, op(g, "NextIteration", "skeleton/next", pivot)).output(0))
    on(CPU1, op(g, "Exit", "skeleton/exit", d_switch.output(0)))
    w_in = on(CPU1, op(g, "Enter", "w/enter", const(g, "w", [0.9, -1.1], device=CPU1),
                       is_constant=True, **frame))
    received = transfer(g, x_body, CPU0, CPU1, "xs/body:0", control_inputs=[pivot])
    y = on(CPU1, op(g, "Tanh", "tanh", on(CPU1, op(g, "Mul", "mul", received, w_in))))

    # Back on CPU:0: the new x, received under CPU:0's own pivot.
    new_x = transfer(g, y, CPU1, CPU0, "tanh:0", control_inputs=[x_body])
    x_merge.set_input(1, on(CPU0, op(g, "NextIteration", "xs/next", new_x)).output(0))
    on(CPU0, op(g, "Identity", "out", on(CPU0, op(g, "Exit", "xs/exit", x_switch.output(0)))))
    return g
