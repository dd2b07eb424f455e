"""The array op family: inferred shapes agree with TensorFlow's C++ shape functions (unknown dims
and unknown rank included), value functions carry shape vectors through Shape -> StridedSlice ->
Pack -> Reshape chains, and bad inputs record an error naming the node.

Expected shapes were read from TensorFlow 2.21 (tf.compat.v1 graphs of placeholders with partial
shapes; `.shape` after TensorFlow's shape functions ran). Where we infer more than TensorFlow,
the case says so and gives TensorFlow's answer in a comment.
"""
import numpy as np
import pytest

from graphtool import dtypes
from graphtool.ir import Graph, Node, TensorRef
from graphtool.ops import registry
from graphtool.ops.inference import InferenceContext
from graphtool.shape_inference import infer_shapes
from graphtool.shapes import Shape

U = None            # an unknown dim
UNKNOWN = None      # a shape of unknown rank
F32, I32, I64 = dtypes.float32, dtypes.int32, dtypes.int64


class Net:
    """A tiny graph builder. Op type attrs (T, Index, N, ...) are read off the inputs unless given."""

    def __init__(self):
        self.graph = Graph()

    def input(self, shape, dtype=F32) -> TensorRef:
        """A Placeholder; shape None has unknown rank."""
        return self.graph.add_node("Placeholder", attrs={"dtype": dtype, "shape": Shape(shape)}).output(0)

    def const(self, value, dtype=I32) -> TensorRef:
        array = np.asarray(value, dtype=dtype.numpy)
        return self.graph.add_node("Const", attrs={"value": array, "dtype": dtype}).output(0)

    def op(self, op: str, *args, **attrs) -> Node:
        """`args` follow the op's input args; a list arg (N * T) takes a list of tensors."""
        spec, inputs = registry.get(op), []
        for arg, given in zip(spec.inputs, args):
            refs = list(given) if isinstance(given, list) else [given]
            inputs += refs
            if arg.number_attr:
                attrs.setdefault(arg.number_attr, len(refs))
            if arg.type_attr:
                attrs.setdefault(arg.type_attr, _dtype_of(refs[0]))
        return self.graph.add_node(op, inputs=inputs, attrs=attrs)

    def vector(self, entries) -> TensorRef:
        """A 1-D int32 tensor whose None entries are unknown: a Pack of int32 placeholder scalars
        and consts, the way a graph computes a shape vector."""
        scalars = [self.input([], I32) if e is None else self.const(e) for e in entries]
        return self.op("Pack", scalars).output(0)

    # Shape-vector plumbing used by the chain tests.
    def shape_of(self, x: TensorRef) -> TensorRef:
        return self.op("Shape", x).output(0)

    def element(self, vector: TensorRef, index: int) -> TensorRef:
        """vector[index] as a StridedSlice with shrink_axis_mask, as tf's indexing writes it."""
        begin, end, stride = (self.const([v]) for v in (index, index + 1, 1))
        return self.op("StridedSlice", vector, begin, end, stride, shrink_axis_mask=1).output(0)


def _dtype_of(ref: TensorRef):
    return ref.node.spec.output_dtypes(ref.node)[ref.index]


def inferred(node: Node):
    """The node's inferred output shapes, asserting shape inference recorded no error."""
    result = infer_shapes(node.graph)
    assert not result.errors, list(result.errors.values())
    return [result.shape(ref) for ref in node.outputs]


def value_of(node: Node, index: int = 0):
    """Output `index`'s static value: a list (None for unknown entries), or None."""
    result = infer_shapes(node.graph)
    assert not result.errors, list(result.errors.values())
    info = result.info[node.output(index)]
    return None if info.value is None else info.value.tolist()


def per_output_values(node: Node):
    """Every output's static value as lists (None for an unknown output)."""
    return [value_of(node, index) for index in range(node.num_outputs)]


def i32(n: Net, shape):
    """An int32 placeholder: an index or shape input whose value is unknown."""
    return n.input(shape, I32)


