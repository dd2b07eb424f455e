"""layout: run image ops placed on a GPU in NCHW, the layout cuDNN prefers (Grappler's layout optimizer).

    before: x -> Conv2D(NHWC) 'c1' -> Relu -> MaxPool(NHWC) 'p'                  (all on /device:GPU:0)
    after:  x -> Transpose(0,3,1,2) -> Conv2D(NCHW) 'c1' -> Relu -> MaxPool(NCHW) 'p'
               -> Transpose(0,2,3,1) -> users of 'p'

Conv2D, MaxPool, AvgPool, FusedBatchNorm* and 4-D BiasAdd on a GPU switch to NCHW (their strides,
ksize, dilations and explicit paddings permuted along); a Transpose brings their data input to NCHW
and another brings output 0 back to NHWC for the users. Between consecutive converted ops the two
Transposes would cancel, so none is made: the second op reads the first one's NCHW output directly.
Element-wise activations whose input comes back from a converted op run in NCHW too, so a
Conv2D -> BiasAdd -> Relu -> MaxPool chain needs Transposes only at its two ends.

Nothing happens without GPU nodes (CPU kernels prefer NHWC). Fetched or kept nodes keep their NHWC
output, and nodes inside loop frames are left alone (a new perm Const would need the frame's pivot).
"""
from __future__ import annotations

import re

import numpy as np

from .. import dtypes
from ..ir import Graph, Node, TensorRef
from ..shape_inference import infer_shapes
from ..shapes import Shape, has_rank
from .base import Pass, PassContext, PassResult, register_pass

TO_NCHW = (0, 3, 1, 2)
TO_NHWC = (0, 2, 3, 1)

# op -> the list attrs written in data_format's dim order (permuted along with the data).
_FORMAT_SENSITIVE = {"Conv2D": ("strides", "dilations", "explicit_paddings"),
                     "MaxPool": ("ksize", "strides", "explicit_paddings"),
                     "AvgPool": ("ksize", "strides"),
                     "FusedBatchNorm": (), "FusedBatchNormV2": (), "FusedBatchNormV3": (),
                     "BiasAdd": ()}
# Element-wise on their one input: any layout will do, so they follow their producer's.
_LAYOUT_AGNOSTIC = frozenset({"Relu", "Relu6", "Elu", "LeakyRelu", "Tanh", "Sigmoid"})

# '/device:GPU:0', '/job:w/replica:0/task:0/device:GPU:1', legacy '/gpu:0', 'GPU:0'.
_GPU_DEVICE = re.compile(r"(?:^|/)(?:device:)?gpu(?::|/|$)", re.IGNORECASE)


def on_gpu(node: Node) -> bool:
    return bool(_GPU_DEVICE.search(node.device))


def permute_dims(values: list, perm: tuple[int, ...]) -> list:
    """A per-dimension list in the layout `perm` leads to (pairs per dim for explicit paddings)."""
    if len(values) == 2 * len(perm):
        pairs = [values[2 * i:2 * i + 2] for i in range(len(perm))]
        return [v for i in perm for v in pairs[i]]
    return [values[i] for i in perm] if len(values) == len(perm) else values