# (case id, graph builder returning the node, expected shape of output 0 as TensorFlow infers it)
SINGLE_OUTPUT_CASES = [
    # Reshape: -1 inference, partly known targets, unknown inputs.
    ("reshape_infers_minus_one", lambda n: n.op("Reshape", n.input([U, 4]), n.const([-1, 2])), [U, 2]),
    ("reshape_unknown_input_dims", lambda n: n.op("Reshape", n.input([U, U]), n.const([2, -1])), [2, U]),
    ("reshape_zero_elements", lambda n: n.op("Reshape", n.input([0, 4]), n.const([-1, 2])), [0, 2]),
    ("reshape_zero_dim_beats_unknown", lambda n: n.op("Reshape", n.input([U, 0]), n.const([-1, 2])), [0, 2]),
    ("reshape_unknown_rank_input", lambda n: n.op("Reshape", n.input(UNKNOWN), n.const([-1, 2])), [U, 2]),
    ("reshape_unknown_target_value", lambda n: n.op("Reshape", n.input([U, 4]), i32(n, [3])), [U, U, U]),
    ("reshape_partly_known_target",
     lambda n: n.op("Reshape", n.input([U, 4]), n.vector([U, 2, 2])), [U, 2, 2]),
    # Transpose.
    ("transpose_unknown_perm", lambda n: n.op("Transpose", n.input([2, 3, 4]), i32(n, [3])), [U, U, U]),
    ("transpose_rank_from_perm", lambda n: n.op("Transpose", n.input(UNKNOWN), n.const([1, 0])), [U, U]),
    ("transpose_single_perm_entry_is_ambiguous",
     lambda n: n.op("Transpose", n.input(UNKNOWN), n.const([0])), UNKNOWN),
    ("transpose_negative_perm",
     lambda n: n.op("Transpose", n.input([2, 3, 4]), n.const([-1, 0, 1])),
     [4, 2, 3]),
    # ExpandDims and Squeeze.
    ("expand_dims_last", lambda n: n.op("ExpandDims", n.input([2, 3]), n.const(-1)), [2, 3, 1]),
    ("expand_dims_most_negative", lambda n: n.op("ExpandDims", n.input([2, 3]), n.const(-3)), [1, 2, 3]),
    ("expand_dims_vector_dim", lambda n: n.op("ExpandDims", n.input([2, 3]), n.const([1])), [2, 1, 3]),
    ("expand_dims_unknown_dim", lambda n: n.op("ExpandDims", n.input([2, 3]), i32(n, [])), UNKNOWN),
    ("expand_dims_unknown_rank", lambda n: n.op("ExpandDims", n.input(UNKNOWN), n.const(0)), UNKNOWN),
    ("squeeze_all_with_unknown_dim", lambda n: n.op("Squeeze", n.input([1, U, 3, 1])), UNKNOWN),
    ("squeeze_all_ones", lambda n: n.op("Squeeze", n.input([1, 2, 3, 1])), [2, 3]),
    ("squeeze_named_dims", lambda n: n.op("Squeeze", n.input([1, U, 3, 1]), squeeze_dims=[1, -1]), [1, 3]),
    ("squeeze_unknown_rank", lambda n: n.op("Squeeze", n.input(UNKNOWN)), UNKNOWN),
    # ConcatV2 / Concat.
    ("concat_unknown_axis",
     lambda n: n.op("ConcatV2", [n.input([U, 3]), n.input([2, 3])], i32(n, [])),
     [U, U]),
    ("concat_unknown_axis_rank_from_any_input",
     lambda n: n.op("ConcatV2", [n.input(UNKNOWN), n.input([2, 3])], i32(n, [])), [U, U]),
    ("concat_unknown_rank_input_first",
     lambda n: n.op("ConcatV2", [n.input(UNKNOWN), n.input([2, 3])], n.const(0)), [U, 3]),
    ("concat_unknown_rank_input_last",
     lambda n: n.op("ConcatV2", [n.input([2, 3]), n.input(UNKNOWN)], n.const(0)), [U, 3]),
    ("concat_negative_axis",
     lambda n: n.op("ConcatV2", [n.input([2, U]), n.input([2, 3])], n.const(-1)),
     [2, U]),
    ("concat_known", lambda n: n.op("ConcatV2", [n.input([2, 4]), n.input([2, 3])], n.const(1)), [2, 7]),
    ("concat_v1_axis_first",
     lambda n: n.op("Concat", n.const(1), [n.input([2, U]), n.input([2, 3])]),
     [2, U]),
    # Slice.
    ("slice_sizes_with_minus_one",
     lambda n: n.op("Slice", n.input([5, U, 7]), n.const([1, 2, 3]), n.const([2, -1, -1])), [2, U, 4]),
    ("slice_unknown_begin",
     lambda n: n.op("Slice", n.input([5, U, 7]), i32(n, [3]), n.const([2, -1, -1])), [2, U, U]),
    ("slice_unknown_sizes",
     lambda n: n.op("Slice", n.input([5, U, 7]), n.const([1, 2, 3]), i32(n, [3])),
     [U, U, U]),
    ("slice_unknown_rank",
     lambda n: n.op("Slice", n.input(UNKNOWN), n.const([1, 2]), n.const([2, -1])),
     [2, U]),
    ("slice_partly_known_sizes",
     lambda n: n.op("Slice", n.input([5, 6, 7]), n.const([0, 0, 0]), n.vector([U, 2, -1])), [U, 2, U]),
    # Pack and Tile.
    ("pack_merges_inputs", lambda n: n.op("Pack", [n.input([U, 3]), n.input([2, U])], axis=1), [2, 2, 3]),
    ("pack_negative_axis", lambda n: n.op("Pack", [n.input([2, 3]), n.input([2, 3])], axis=-1), [2, 3, 2]),
    ("pack_unknown_rank", lambda n: n.op("Pack", [n.input(UNKNOWN), n.input(UNKNOWN)], axis=5), UNKNOWN),
    ("tile_known", lambda n: n.op("Tile", n.input([2, U, 3]), n.const([2, 3, 0])), [4, U, 0]),
    ("tile_unknown_multiples", lambda n: n.op("Tile", n.input([2, U, 3]), i32(n, [3])), [U, U, U]),
    ("tile_unknown_rank", lambda n: n.op("Tile", n.input(UNKNOWN), n.const([2, 3])), [U, U]),
    ("tile_nothing_known", lambda n: n.op("Tile", n.input(UNKNOWN), i32(n, [U])), UNKNOWN),
    ("tile_partly_known_multiples",
     lambda n: n.op("Tile", n.input([2, 3]), n.vector([U, 2])), [U, 6]),
    # Pad family.
    ("pad_known", lambda n: n.op("Pad", n.input([2, U]), n.const([[1, 2], [3, 4]])), [5, U]),
    ("pad_unknown_paddings", lambda n: n.op("Pad", n.input([2, U]), i32(n, [U, 2])), [U, U]),
    ("pad_rank_from_paddings", lambda n: n.op("Pad", n.input(UNKNOWN), i32(n, [3, 2])), [U, U, U]),
    ("pad_nothing_known", lambda n: n.op("Pad", n.input(UNKNOWN), i32(n, [U, U])), UNKNOWN),
    ("pad_v2",
     lambda n: n.op("PadV2", n.input([2, 3]), n.const([[1, 2], [3, 4]]), n.const(0.0, F32)),
     [5, 10]),
    ("mirror_pad",
     lambda n: n.op("MirrorPad", n.input([4, U]), n.const([[1, 2], [3, 4]]), mode="REFLECT"),
     [7, U]),
    ("mirror_pad_grad",
     lambda n: n.op("MirrorPadGrad", n.input([9, U]), n.const([[1, 2], [3, 4]]), mode="REFLECT"), [6, U]),
    ("mirror_pad_grad_unknown_paddings",
     lambda n: n.op("MirrorPadGrad", n.input([9, U]), i32(n, [2, 2]), mode="REFLECT"), [U, U]),
    ("mirror_pad_grad_unknown_rank",
     lambda n: n.op("MirrorPadGrad", n.input([9, U]), i32(n, [U, 2]), mode="REFLECT"), UNKNOWN),
    # Gather family.
    ("gather_v2", lambda n: n.op("GatherV2", n.input([5, 6, 7]), i32(n, [2, 3]), n.const(1)), [5, 2, 3, 7]),
    ("gather_v2_negative_axis",
     lambda n: n.op("GatherV2", n.input([5, 6, 7]), i32(n, [2, 3]), n.const(-1)), [5, 6, 2, 3]),
    ("gather_v2_unknown_axis",
     lambda n: n.op("GatherV2", n.input([5, 6, 7]), i32(n, [2, 3]), i32(n, [])), [U, U, U, U]),
    ("gather_v2_unknown_axis_and_rank",
     lambda n: n.op("GatherV2", n.input(UNKNOWN), i32(n, [2, 3]), i32(n, [])), UNKNOWN),
    ("gather_v2_batch_dims",
     lambda n: n.op("GatherV2", n.input([2, 6, 7]), i32(n, [2, 3]), n.const(1), batch_dims=1), [2, 3, 7]),
    ("gather_v2_negative_batch_dims",
     lambda n: n.op("GatherV2", n.input([2, 6, 7]), i32(n, [2, 3]), n.const(2), batch_dims=-1), [2, 6, 3]),
    ("gather_v2_unknown_indices",
     lambda n: n.op("GatherV2", n.input([5, 6, 7]), i32(n, UNKNOWN), n.const(1)), UNKNOWN),
    ("gather_v1", lambda n: n.op("Gather", n.input([5, 6, 7]), i32(n, [2, 3])), [2, 3, 6, 7]),
    ("gather_v1_unknown_params", lambda n: n.op("Gather", n.input(UNKNOWN), i32(n, [2, 3])), UNKNOWN),
    ("gather_nd", lambda n: n.op("GatherNd", n.input([5, 6, 7]), i32(n, [4, 2])), [4, 7]),
    ("gather_nd_unknown_depth", lambda n: n.op("GatherNd", n.input([5, 6, 7]), i32(n, [4, U])), UNKNOWN),
    # Scatter family.
    ("scatter_nd", lambda n: n.op("ScatterNd", i32(n, [4, 1]), n.input([4, 6]), n.const([8, 6])), [8, 6]),
    ("scatter_nd_partly_known_shape",
     lambda n: n.op("ScatterNd", i32(n, [4, 1]), n.input([4, 6]), n.vector([U, 6])), [U, 6]),
    ("scatter_nd_unknown_shape",
     lambda n: n.op("ScatterNd", i32(n, [4, 1]), n.input([4, 6]), i32(n, [2])),
     [U, U]),
    ("scatter_nd_index_depth_past_rank",
     lambda n: n.op("ScatterNd", i32(n, [4, 3]), n.input([4]), n.const([8, 6])), [8, 6]),
    ("tensor_scatter_update",
     lambda n: n.op("TensorScatterUpdate", n.input([8, U]), i32(n, [4, 1]), n.input([4, 6])), [8, U]),
    ("tensor_scatter_add",
     lambda n: n.op("TensorScatterAdd", n.input([8, U]), i32(n, [4, 1]), n.input([4, 6])), [8, U]),
    # Fill, Range, LinSpace, ZerosLike, OnesLike.
    ("fill_known", lambda n: n.op("Fill", n.const([2, 3]), n.const(1.0, F32)), [2, 3]),
    ("fill_partly_known",
     lambda n: n.op("Fill", n.vector([U, 3]), n.const(1.0, F32)), [U, 3]),
    ("fill_unknown_dims", lambda n: n.op("Fill", i32(n, [3]), n.const(1.0, F32)), [U, U, U]),
    ("range_int", lambda n: n.op("Range", n.const(1), n.const(10), n.const(3)), [3]),
    ("range_float", lambda n: n.op("Range", n.const(0.0, F32), n.const(1.0, F32), n.const(0.3, F32)), [4]),
    ("range_negative_delta", lambda n: n.op("Range", n.const(10), n.const(1), n.const(-3)), [3]),
    ("range_unknown_start", lambda n: n.op("Range", i32(n, []), n.const(10), n.const(3)), [U]),
    ("lin_space", lambda n: n.op("LinSpace", n.const(0.0, F32), n.const(1.0, F32), n.const(5)), [5]),
    ("lin_space_unknown_num",
     lambda n: n.op("LinSpace", n.const(0.0, F32), n.const(1.0, F32), i32(n, [])),
     [U]),
    ("zeros_like", lambda n: n.op("ZerosLike", n.input([U, 3])), [U, 3]),
    ("ones_like", lambda n: n.op("OnesLike", n.input([U, 3])), [U, 3]),
    # Broadcasting.
    ("broadcast_to", lambda n: n.op("BroadcastTo", n.input([U, 1, 3]), n.const([4, 2, 5, 3])), [4, 2, 5, 3]),
    ("broadcast_to_partly_known_target",
     lambda n: n.op("BroadcastTo", n.input([U, 2, 3]), n.vector([4, U, U, U])), [4, U, 2, 3]),
    ("broadcast_to_unknown_target", lambda n: n.op("BroadcastTo", n.input([2, 3]), i32(n, [U])), UNKNOWN),
    ("broadcast_to_unknown_input", lambda n: n.op("BroadcastTo", n.input(UNKNOWN), n.const([2, 3])), [2, 3]),
    ("broadcast_args", lambda n: n.op("BroadcastArgs", i32(n, [3]), i32(n, [5])), [5]),
    ("broadcast_args_unknown_length", lambda n: n.op("BroadcastArgs", i32(n, [3]), i32(n, [U])), [U]),
    # Reverse, OneHot, Where.
    ("reverse_v2", lambda n: n.op("ReverseV2", n.input([2, U]), n.const([1])), [2, U]),
    ("reverse_v1", lambda n: n.op("Reverse", n.input([2, U]), n.const([True, False], dtypes.bool_)), [2, U]),
    ("reverse_v1_rank_from_dims",
     lambda n: n.op("Reverse", n.input(UNKNOWN), n.const([True, False, True], dtypes.bool_)), [U, U, U]),
    ("one_hot",
     lambda n: n.op("OneHot", i32(n, [2, 3]), n.const(5), n.const(1.0, F32), n.const(0.0, F32)),
     [2, 3, 5]),
    ("one_hot_axis_0",
     lambda n: n.op("OneHot", i32(n, [2, 3]), n.const(5), n.const(1.0, F32), n.const(0.0, F32), axis=0),
     [5, 2, 3]),
    ("one_hot_axis_1",
     lambda n: n.op("OneHot", i32(n, [2, 3]), n.const(5), n.const(1.0, F32), n.const(0.0, F32), axis=1),
     [2, 5, 3]),
    ("one_hot_axis_past_rank_wraps",
     lambda n: n.op("OneHot", i32(n, [2, 3]), n.const(5), n.const(1.0, F32), n.const(0.0, F32), axis=5),
     [2, 3, 5]),
    ("one_hot_unknown_depth",
     lambda n: n.op("OneHot", i32(n, [2, 3]), i32(n, []), n.const(1.0, F32), n.const(0.0, F32)), [2, 3, U]),
    ("one_hot_unknown_indices",
     lambda n: n.op("OneHot", i32(n, UNKNOWN), n.const(3), n.const(1.0, F32), n.const(0.0, F32)), UNKNOWN),
    ("where", lambda n: n.op("Where", n.input([2, U], dtypes.bool_)), [U, 2]),
    ("where_unknown_rank", lambda n: n.op("Where", n.input(UNKNOWN, dtypes.bool_)), [U, U]),
    # Segment reductions and DynamicStitch.
    ("unsorted_segment_sum",
     lambda n: n.op("UnsortedSegmentSum", n.input([4, 5, 6]), i32(n, [4, 5]), n.const(7)), [7, 6]),
    ("unsorted_segment_sum_unknown_count",
     lambda n: n.op("UnsortedSegmentSum", n.input([4, 5, 6]), i32(n, [4]), i32(n, [])), [U, 5, 6]),
    ("unsorted_segment_sum_unknown_ids",
     lambda n: n.op("UnsortedSegmentSum", n.input([4, 5, 6]), i32(n, UNKNOWN), n.const(7)), UNKNOWN),
    ("unsorted_segment_sum_unknown_data",
     lambda n: n.op("UnsortedSegmentSum", n.input(UNKNOWN), i32(n, [4]), n.const(7)), UNKNOWN),
    ("unsorted_segment_max",
     lambda n: n.op("UnsortedSegmentMax", n.input([4, 5, 6]), i32(n, [4]), n.const(7)),
     [7, 5, 6]),
    ("unsorted_segment_min",
     lambda n: n.op("UnsortedSegmentMin", n.input([4, U]), i32(n, [U]), n.const(2)),
     [2, U]),
    ("unsorted_segment_prod",
     lambda n: n.op("UnsortedSegmentProd", n.input([4]), i32(n, [4]), n.const(3)),
     [3]),
    ("segment_sum", lambda n: n.op("SegmentSum", n.input([4, 5, 6]), i32(n, [4])), [U, 5, 6]),
    ("segment_sum_does_not_check_ids",
     lambda n: n.op("SegmentSum", n.input([4, 5, 6]), i32(n, [5])),
     [U, 5, 6]),
    ("segment_sum_unknown_data", lambda n: n.op("SegmentSum", n.input(UNKNOWN), i32(n, [5])), UNKNOWN),
    ("dynamic_stitch",
     lambda n: n.op("DynamicStitch", [n.const([0, 2]), n.const([1, 3])], [n.input([2, 5]), n.input([2, U])]),
     [4, 5]),
    ("dynamic_stitch_unknown_indices",
     lambda n: n.op("DynamicStitch", [n.const([0, 2]), i32(n, [2])], [n.input([2, 5]), n.input([2, U])]),
     [U, 5]),
    ("dynamic_stitch_unknown_rank",
     lambda n: n.op("DynamicStitch", [n.const([0, 2]), i32(n, UNKNOWN)], [n.input([2, 5]), n.input(UNKNOWN)]),
     [U, 5]),
    ("dynamic_stitch_scalar_indices",
     lambda n: n.op("DynamicStitch", [n.const(0), n.const(1)], [n.input([5]), n.input([5])]), [2, 5]),
    ("dynamic_stitch_negative_index", lambda n: n.op("DynamicStitch", [n.const([-1])], [n.input([1])]), [0]),
    # Matrices, permutations, Bitcast, EnsureShape.
    ("matrix_band_part",
     lambda n: n.op("MatrixBandPart", n.input([2, U]), n.const(1, I64), n.const(1, I64)), [2, U]),
    ("matrix_diag", lambda n: n.op("MatrixDiag", n.input([2, U])), [2, U, U]),
    ("matrix_diag_known", lambda n: n.op("MatrixDiag", n.input([2, 3])), [2, 3, 3]),
    ("matrix_diag_unknown_rank", lambda n: n.op("MatrixDiag", n.input(UNKNOWN)), UNKNOWN),
    ("matrix_diag_part", lambda n: n.op("MatrixDiagPart", n.input([2, 3, 4])), [2, 3]),
    ("matrix_diag_part_unknown_dim", lambda n: n.op("MatrixDiagPart", n.input([2, U, 4])), [2, U]),
    ("matrix_diag_part_zero_beats_unknown", lambda n: n.op("MatrixDiagPart", n.input([2, U, 0])), [2, 0]),
    ("invert_permutation", lambda n: n.op("InvertPermutation", i32(n, [U])), [U]),
    ("bitcast_same_size", lambda n: n.op("Bitcast", n.input([2, 3]), type=I32), [2, 3]),
    ("bitcast_to_wider", lambda n: n.op("Bitcast", n.input([2, 4], dtypes.int16), type=I64), [2]),
    ("bitcast_to_wider_unknown_dim", lambda n: n.op("Bitcast", n.input([2, U], dtypes.int16), type=I64), [2]),
    ("bitcast_to_narrower",
     lambda n: n.op("Bitcast", n.input([2, U], dtypes.float64), type=dtypes.uint8),
     [2, U, 8]),
    ("bitcast_unknown_rank",
     lambda n: n.op("Bitcast", n.input(UNKNOWN, dtypes.float64), type=dtypes.uint8),
     UNKNOWN),
    ("ensure_shape", lambda n: n.op("EnsureShape", n.input([U, 3]), shape=Shape([2, U])), [2, 3]),
    ("ensure_shape_unknown_input",
     lambda n: n.op("EnsureShape", n.input(UNKNOWN), shape=Shape([2, U])),
     [2, U]),
    # Shape, Size, Rank, StridedSliceGrad.
    ("shape", lambda n: n.op("Shape", n.input([U, 3])), [2]),
    ("shape_unknown_rank", lambda n: n.op("Shape", n.input(UNKNOWN)), [U]),
    ("size", lambda n: n.op("Size", n.input(UNKNOWN)), []),
    ("rank", lambda n: n.op("Rank", n.input(UNKNOWN)), []),
    ("strided_slice_grad", lambda n: strided_slice_grad(n, n.const([4, 5])), [4, 5]),
    ("strided_slice_grad_unknown_shape", lambda n: strided_slice_grad(n, i32(n, [3])), [U, U, U]),
    ("empty", lambda n: n.op("Empty", n.const([2, 3]), dtype=F32), [2, 3]),
    ("unravel_index", lambda n: n.op("UnravelIndex", i32(n, [U, 3]), n.const([4, 4])), [2, U]),
    ("unravel_index_scalar", lambda n: n.op("UnravelIndex", i32(n, []), n.const([4, 4])), [2]),
    ("reverse_sequence",
     lambda n: n.op("ReverseSequence", n.input([U, 4, 3]), n.input([2], I64), seq_dim=1, batch_dim=0),
     [2, 4, 3]),
    ("tensor_scatter_sub",
     lambda n: n.op("TensorScatterSub", n.input([8, U]), i32(n, [4, 1]), n.input([4, 6])), [8, U]),
    ("parallel_dynamic_stitch",
     lambda n: n.op("ParallelDynamicStitch", [n.const([0, 2]), n.const([1, 3])],
                    [n.input([2, 5]), n.input([2, U])]), [4, 5]),
    # Diagonal matrix ops (tf.linalg.diag / diag_part / set_diag write the V3 ops).
    ("diag", lambda n: n.op("Diag", n.input([2, U])), [2, U, 2, U]),
    ("diag_part", lambda n: n.op("DiagPart", n.input([2, U, U, 3])), [2, 3]),
    ("matrix_diag_v3", lambda n: matrix_diag(n, [2, 3], 0), [2, 3, 3]),
    ("matrix_diag_v3_unknown_length", lambda n: matrix_diag(n, [2, U], 0), [2, U, U]),
    ("matrix_diag_v3_off_diagonal", lambda n: matrix_diag(n, [2, 3], 1), [2, 4, 4]),
    ("matrix_diag_v3_band", lambda n: matrix_diag(n, [2, 3, 4], [-1, 1]), [2, 4, 4]),
    ("matrix_diag_v3_num_rows", lambda n: matrix_diag(n, [2, 3], 0, rows=5), [2, 5, 3]),
    ("matrix_diag_v3_num_cols", lambda n: matrix_diag(n, [2, 3], 1, cols=4), [2, 3, 4]),
    ("matrix_diag_v3_unknown_k", lambda n: matrix_diag(n, [2, 3], None), UNKNOWN),
    ("matrix_diag_v3_unknown_rank", lambda n: matrix_diag(n, UNKNOWN, 0), UNKNOWN),
    ("matrix_diag_v2", lambda n: matrix_diag(n, [2, 3], 0, op="MatrixDiagV2"), [2, 3, 3]),
    ("matrix_diag_part_v3", lambda n: matrix_diag_part(n, [2, 3, 4], 0), [2, 3]),
    ("matrix_diag_part_v3_above", lambda n: matrix_diag_part(n, [2, 3, 4], 1), [2, 3]),
    ("matrix_diag_part_v3_below", lambda n: matrix_diag_part(n, [2, 3, 4], -2), [2, 1]),
    ("matrix_diag_part_v3_band", lambda n: matrix_diag_part(n, [2, 3, 4], [-1, 2]), [2, 4, 3]),
    ("matrix_diag_part_v3_unknown_rows", lambda n: matrix_diag_part(n, [2, U, 4], [-1, 2]), [2, 4, U]),
    ("matrix_diag_part_v3_unknown_k", lambda n: matrix_diag_part(n, [2, 3, 4], None), UNKNOWN),
    ("matrix_set_diag", lambda n: n.op("MatrixSetDiag", n.input([U, 3, 4]), n.input([2, U])), [2, 3, 4]),
    ("matrix_set_diag_v3", lambda n: n.op("MatrixSetDiagV3", n.input([2, 3, 4]), n.input([2, 3]), n.const(0)),
     [2, 3, 4]),
    ("matrix_set_diag_v3_batch_from_diagonal",
     lambda n: n.op("MatrixSetDiagV3", n.input([U, U, U]), n.input([2, 3]), n.const(0)), [2, U, U]),
]


def strided_slice_grad(n: Net, shape: TensorRef):
    """The gradient of x[0:1] for an x of the given shape."""
    begin, end, strides = n.const([0]), n.const([1]), n.const([1])
    return n.op("StridedSliceGrad", shape, begin, end, strides, n.input([1, 5]))


def matrix_diag(n: Net, shape, k, rows=-1, cols=-1, op="MatrixDiagV3"):
    """MatrixDiagV2/V3 of a placeholder diagonal; k None is an unknown k."""
    offsets = i32(n, []) if k is None else n.const(k)
    return n.op(op, n.input(shape), offsets, n.const(rows), n.const(cols), n.const(0.0, F32))


def matrix_diag_part(n: Net, shape, k):
    offsets = i32(n, []) if k is None else n.const(k)
    return n.op("MatrixDiagPartV3", n.input(shape), offsets, n.const(0.0, F32))


@pytest.mark.parametrize("build, expected", [c[1:] for c in SINGLE_OUTPUT_CASES],
                         ids=[c[0] for c in SINGLE_OUTPUT_CASES])
def test_shape_matches_tensorflow(build, expected):
    net = Net()
    assert inferred(build(net))[0] == Shape(expected)


def strided_slice(shape, begin, end, strides, begin_value_known=True, **masks):
    def build(n: Net):
        known = n.const if begin_value_known else (lambda v: i32(n, [len(v)]))
        return n.op("StridedSlice", n.input(shape), known(begin), known(end), n.const(strides), **masks)
    return build