class _Converter:
    """Converts nodes one at a time, remembering the Transposes it made so that it can reuse
    them and skip the pairs that would cancel."""

    def __init__(self, graph: Graph, ctx: PassContext):
        self.graph, self.ctx = graph, ctx
        self.shapes = infer_shapes(graph)
        self.frame_of = graph.frames().frame_of
        self.perms: dict[tuple[str, tuple], Node] = {}          # (device, perm) -> its Const
        self.to_nchw: dict[tuple[TensorRef, str], Node] = {}    # (NHWC tensor, device) -> Transpose
        self.back: dict[Node, Node] = {}                        # Transpose to NHWC -> converted node
        self.counts = {"nodes_converted": 0, "transposes_added": 0, "transpose_pairs_cancelled": 0}

    # --- which nodes ---------------------------------------------------------------------------
    def wants(self, node: Node) -> bool:
        if not on_gpu(node) or not self.ctx.can_rewrite(node) or not self.frame_of[node].is_root:
            return False
        if node.op in _LAYOUT_AGNOSTIC:   # only worth it right after a converted op
            return self.comes_back_from_nchw(node.inputs[0], node.device)
        if node.op not in _FORMAT_SENSITIVE or node.attr("data_format") != "NHWC":
            return False
        data = node.inputs[0]   # 4-D only (BiasAdd also takes 2-D values); a Transpose back is 4-D
        return self.comes_back_from_nchw(data, node.device) or self.shapes.shape(data).rank == 4

    def comes_back_from_nchw(self, ref: TensorRef, device: str) -> bool:
        """Is `ref` a Transpose back to NHWC that this pass put after a node on `device`?"""
        return ref.node in self.back and ref.node.device == device

    # --- the rewrite ---------------------------------------------------------------------------
    def convert(self, node: Node) -> None:
        node.set_input(0, self.nchw_input(node.inputs[0], node.device))
        if node.op in _FORMAT_SENSITIVE:
            for name in _FORMAT_SENSITIVE[node.op]:
                node.set_attr(name, permute_dims(node.attr(name), TO_NCHW))
            node.set_attr("data_format", "NCHW")
        _permute_shape_hint(node, TO_NCHW)
        uses = node.uses(0)
        if uses:
            back = self.transpose(node.output(0), TO_NHWC, node.device, named_after=node)
            for consumer, slot in uses:
                consumer.set_input(slot, back.output(0))
            self.back[back] = node
        self.counts["nodes_converted"] += 1

    def nchw_input(self, ref: TensorRef, device: str) -> TensorRef:
        """`ref` (NHWC) in NCHW: the converted producer's own output when `ref` is a Transpose back
        from it, else a Transpose (one per tensor and device)."""
        if self.comes_back_from_nchw(ref, device):
            self.counts["transpose_pairs_cancelled"] += 1
            return ref.node.inputs[0]
        key = (ref, device)
        if key not in self.to_nchw:
            self.to_nchw[key] = self.transpose(ref, TO_NCHW, device, named_after=ref.node)
        return self.to_nchw[key].output(0)

    def transpose(self, ref: TensorRef, perm: tuple, device: str, named_after: Node) -> Node:
        """Transpose(ref, perm) on `device`, named 'named_after/layout_to_nchw' (or _to_nhwc)."""
        what = "to_nchw" if perm == TO_NCHW else "to_nhwc"
        node = self.graph.add_node("Transpose", self.ctx.new_name(self.graph, named_after, "layout", what),
                                   inputs=[ref, self.perm_const(device, perm, named_after)], device=device,
                                   attrs={"T": self.dtype(ref), "Tperm": dtypes.int32})
        self.counts["transposes_added"] += 1
        return node

    def perm_const(self, device: str, perm: tuple, named_after: Node) -> TensorRef:
        """The perm as an int32 Const on `device` (one per device and perm)."""
        key = (device, perm)
        if key not in self.perms:
            name = self.ctx.new_name(self.graph, named_after, "layout", "perm_" + "".join(map(str, perm)))
            self.perms[key] = self.graph.add_node(
                "Const", name, device=device,
                attrs={"dtype": dtypes.int32, "value": np.array(perm, np.int32)})
        return self.perms[key].output(0)

    def dtype(self, ref: TensorRef):
        """The dtype of an original tensor, or of a Transpose this pass made."""
        return ref.node.attr("T") if ref.node in self.back else self.shapes.dtype(ref)

    def drop_unused_transposes(self) -> None:
        """Transposes back to NHWC that every user skipped (they read the NCHW output)."""
        for back in list(self.back):
            if not back.has_users:
                self.graph.remove_node(back)
                self.counts["transposes_added"] -= 1
        for const in list(self.perms.values()):
            if not const.has_users:
                self.graph.remove_node(const)


def _permute_shape_hint(node: Node, perm: tuple) -> None:
    """Keep a TensorFlow `_output_shapes` hint true: output 0 is now in the other layout."""
    if "_output_shapes" not in node.attrs:
        return
    shapes = node.attr("_output_shapes")
    first = shapes[0]
    if has_rank(first) and first.rank == len(perm):
        shapes[0] = Shape([first.dims[i] for i in perm])
        node.set_attr("_output_shapes", shapes, kind="list(shape)")


@register_pass
class Layout(Pass):
    name = "layout"
    description = "run Conv2D, pooling, batch norm and BiasAdd on GPUs in NCHW"

    def run(self, graph: Graph, ctx: PassContext) -> PassResult:
        if not any(on_gpu(n) and n.op in _FORMAT_SENSITIVE for n in graph.nodes):
            return PassResult(False)
        converter = _Converter(graph, ctx)
        for node in graph.topological_order():
            if converter.wants(node):
                converter.convert(node)
        converter.drop_unused_transposes()
        return PassResult.from_counts(**converter.counts)