# StridedSlice: every mask, negative strides, clamping and unknown begin/end, as TensorFlow infers.
STRIDED_SLICE_CASES = [
    ("range_and_step", strided_slice([10, U, 8], [1, 0], [5, 3], [2, 1]), [2, U, 8]),
    ("negative_stride_with_end_mask", strided_slice([10, 8], [-1], [0], [-1], end_mask=1), [10, 8]),
    ("negative_strides", strided_slice([10, 8], [8, 6], [2, 0], [-2, -3]), [3, 2]),
    ("shrink_with_begin_end_masks",
     strided_slice([10, U, 8], [1, 0], [2, 0], [1, 1], shrink_axis_mask=1, begin_mask=2, end_mask=2), [U, 8]),
    ("shrink_an_unknown_dim",
     strided_slice([10, U, 8], [0, 1], [0, 2], [1, 1], shrink_axis_mask=2, begin_mask=1, end_mask=1),
     [10, 8]),
    ("ellipsis_first", strided_slice([2, 3, 4, 5], [0, 1], [0, 3], [1, 1], ellipsis_mask=1), [2, 3, 4, 2]),
    ("ellipsis_in_the_middle", strided_slice([2, 3, 4, 5], [1, 0, 1], [2, 0, 3], [1, 1, 1], ellipsis_mask=2),
     [1, 3, 4, 2]),
    ("new_axis",
     strided_slice([2, 3], [0, 0, 0], [0, 0, 0], [1, 1, 1], new_axis_mask=2, begin_mask=5, end_mask=5),
     [2, 1, 3]),
    ("new_axes_after_ellipsis",
     strided_slice([2, 3, 4], [0, 0, 0], [0, 0, 0], [1, 1, 1], ellipsis_mask=1, new_axis_mask=6),
     [2, 3, 4, 1, 1]),
    ("new_axis_wins_over_shrink",
     strided_slice([2, 3], [0, 0], [1, 1], [1, 1], new_axis_mask=1, shrink_axis_mask=1), [1, 1, 3]),
    ("unknown_begin_and_end",
     strided_slice([10, 8], [0, 0], [5, 3], [1, 1], begin_value_known=False),
     [U, U]),
    ("unknown_bounds_but_masked",
     strided_slice([10, 8], [0, 0], [0, 0], [1, -1], begin_value_known=False, begin_mask=2, end_mask=2),
     [U, 8]),
    ("unknown_bounds_with_shrink",
     strided_slice([10, 8], [0, 0], [0, 0], [1, 1], begin_value_known=False, shrink_axis_mask=1), [U]),
    ("unknown_rank", strided_slice(UNKNOWN, [0, 0], [1, 1], [1, 1]), UNKNOWN),
    ("clamped_bounds", strided_slice([10, 8], [-100, 2], [100, 100], [1, 3]), [10, 2]),
    ("clamped_bounds_negative_stride", strided_slice([10, 8], [100], [-100], [-3]), [4, 8]),
    ("empty_interval", strided_slice([10, 8], [5], [2], [1]), [0, 8]),
    ("begin_before_start_going_backwards", strided_slice([10], [-100], [0], [-1], end_mask=1), [0]),
]


@pytest.mark.parametrize("build, expected", [c[1:] for c in STRIDED_SLICE_CASES],
                         ids=[c[0] for c in STRIDED_SLICE_CASES])
def test_strided_slice_shape_matches_tensorflow(build, expected):
    assert inferred(build(Net()))[0] == Shape(expected)


def test_strided_slice_unknown_strides_or_length_give_unknown_rank():
    n = Net()
    unknown_strides = n.op("StridedSlice", n.input([10, 8]), n.const([0, 0]), n.const([1, 1]), i32(n, [2]))
    unknown_length = n.op("StridedSlice", n.input([3, 4]), i32(n, [U]), i32(n, [U]), i32(n, [U]))
    assert inferred(unknown_strides)[0] == Shape(UNKNOWN)
    assert inferred(unknown_length)[0] == Shape(UNKNOWN)


MULTI_OUTPUT_CASES = [
    ("split", lambda n: n.op("Split", n.const(1), n.input([2, 6]), num_split=3), [[2, 2]] * 3),
    ("split_negative_axis", lambda n: n.op("Split", n.const(-1), n.input([2, 6]), num_split=3), [[2, 2]] * 3),
    ("split_unknown_axis", lambda n: n.op("Split", i32(n, []), n.input([2, 6]), num_split=3), [[U, U]] * 3),
    ("split_unknown_rank",
     lambda n: n.op("Split", n.const(-1), n.input(UNKNOWN), num_split=3),
     [UNKNOWN] * 3),
    ("split_unknown_dim", lambda n: n.op("Split", n.const(1), n.input([2, U]), num_split=3), [[2, U]] * 3),
    ("split_v", lambda n: n.op("SplitV", n.input([2, 10]), n.const([3, -1, 2]), n.const(1), num_split=3),
     [[2, 3], [2, 5], [2, 2]]),
    ("split_v_unknown_dim",
     lambda n: n.op("SplitV", n.input([2, U]), n.const([3, -1, 2]), n.const(1), num_split=3),
     [[2, 3], [2, U], [2, 2]]),
    ("split_v_unknown_sizes",
     lambda n: n.op("SplitV", n.input([2, 10]), i32(n, [3]), n.const(1), num_split=3),
     [[2, U]] * 3),
    # TensorFlow splits the last axis when sizes are known but the axis is not.
    ("split_v_unknown_axis",
     lambda n: n.op("SplitV", n.input([2, 10]), n.const([3, -1, 2]), i32(n, []), num_split=3),
     [[2, 3], [2, 5], [2, 2]]),
    ("unpack", lambda n: n.op("Unpack", n.input([2, 3, 4]), num=3, axis=1), [[2, 4]] * 3),
    ("unpack_unknown_dim", lambda n: n.op("Unpack", n.input([2, U, 4]), num=3, axis=-2), [[2, 4]] * 3),
    ("unpack_unknown_rank", lambda n: n.op("Unpack", n.input(UNKNOWN), num=2), [UNKNOWN] * 2),
    ("top_k", lambda n: n.op("TopKV2", n.input([2, U]), n.const(3)), [[2, 3], [2, 3]]),
    ("top_k_unknown_k", lambda n: n.op("TopKV2", n.input([4, 5]), i32(n, [])), [[4, U], [4, U]]),
    ("top_k_unknown_rank", lambda n: n.op("TopKV2", n.input(UNKNOWN), n.const(3)), [UNKNOWN] * 2),
    ("unique", lambda n: n.op("Unique", n.input([5])), [[U], [5]]),
    ("unique_unknown_rank", lambda n: n.op("Unique", n.input(UNKNOWN)), [[U], UNKNOWN]),
    ("list_diff", lambda n: n.op("ListDiff", n.input([5]), n.input([3])), [[U], [U]]),
    ("shape_n", lambda n: n.op("ShapeN", [n.input([U, 3]), n.input(UNKNOWN)]), [[2], [U]]),
    ("broadcast_gradient_args",
     lambda n: n.op("BroadcastGradientArgs", i32(n, [3]), i32(n, [5])),
     [[U], [U]]),
    ("concat_offset", lambda n: n.op("ConcatOffset", n.const(1), [i32(n, [3]), i32(n, [2])]), [[3], [2]]),
    ("unique_v2", lambda n: n.op("UniqueV2", n.input([U, 4]), n.const([0], I64)), [[U, U], [U]]),
    ("unique_v2_unknown_rank",
     lambda n: n.op("UniqueV2", n.input(UNKNOWN), n.const([0], I64)),
     [UNKNOWN, [U]]),
    ("unique_with_counts", lambda n: n.op("UniqueWithCounts", n.input([5, 2])), [[U], [5, 2], [U]]),
    ("unique_with_counts_v2",
     lambda n: n.op("UniqueWithCountsV2", n.input([U, 4]), n.const([0], I64)), [[U, U], [U], [U]]),
]


@pytest.mark.parametrize("build, expected", [c[1:] for c in MULTI_OUTPUT_CASES],
                         ids=[c[0] for c in MULTI_OUTPUT_CASES])
def test_multi_output_shapes_match_tensorflow(build, expected):
    assert inferred(build(Net())) == [Shape(s) for s in expected]


# Inputs TensorFlow rejects; the error is recorded against the node, with a telling message.
ERROR_CASES = [
    ("reshape_element_count", lambda n: n.op("Reshape", n.input([2, 3]), n.const([4])),
     "cannot reshape a tensor with 6 elements to shape [4]"),
    ("reshape_not_divisible",
     lambda n: n.op("Reshape", n.input([2, 3]), n.const([-1, 4])),
     "evenly divisible by 4"),
    ("reshape_scalar_shape", lambda n: n.op("Reshape", n.input([2, 3]), n.const(-1)), "must have rank 1"),
    ("reshape_invalid_dim", lambda n: n.op("Reshape", n.input([2, 3]), n.const([-2, 3])), "invalid value -2"),
    ("transpose_perm_out_of_range", lambda n: n.op("Transpose", n.input([2, 3, 4]), n.const([3, 0, 1])),
     "perm dim 3 is out of range"),
    ("expand_dims_out_of_range", lambda n: n.op("ExpandDims", n.input([2, 3]), n.const(-4)), "out of range"),
    ("expand_dims_two_values",
     lambda n: n.op("ExpandDims", n.input([2, 3]), n.const([0, 1])),
     "single value"),
    ("squeeze_non_one",
     lambda n: n.op("Squeeze", n.input([1, 2, 3, 1]), squeeze_dims=[1]),
     "cannot squeeze dim 1"),
    ("concat_mismatch", lambda n: n.op("ConcatV2", [n.input([2, 4]), n.input([3, 3])], n.const(-1)),
     "does not fit the other inputs"),
    ("concat_scalars",
     lambda n: n.op("ConcatV2", [n.input([]), n.input([])], i32(n, [])),
     "cannot concatenate scalars"),
    ("split_not_divisible",
     lambda n: n.op("Split", n.const(1), n.input([2, 7]), num_split=3),
     "evenly divide"),
    ("split_axis_out_of_range",
     lambda n: n.op("Split", n.const(2), n.input([2, 6]), num_split=3),
     "must be in range"),
    ("split_v_sizes_do_not_add_up",
     lambda n: n.op("SplitV", n.input([2, 10]), n.const([3, 4, 2]), n.const(1), num_split=3),
     "cannot split an axis"),
    ("split_v_two_inferred_sizes",
     lambda n: n.op("SplitV", n.input([2, 10]), n.const([-1, -1, 2]), n.const(1), num_split=3),
     "only one -1"),
    ("split_v_scalar",
     lambda n: n.op("SplitV", n.input([]), n.const([1]), n.const(0), num_split=1),
     "split a scalar"),
    ("slice_sizes_below_minus_one",
     lambda n: n.op("Slice", n.input([5, 6]), n.const([1, 2]), n.const([2, -2])), "cannot be below -1"),
    ("slice_begin_past_end", lambda n: n.op("Slice", n.input([5, 6]), n.const([1, 8]), n.const([2, -1])),
     "subtracting 8 from 6"),
    ("strided_slice_shrink_out_of_bounds", strided_slice([10, 8], [10], [11], [1], shrink_axis_mask=1),
     "slice index 10 of dimension 0 out of bounds"),
    ("strided_slice_too_many_indices", strided_slice([10, 8], [0, 0, 0], [1, 1, 1], [1, 1, 1]),
     "index out of range using input dim 2"),
    ("strided_slice_zero_stride", strided_slice([10, 8], [0], [1], [0]), "strides[0] must be non-zero"),
    ("strided_slice_two_ellipses",
     strided_slice([10, 8], [0, 0], [1, 1], [1, 1], ellipsis_mask=3),
     "multiple ellipses"),
    ("strided_slice_shrink_negative_stride", strided_slice([10, 8], [5], [4], [-1], shrink_axis_mask=1),
     "only stride 1"),
    ("strided_slice_length_mismatch",
     lambda n: n.op("StridedSlice", n.input([10, 8]), n.const([5, 1]), n.const([4]), n.const([1])),
     "same length"),
    ("pack_axis_out_of_range",
     lambda n: n.op("Pack", [n.input([2, 3]), n.input([2, 3])], axis=3),
     "out of range"),
    ("unpack_count_mismatch", lambda n: n.op("Unpack", n.input([2, 4, 4]), num=3, axis=1), "must be equal"),
    ("tile_rank_mismatch", lambda n: n.op("Tile", n.input([2, 3]), n.const([2, 3, 4])), "rank"),
    ("pad_negative", lambda n: n.op("Pad", n.input([2, 3]), n.const([[1, -2], [3, 4]])), "non-negative"),
    ("pad_not_pairs",
     lambda n: n.op("Pad", n.input([2, 3]), n.const([[1, 2, 3], [3, 4, 5]])),
     "must be equal"),
    ("mirror_pad_grad_negative_size",
     lambda n: n.op("MirrorPadGrad", n.input([2, 5]), n.const([[1, 2], [3, 4]]), mode="REFLECT"),
     "subtracting 3 from 2"),
    ("gather_v2_axis_out_of_range",
     lambda n: n.op("GatherV2", n.input([5, 6, 7]), i32(n, [2, 3]), n.const(3)), "rank at least 4"),
    ("gather_v2_scalar_params",
     lambda n: n.op("GatherV2", n.input([]), i32(n, [2]), n.const(0)),
     "rank at least 1"),
    ("gather_v2_vector_axis",
     lambda n: n.op("GatherV2", n.input([5, 6]), i32(n, [2]), n.const([0])),
     "rank 0"),
    ("gather_nd_too_deep",
     lambda n: n.op("GatherNd", n.input([5, 6, 7]), i32(n, [4, 4])),
     "must be <= params.rank"),
    ("scatter_nd_inner_mismatch",
     lambda n: n.op("ScatterNd", i32(n, [4, 1]), n.input([4, 5]), n.const([8, 6])),
     "must match dims"),
    ("scatter_nd_outer_mismatch",
     lambda n: n.op("ScatterNd", i32(n, [4, 1]), n.input([3, 6]), n.const([8, 6])),
     "outer 1 dims"),
    ("scatter_nd_empty_output", lambda n: n.op("ScatterNd", i32(n, [4, 1]), n.input([4, 6]), n.const([0, 6])),
     "empty output"),
    ("tensor_scatter_scalar",
     lambda n: n.op("TensorScatterUpdate", n.input([]), i32(n, [4, 1]), n.input([4, 6])),
     "rank at least 1"),
    ("fill_negative", lambda n: n.op("Fill", n.const([2, -3]), n.const(1.0, F32)), "must be >= 0"),
    ("fill_vector_value", lambda n: n.op("Fill", n.const([2, 3]), n.const([1.0], F32)), "rank 0"),
    ("range_wrong_direction", lambda n: n.op("Range", n.const(10), n.const(1), n.const(3)), "start <= limit"),
    ("range_zero_delta", lambda n: n.op("Range", n.const(1), n.const(10), n.const(0)), "delta != 0"),
    ("range_vector_start", lambda n: n.op("Range", n.const([1]), n.const(10), n.const(3)), "rank 0"),
    ("lin_space_zero_num",
     lambda n: n.op("LinSpace", n.const(0.0, F32), n.const(1.0, F32), n.const(0)),
     "num > 0"),
    ("broadcast_to_mismatch",
     lambda n: n.op("BroadcastTo", n.input([2, 3]), n.const([4, 3, 5])),
     "must be equal"),
    ("broadcast_to_lower_rank",
     lambda n: n.op("BroadcastTo", n.input([2, 2, 3]), n.const([2, 3])),
     "lower rank"),
    ("reverse_v2_repeated_axis",
     lambda n: n.op("ReverseV2", n.input([2, U]), n.const([1, -1])),
     "more than once"),
    ("reverse_v2_axis_out_of_range",
     lambda n: n.op("ReverseV2", n.input([2, U]), n.const([2])),
     "out of range"),
    ("reverse_v2_nine_dims", lambda n: n.op("ReverseV2", n.input([1] * 9), n.const([2])), "more than 8"),
    ("reverse_v1_dims_length", lambda n: n.op("Reverse", n.input([2, U]), n.const([True] * 3, dtypes.bool_)),
     "rank 3"),
    ("one_hot_axis_below_minus_one",
     lambda n: n.op("OneHot", i32(n, [2, 3]), n.const(5), n.const(1.0, F32), n.const(0.0, F32), axis=-2),
     ">= -1"),
    ("one_hot_negative_depth",
     lambda n: n.op("OneHot", i32(n, [2, 3]), n.const(-1), n.const(1.0, F32), n.const(0.0, F32)),
     "non-negative"),
    ("one_hot_vector_depth",
     lambda n: n.op("OneHot", i32(n, [2]), n.const([3]), n.const(1.0, F32), n.const(0.0, F32)), "rank 0"),
    ("top_k_k_too_large", lambda n: n.op("TopKV2", n.input([2, 2]), n.const(3)), "last dimension >= k = 3"),
    ("top_k_scalar_input", lambda n: n.op("TopKV2", n.input([]), n.const(3)), "rank at least 1"),
    ("unsorted_segment_prefix_mismatch",
     lambda n: n.op("UnsortedSegmentSum", n.input([4, 5, 6]), i32(n, [5]), n.const(7)), "must be equal"),
    ("segment_sum_matrix_ids", lambda n: n.op("SegmentSum", n.input([4, 5, 6]), i32(n, [4, 5])), "rank 1"),
    ("dynamic_stitch_prefix_mismatch",
     lambda n: n.op("DynamicStitch", [n.const([0, 2]), n.const([1, 3])], [n.input([3, 5]), n.input([2, U])]),
     "must be equal"),
    ("matrix_diag_part_vector", lambda n: n.op("MatrixDiagPart", n.input([2])), "rank at least 2"),
    ("invert_permutation_matrix", lambda n: n.op("InvertPermutation", i32(n, [2, 3])), "rank 1"),
    ("unique_matrix", lambda n: n.op("Unique", n.input([5, 2])), "rank 1"),
    ("bitcast_last_dim_mismatch", lambda n: n.op("Bitcast", n.input([2, 3], dtypes.int16), type=I64),
     "does not match 4"),
    ("ensure_shape_mismatch",
     lambda n: n.op("EnsureShape", n.input([U, 3]), shape=Shape([2, 4])),
     "does not match"),
    ("ensure_shape_rank", lambda n: n.op("EnsureShape", n.input([U, 3]), shape=Shape([2])), "rank 1"),
    ("reverse_sequence_seq_dim",
     lambda n: n.op("ReverseSequence", n.input([U, 4, 3]), n.input([2], I64), seq_dim=3),
     "seq_dim must be < input rank"),
    ("diag_part_odd_rank", lambda n: n.op("DiagPart", n.input([2, 3, 4])), "even and non-zero rank"),
    ("diag_part_halves_differ", lambda n: n.op("DiagPart", n.input([2, 3, 4, 4])), "must be equal"),
    ("matrix_diag_v3_band_rows", lambda n: matrix_diag(n, [2, 2, 4], [-1, 1]), "implies 3"),
    ("matrix_diag_v3_inconsistent_size", lambda n: matrix_diag(n, [2, 3], 0, rows=5, cols=6), "do not fit"),
    ("matrix_diag_part_v3_offset_out_of_bounds",
     lambda n: matrix_diag_part(n, [2, 3, 4], 4),
     "out of bounds"),
    ("matrix_set_diag_length",
     lambda n: n.op("MatrixSetDiag", n.input([U, 3, 4]), n.input([2, 4])),
     "must be equal"),
    ("matrix_set_diag_v3_rank",
     lambda n: n.op("MatrixSetDiagV3", n.input([2, 3, 4]), n.input([2, 3, 3]), n.const(0)), "rank 2"),
]


@pytest.mark.parametrize("build, message", [c[1:] for c in ERROR_CASES], ids=[c[0] for c in ERROR_CASES])
def test_bad_inputs_record_an_error_naming_the_node(build, message):
    net = Net()
    node = build(net)
    result = infer_shapes(net.graph)
    assert node in result.errors, f"no error; inferred {result.shape(node.output(0))}"
    error = result.errors[node]
    assert f"node '{node.name}' ({node.op})" in error
    assert message in error
    assert all(result.shape(ref) == Shape(UNKNOWN) for ref in node.outputs)


# --- static values: shape vectors flow through chains --------------------------------------------

def test_shape_value_is_partial_for_partial_shapes():
    n = Net()
    assert value_of(n.op("Shape", n.input([U, 3, 4]))) == [None, 3, 4]
    assert value_of(n.op("Shape", n.input([2, 3]), out_type=I64)) == [2, 3]
    assert value_of(n.op("Shape", n.input(UNKNOWN))) is None
    assert value_of(n.op("ShapeN", [n.input([5]), n.input([U])])) == [5]
    assert value_of(n.op("Size", n.input([2, U, 0]))) == 0
    assert value_of(n.op("Size", n.input([2, U]))) is None
    assert value_of(n.op("Rank", n.input([U, U]))) == 2


def test_shape_strided_slice_pack_reshape_chain_gives_a_static_shape():
    n = Net()
    x = n.input([U, 3, 4])
    dims = n.shape_of(x)
    target = n.op("Pack", [n.element(dims, 1), n.element(dims, 2)])
    reshape = n.op("Reshape", n.input([U]), target.output(0))
    assert value_of(target) == [3, 4]
    assert inferred(reshape)[0] == Shape([3, 4])        # TensorFlow: [3, 4]


def test_chain_with_an_unknown_dim_gives_a_partial_shape():
    n = Net()
    x = n.input([U, 3, 4])
    target = n.op("Pack", [n.element(n.shape_of(x), 0), n.const(12)])
    assert value_of(target) == [None, 12]
    assert inferred(n.op("Reshape", x, target.output(0)))[0] == Shape([U, 12])   # TensorFlow: [?, 12]


@pytest.mark.parametrize("begin, end, strides, masks, expected", [
    ([1], [3], [1], {}, [3, 4]),                               # fully known slice of a partial vector
    ([0], [2], [1], {}, [None, 3]),
    ([0], [0], [-1], {"begin_mask": 1, "end_mask": 1}, [4, 3, None]),
    ([-1], [0], [1], {"shrink_axis_mask": 1}, 4),
    ([0], [0], [1], {"shrink_axis_mask": 1}, None),
    ([0], [0], [1], {"new_axis_mask": 1}, [[None, 3, 4]]),
])
def test_strided_slice_of_a_partial_shape_vector_is_the_partial_slice(begin, end, strides, masks, expected):
    n = Net()
    dims = n.shape_of(n.input([U, 3, 4]))
    sliced = n.op("StridedSlice", dims, n.const(begin), n.const(end), n.const(strides), **masks)
    assert value_of(sliced) == expected


def test_fill_from_concatenated_partial_shapes():
    n = Net()
    x = n.input([U, 3, 4])
    head = n.op("StridedSlice", n.shape_of(x), n.const([0]), n.const([2]), n.const([1])).output(0)
    dims = n.op("ConcatV2", [head, n.const([7])], n.const(0))
    assert value_of(dims) == [None, 3, 7]
    assert inferred(n.op("Fill", dims.output(0), n.const(1.0, F32)))[0] == Shape([U, 3, 7])  # TensorFlow too


def test_reduction_gradient_shape_via_dynamic_stitch():
    """TensorFlow's Sum gradient: DynamicStitch([range(rank), axes], [shape(x), ones]) -> [?, 1, 4]."""
    n = Net()
    x, axes = n.input([U, 3, 4]), n.const([1])
    positions = n.op("Range", n.const(0), n.op("Rank", x).output(0), n.const(1)).output(0)
    ones = n.op("Fill", n.op("Shape", axes).output(0), n.const(1)).output(0)
    stitched = n.op("DynamicStitch", [positions, axes], [n.shape_of(x), ones])
    assert value_of(stitched) == [None, 1, 4]
    # TensorFlow's partial shape evaluation stops at DynamicStitch: it infers [?, ?, ?] here.
    assert inferred(n.op("Reshape", n.input(UNKNOWN), stitched.output(0)))[0] == Shape([U, 1, 4])


def test_values_of_rearranging_ops():
    n = Net()
    dims = n.shape_of(n.input([U, 3, 4]))
    assert value_of(n.op("GatherV2", dims, n.const([2, 0]), n.const(0))) == [4, None]  # TensorFlow: [?, ?]
    assert value_of(n.op("Gather", dims, n.const([1]))) == [3]
    assert value_of(n.op("ReverseV2", dims, n.const([0]))) == [4, 3, None]
    assert value_of(n.op("Tile", dims, n.const([2]))) == [None, 3, 4, None, 3, 4]
    assert value_of(n.op("ExpandDims", dims, n.const(0))) == [[None, 3, 4]]
    assert value_of(n.op("Reshape", dims, n.const([3, 1]))) == [[None], [3], [4]]
    assert value_of(n.op("Slice", dims, n.const([1]), n.const([-1]))) == [3, 4]
    assert value_of(n.op("EnsureShape", dims, shape=Shape([3]))) == [None, 3, 4]
    assert value_of(n.op("Unpack", dims, num=3)) is None  # output 0 is the unknown entry
    matrix = n.const([[1, 2], [3, 4]])
    assert value_of(n.op("Transpose", matrix, n.const([1, 0]))) == [[1, 3], [2, 4]]
    assert value_of(n.op("Squeeze", n.const([[5, 6]]))) == [5, 6]
    assert value_of(n.op("Split", n.const(0), n.const([1, 2, 3, 4]), num_split=2)) == [1, 2]
    assert value_of(n.op("Unpack", matrix, num=2, axis=1)) == [1, 3]
    assert value_of(n.op("BroadcastTo", n.const([7]), n.const([2, 2]))) == [[7, 7], [7, 7]]
    assert value_of(n.op("InvertPermutation", n.const([2, 0, 1]))) == [1, 2, 0]
    assert value_of(n.op("Reverse", matrix, n.const([True, False], dtypes.bool_))) == [[3, 4], [1, 2]]


def test_values_of_generating_ops():
    n = Net()
    assert value_of(n.op("Range", n.const(1), n.const(10), n.const(3))) == [1, 4, 7]
    assert value_of(n.op("Range", n.const(5, I64), n.const(0, I64), n.const(-2, I64))) == [5, 3, 1]
    floats = value_of(n.op("Range", n.const(0.0, F32), n.const(1.0, F32), n.const(0.25, F32)))
    assert floats == [0.0, 0.25, 0.5, 0.75]
    assert value_of(n.op("Fill", n.const([2]), n.const(9))) == [9, 9]
    assert value_of(n.op("ZerosLike", n.input([2], I32))) == [0, 0]
    assert value_of(n.op("OnesLike", n.input([1, 2]))) == [[1.0, 1.0]]
    assert value_of(n.op("ZerosLike", n.input([U]))) is None
    assert value_of(n.op("ConcatOffset", n.const(1), [n.const([2, 3]), n.const([2, 5])])) == [0, 0]


def test_values_are_typed_like_the_output():
    n = Net()
    result = infer_shapes(n.op("Shape", n.input([2, 3]), out_type=I64).graph)
    values = [info.value for info in result.info.values() if info.value is not None]
    assert values and values[0].dtype == np.int64


def test_broadcast_args_value_broadcasts_partial_shapes():
    n = Net()
    partial = n.op("BroadcastArgs", n.shape_of(n.input([U, 1, 3])), n.const([4, 1]))
    assert value_of(partial) == [None, 4, 3]                  # TensorFlow: [?, ?, ?]
    assert value_of(n.op("BroadcastArgs", n.const([2, 1]), n.const([3]))) == [2, 3]


@pytest.mark.parametrize("s0, s1, r0", [
    ([2, 3], [3], []),
    ([3], [2, 3], [0]),
    ([1], [1], []),             # identical shapes: nothing to reduce
    ([2, 1, 3], [4, 1], [1]),
    ([5, 1], [1, 1], [1]),      # an axis where both are 1 is reduced (unless the shapes are equal)
    ([], [2, 3], [0, 1]),
    ([2, 3], [4], None),        # incompatible: the kernel reports it when it runs
])
def test_broadcast_gradient_args_value_matches_tensorflow(s0, s1, r0):
    n = Net()
    assert value_of(n.op("BroadcastGradientArgs", n.const(s0), n.const(s1))) == r0


ARRAY_OPS = """
Shape ShapeN Size Rank Reshape Transpose ExpandDims Squeeze ConcatV2 Concat ConcatOffset Split SplitV
Slice StridedSlice StridedSliceGrad Pack Unpack Tile Pad PadV2 MirrorPad MirrorPadGrad GatherV2 Gather
GatherNd ScatterNd TensorScatterUpdate TensorScatterAdd Fill Range LinSpace ZerosLike OnesLike
BroadcastTo BroadcastArgs BroadcastGradientArgs ReverseV2 Reverse OneHot TopKV2 Where MatrixBandPart MatrixDiag
MatrixDiagPart InvertPermutation Unique ListDiff DynamicStitch DynamicPartition Bitcast EnsureShape
Empty UnravelIndex ReverseSequence TensorScatterSub TensorScatterMin TensorScatterMax ParallelDynamicStitch
UniqueV2 UniqueWithCounts UniqueWithCountsV2 Diag DiagPart MatrixSetDiag MatrixDiagV2 MatrixDiagV3
MatrixDiagPartV2 MatrixDiagPartV3 MatrixSetDiagV2 MatrixSetDiagV3
""".split()


@pytest.mark.parametrize("op", ARRAY_OPS)
def test_array_op_is_registered_in_the_array_family(op):
    spec = registry.get(op)
    assert spec.family == "array" and spec.shape_fn is not None


def test_pad_uses_partly_known_paddings():
    """Slice's gradient pads with [begin, shape(x) - shape(y) - begin] built from partial shape
    vectors; TensorFlow's Python pad() refines the result with the known entries, and so do we."""
    n = Net()
    x = n.input([U, 3, 2])
    sliced = n.op("Slice", x, n.const([0, 0, 0]), n.const([-1, 1, -1]))
    before = n.const([[0], [0], [0]])
    after = n.op("Reshape", n.op("Sub", n.op("Sub", n.shape_of(x), n.shape_of(sliced.output(0))).output(0),
                                 n.const([0, 0, 0])).output(0), n.const([3, 1]))
    paddings = n.op("ConcatV2", [before, after.output(0)], n.const(1))
    assert value_of(paddings) == [[0, None], [0, 2], [0, 0]]
    assert inferred(n.op("Pad", n.input([U, 1, 2]), paddings.output(0)))[0] == Shape([U, 3, 2])


def test_list_diff_value_folds_constants():
    """The Prod gradient's permutation: ListDiff(range(rank), reduced axes)."""
    n = Net()
    diff = n.op("ListDiff", n.const([0, 1, 2]), n.const([2]))
    assert value_of(diff) == [0, 1]
    assert per_output_values(diff) == [[0, 1], [0, 1]]


@pytest.mark.parametrize("build, expected", [
    (lambda n: n.op("ShapeN", [n.input([U, 3]), n.input([4])]), [[None, 3], [4]]),
    (lambda n: n.op("Unpack", n.const([[1, 2], [3, 4]]), num=2, axis=1), [[1, 3], [2, 4]]),
    (lambda n: n.op("Split", n.const(0), n.const([1, 2, 3, 4]), num_split=2), [[1, 2], [3, 4]]),
    (lambda n: n.op("SplitV", n.const([1, 2, 3, 4, 5]), n.const([1, -1, 2], I64), n.const(0), num_split=3),
     [[1], [2, 3], [4, 5]]),
    (lambda n: n.op("ConcatOffset", n.const(1), [n.const([2, 3]), n.const([2, 5]), n.const([2, 1])]),
     [[0, 0], [0, 3], [0, 8]]),
    (lambda n: n.op("ConcatOffset", n.const(-1), [n.vector([2, U]), n.const([2, 5]), n.const([2, 1])]),
     [[0, 0], [0, None], [0, None]]),
    (lambda n: n.op("BroadcastGradientArgs", n.const([2, 1, 3]), n.const([4, 1])), [[1], [0, 2]]),
], ids=["shape_n", "unpack", "split", "split_v", "concat_offset", "concat_offset_partial",
        "broadcast_gradient_args"])
def test_multi_output_ops_know_every_output_value(build, expected):
    """Values per output, ready for shape inference to store them all: TensorFlow's concat
    gradient slices with ConcatOffset and ShapeN outputs beyond the first."""
    node = build(Net())
    assert per_output_values(node) == expected
    assert value_of(node) == expected[0]


def test_matrix_diag_leaves_sizes_unknown_where_tensorflow_guesses():
    """With an unknown diagonal length TensorFlow computes the matrix size from -1 and infers a
    0x0 matrix for k != 0 (TensorFlow: [2, 0, 0]); the size is simply unknown."""
    assert inferred(matrix_diag(Net(), [2, U], 1))[0] == Shape([2, U, U])

