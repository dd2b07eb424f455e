"""Segment, set and sparse cases (family `segment`): sorted, unsorted and sparse segment
reductions in every dtype TensorFlow registers on the CPU, Bincount/DenseBincount,
DynamicPartition/DynamicStitch, Unique*, ListDiff, InTopKV2, SparseFillEmptyRows/SparseReshape,
their gradients, and embedding lookups on partitioned tables (family `model`)."""
import numpy as np

from .builder import snake
from .registry import case
from .tf_v1 import tf

# Every dtype TensorFlow 2.21 registers CPU kernels for, per op kind (probed with tf.raw_ops).
REAL = ["float32", "float64", "float16", "bfloat16", "int32", "int64", "int8", "uint8", "int16",
        "uint16", "uint32", "uint64"]
NUMBER = REAL + ["complex64", "complex128"]
FLOAT = ["float32", "float64", "float16", "bfloat16"]
SHORT = {"float32": "f32", "float64": "f64", "float16": "f16", "bfloat16": "bf16", "int32": "i32",
         "int64": "i64", "int8": "i8", "uint8": "u8", "int16": "i16", "uint16": "u16",
         "uint32": "u32", "uint64": "u64", "complex64": "c64", "complex128": "c128"}


def _typed_input(b, name, values, dtype):
    """A placeholder holding `values` as `dtype` (bfloat16: fed as float32 and cast in the graph,
    numpy having no bfloat16); complex values get an imaginary part."""
    values = np.asarray(values)
    if dtype == "bfloat16":
        return tf.cast(b.placeholder(name, values.astype(np.float32)), tf.bfloat16)
    if dtype.startswith("complex"):
        values = values + 0.5j * values[::-1]
    return b.placeholder(name, values.astype(dtype))


def _typed_op(b, op_type, name, **args):
    """tf.raw_ops.<op_type> named `name`, every output fetched (bfloat16 ones through a Cast)."""
    getattr(tf.raw_ops, op_type)(name=name, **args)
    op = tf.get_default_graph().get_operation_by_name(name)
    for output in op.outputs:
        if output.dtype == tf.bfloat16:
            b.fetch(tf.cast(output, tf.float32), f"{name}_as_f32")
        else:
            b.fetch(output)


# Values in every dtype's range; positive so unsigned types hold them.
DATA = np.array([[3, 1], [2, 5], [7, 4], [1, 6], [4, 2]])


@case("op_segment_sorted", "segment",
      "Segment{Sum, Mean, Max, Min, Prod} in every CPU dtype: sorted ids with an empty segment "
      "(0 for sum/mean/max/min, 1 for prod), integer means (truncating), int64 ids, rank-3 "
      "data, an empty input.", rtol=2e-2, atol=1e-2,
      notes="float16/bfloat16 results round to their precision; the tolerances cover them.")
def op_segment_sorted(b):
    ids = np.array([0, 0, 2, 2, 3], np.int32)
    for op_type, dtypes in (("SegmentSum", NUMBER), ("SegmentMean", NUMBER), ("SegmentProd", NUMBER),
                            ("SegmentMax", REAL), ("SegmentMin", REAL)):
        for dtype in dtypes:
            short = SHORT[dtype]
            data = _typed_input(b, f"{snake(op_type)}_data_{short}", DATA, dtype)
            _typed_op(b, op_type, f"{snake(op_type)}_{short}", data=data, segment_ids=ids)
    cube = b.placeholder("cube", b.normal(4, 2, 3))
    for op_type in ("SegmentSum", "SegmentMean", "SegmentMax", "SegmentMin", "SegmentProd"):
        b.raw(op_type, f"{snake(op_type)}_rank3_int64_ids", data=cube,
              segment_ids=np.array([1, 1, 1, 4], np.int64))
        b.raw(op_type, f"{snake(op_type)}_empty", data=np.zeros([0, 3], np.float32),
              segment_ids=np.zeros([0], np.int32))


@case("op_segment_unsorted", "segment",
      "UnsortedSegment{Sum, Max, Min, Prod} in every CPU dtype: unsorted ids, a negative id "
      "(dropped), empty segments (the reduction's identity: lowest/highest value for max/min), "
      "matrix ids, int64 ids and num_segments.", rtol=2e-2, atol=1e-2,
      notes="float16/bfloat16 results round to their precision; the tolerances cover them.")
def op_segment_unsorted(b):
    ids = np.array([3, 0, -1, 3, 0], np.int32)
    for op_type, dtypes in (("UnsortedSegmentSum", NUMBER), ("UnsortedSegmentProd", NUMBER),
                            ("UnsortedSegmentMax", REAL), ("UnsortedSegmentMin", REAL)):
        for dtype in dtypes:
            short = SHORT[dtype]
            data = _typed_input(b, f"{snake(op_type)}_data_{short}", DATA, dtype)
            _typed_op(b, op_type, f"{snake(op_type)}_{short}", data=data, segment_ids=ids,
                      num_segments=5)
    grid = b.placeholder("grid", b.normal(2, 3, 2))
    for op_type in ("UnsortedSegmentSum", "UnsortedSegmentMax", "UnsortedSegmentMin", "UnsortedSegmentProd"):
        b.raw(op_type, f"{snake(op_type)}_matrix_ids", data=grid,
              segment_ids=np.array([[1, -1, 0], [1, 1, 3]], np.int64), num_segments=np.int64(4))


@case("op_segment_sparse", "segment",
      "SparseSegment{Sum, Mean, SqrtN} and *WithNumSegments in every CPU dtype: repeated "
      "indices, empty segments (0), int64 indices/ids, trailing segments from num_segments; "
      "SparseSegment{Sum, Mean, SqrtN}Grad and GradV2.", rtol=2e-2, atol=1e-2,
      notes="float16/bfloat16 results round to their precision; the tolerances cover them.")
def op_segment_sparse(b):
    indices = np.array([4, 0, 4, 2, 1], np.int32)
    ids = np.array([0, 0, 1, 3, 3], np.int32)
    for reduction, dtypes in (("Sum", REAL), ("Mean", FLOAT), ("SqrtN", FLOAT)):
        op_type = f"SparseSegment{reduction}"
        for dtype in dtypes:
            short = SHORT[dtype]
            data = _typed_input(b, f"{snake(op_type)}_data_{short}", DATA, dtype)
            _typed_op(b, op_type, f"{snake(op_type)}_{short}", data=data, indices=indices,
                      segment_ids=ids)
            _typed_op(b, f"{op_type}WithNumSegments", f"{snake(op_type)}_num_segments_{short}",
                      data=data, indices=indices, segment_ids=ids, num_segments=6)
        table = b.placeholder(f"{snake(op_type)}_table", b.normal(6, 3))
        b.raw(op_type, f"{snake(op_type)}_int64", data=table, indices=np.array([5, 5, 0], np.int64),
              segment_ids=np.array([1, 1, 2], np.int64))
        grad = b.placeholder(f"{snake(op_type)}_grad_in", b.normal(4, 3))
        b.raw(f"{op_type}Grad", f"{snake(op_type)}_grad", grad=grad, indices=indices,
              segment_ids=ids, output_dim0=6)
        b.raw(f"{op_type}Grad", f"{snake(op_type)}_grad_f64", grad=tf.cast(grad, tf.float64),
              indices=indices.astype(np.int64), segment_ids=ids, output_dim0=5)
        b.raw(f"{op_type}GradV2", f"{snake(op_type)}_grad_v2", grad=grad, indices=indices,
              segment_ids=ids.astype(np.int64), dense_output_dim0=6)


@case("op_segment_bincount", "segment",
      "Bincount (counts, weights in every CPU dtype, values >= size ignored, size 0), "
      "DenseBincount (vector and matrix input, int64 input, weights, binary_output).")
def op_segment_bincount(b):
    arr = b.placeholder("arr", np.array([1, 5, 2, 2, 0, 3, 2], np.int32))
    b.raw("Bincount", "bincount_counts", arr=arr, size=4, weights=np.zeros([0], np.int32))
    b.raw("Bincount", "bincount_size0", arr=arr, size=0, weights=np.zeros([0], np.float32))
    for dtype in ("float32", "float64", "int32", "int64"):
        weights = b.placeholder(f"weights_{SHORT[dtype]}", np.arange(1, 8).astype(dtype))
        b.raw("Bincount", f"bincount_weights_{SHORT[dtype]}", arr=arr, size=6, weights=weights)
    matrix = b.placeholder("matrix", np.array([[1, 3, 3], [0, 0, 7]], np.int64))
    b.raw("DenseBincount", "dense_bincount", input=arr, size=5, weights=np.zeros([0], np.float32))
    b.raw("DenseBincount", "dense_bincount_matrix_weights", input=matrix, size=np.int64(5),
          weights=b.placeholder("matrix_weights", b.normal(2, 3)))
    b.raw("DenseBincount", "dense_bincount_binary", input=matrix, size=np.int64(4),
          weights=np.zeros([0], np.int64), binary_output=True)
    b.raw("DenseBincount", "dense_bincount_binary_vector", input=arr, size=3,
          weights=np.zeros([0], np.float64), binary_output=True)


@case("op_segment_partition_sets", "segment",
      "DynamicPartition (float, int, bool, string; matrix partitions, an empty partition), "
      "DynamicStitch/ParallelDynamicStitch (repeated indices), Unique/UniqueWithCounts (int64 "
      "out_idx), UniqueV2 (axis), ListDiff, InTopKV2 (ties, k = 0).")
def op_segment_partition_sets(b):
    partitions = b.placeholder("partitions", np.array([2, 0, 2, 3, 0], np.int32))
    b.raw("DynamicPartition", "dynamic_partition", data=b.placeholder("rows", b.normal(5, 2)),
          partitions=partitions, num_partitions=4)
    b.raw("DynamicPartition", "dynamic_partition_int", data=np.arange(5, dtype=np.int64),
          partitions=partitions, num_partitions=4)
    b.raw("DynamicPartition", "dynamic_partition_bool", data=np.array([True, False, True, True, False]),
          partitions=partitions, num_partitions=4)
    b.raw("DynamicPartition", "dynamic_partition_string",
          data=b.placeholder("words", np.array([b"a", b"bb", b"", b"ccc", b"d"])), partitions=partitions,
          num_partitions=4)
    b.raw("DynamicPartition", "dynamic_partition_matrix", data=b.placeholder("grid", b.normal(2, 3, 2)),
          partitions=np.array([[1, 0, 1], [1, 1, 0]], np.int32), num_partitions=2)
    values = b.placeholder("values", b.normal(3, 2))
    b.raw("DynamicStitch", "dynamic_stitch", indices=[[0, 4], [[2], [4]]],
          data=[values[:2], tf.reshape(values[1:], [2, 1, 2])])
    b.raw("ParallelDynamicStitch", "parallel_dynamic_stitch", indices=[[1, 0], [3]],
          data=[values[:2], values[2:]])
    x = b.placeholder("x", np.array([4, 1, 4, 7, 1, 4], np.int32))
    b.raw("Unique", "unique", x=x)
    b.raw("Unique", "unique_int64_idx", x=tf.cast(x, tf.float32), out_idx=tf.int64)
    b.raw("UniqueWithCounts", "unique_with_counts", x=x)
    b.raw("UniqueV2", "unique_v2_axis1", x=np.array([[1, 0, 1], [2, 3, 2]], np.int64),
          axis=np.array([1], np.int64))
    b.raw("UniqueWithCountsV2", "unique_with_counts_v2", x=x, axis=np.zeros([0], np.int32))
    b.raw("ListDiff", "list_diff", x=x, y=np.array([1, 9], np.int32))
    logits = b.placeholder("logits", np.array([[0.1, 0.7, 0.7, 0.2], [0.5, 0.1, 0.2, 0.3]], np.float32))
    targets = np.array([2, 0], np.int32)
    b.raw("InTopKV2", "in_top_k_v2_ties", predictions=logits, targets=targets, k=1)
    b.raw("InTopKV2", "in_top_k_v2_k0", predictions=logits, targets=targets.astype(np.int64), k=np.int64(0))


@case("op_segment_sparse_tensors", "segment",
      "SparseFillEmptyRows (unordered rows, empty rows, no entries), SparseFillEmptyRowsGrad, "
      "SparseReshape (-1, rank change, no entries).")
def op_segment_sparse_tensors(b):
    indices = b.placeholder("indices", np.array([[3, 0], [1, 2], [1, 0], [4, 1]], np.int64))
    values = b.placeholder("values", np.array([1.5, -2, 3, 4], np.float32))
    shape = np.array([6, 3], np.int64)
    b.raw("SparseFillEmptyRows", "fill_empty_rows", indices=indices, values=values, dense_shape=shape,
          default_value=np.float32(-1))
    b.raw("SparseFillEmptyRows", "fill_empty_rows_none", indices=np.zeros([0, 2], np.int64),
          values=np.zeros([0], np.int64), dense_shape=np.array([2, 5], np.int64), default_value=np.int64(7))
    b.raw("SparseFillEmptyRowsGrad", "fill_empty_rows_grad", reverse_index_map=np.array([4, 1, 2, 5], np.int64),
          grad_values=b.placeholder("grad_values", b.normal(7)))
    b.raw("SparseReshape", "sparse_reshape", input_indices=indices, input_shape=shape,
          new_shape=np.array([-1, 2], np.int64))
    b.raw("SparseReshape", "sparse_reshape_rank3", input_indices=indices, input_shape=shape,
          new_shape=np.array([3, 2, 3], np.int64))
    b.raw("SparseReshape", "sparse_reshape_empty", input_indices=np.zeros([0, 2], np.int64),
          input_shape=np.array([4, 6], np.int64), new_shape=np.array([-1], np.int64))


@case("grad_segment_reductions", "segment",
      "tf.gradients through SegmentMean/Max/Prod, UnsortedSegmentSum/Max/Prod (negative id), "
      "SparseSegmentSum/Mean/SqrtN (with num_segments), DynamicPartition + DynamicStitch, with "
      "empty segments.", rtol=1e-4, atol=1e-5)
def grad_segment_reductions(b):
    x = b.placeholder("x", b.uniform(0.5, 1.5, 5, 3))
    sorted_ids = np.array([0, 0, 2, 2, 2], np.int32)
    unsorted_ids = np.array([2, 0, -1, 2, 0], np.int32)
    indices = np.array([4, 0, 4, 1], np.int32)
    sparse_ids = np.array([0, 0, 2, 2], np.int32)
    terms = [tf.math.segment_mean(x, sorted_ids), tf.math.segment_max(x, sorted_ids) * 2.0,
             tf.math.segment_prod(x, sorted_ids), tf.math.unsorted_segment_sum(x * x, unsorted_ids, 4),
             tf.math.unsorted_segment_max(x, unsorted_ids, 3), tf.math.unsorted_segment_prod(x, unsorted_ids, 3),
             tf.sparse.segment_sum(x, indices, sparse_ids), tf.sparse.segment_mean(x, indices, sparse_ids) * 3.0,
             tf.sparse.segment_sqrt_n(x, indices, sparse_ids, num_segments=5)]
    parts = tf.dynamic_partition(x, np.array([1, 0, 1, 2, 0], np.int32), 3)
    stitched = tf.dynamic_stitch([[1, 3], [0, 2]], [parts[0] * 2.0, parts[1]])
    loss = tf.add_n([tf.reduce_sum(tf.sin(term)) for term in terms] + [tf.reduce_sum(stitched * stitched)],
                    name="loss")
    b.differentiate(loss, [x])


def _sparse_input(b, name, indices, values, dense_shape):
    """A SparseTensor from three fed placeholders (<name>_indices, _values, _shape)."""
    return tf.SparseTensor(b.placeholder(f"{name}_indices", indices, shape=[None, 2]),
                           b.placeholder(f"{name}_values", values, shape=[None]),
                           b.placeholder(f"{name}_shape", dense_shape))


def _embedding_model(b, strategy):
    """An embedding table of 10 rows in three shards (4, 3, 3 rows: the sizes TF1's partitioned
    variables give with either strategy), looked up densely and through the sparse combiners."""
    shards = [b.variable(f"emb_{i}", b.normal(rows, 4)) for i, rows in enumerate((4, 3, 3))]
    ids = b.placeholder("ids", np.array([7, 0, 3, 3, 9, 1], np.int64), shape=[None])
    dense = tf.nn.embedding_lookup(shards, ids, partition_strategy=strategy, name="dense")
    # Row 1 of the batch is empty; ids repeat; -1 is invalid (safe_embedding_lookup_sparse drops it).
    sp_indices = np.array([[0, 0], [0, 1], [2, 0], [3, 0], [3, 1], [3, 2]], np.int64)
    sp_ids = _sparse_input(b, "sp_ids", sp_indices, np.array([2, 8, 5, 9, 2, 4], np.int64),
                           np.array([4, 3], np.int64))
    sp_weights = tf.SparseTensor(sp_ids.indices, b.placeholder("sp_weights", b.uniform(0.5, 2.0, 6), shape=[None]),
                                 sp_ids.dense_shape)
    mean = tf.nn.embedding_lookup_sparse(shards, sp_ids, None, partition_strategy=strategy, combiner="mean")
    weighted = tf.nn.embedding_lookup_sparse(shards, sp_ids, sp_weights, partition_strategy=strategy,
                                             combiner="sum")
    safe = tf.nn.safe_embedding_lookup_sparse(shards, sp_ids, sp_weights, partition_strategy=strategy,
                                              combiner="sqrtn", default_id=None)
    for tensor, name in ((dense, "dense_out"), (mean, "mean_out"), (weighted, "weighted_out"),
                         (safe, "safe_out")):
        b.fetch(tensor, name)
    loss = tf.add_n([tf.reduce_sum(tf.sin(dense)), tf.reduce_sum(mean * mean),
                     tf.reduce_sum(tf.tanh(weighted)), tf.reduce_sum(safe * 3.0)], name="loss")
    b.differentiate(loss, [shard.op.outputs[0] for shard in shards] + [sp_weights.values])
    b.variant("more_ids", ids=np.array([9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 5], np.int64),
              sp_ids_values=np.array([0, 1, 6, 7, 9, 9], np.int64))


@case("embedding_partitioned_mod", "model",
      "An embedding table in three shards (TF1 partitioned variables, partition_strategy='mod'): "
      "embedding_lookup (DynamicPartition + Gather + ParallelDynamicStitch), "
      "embedding_lookup_sparse with the mean and weighted sum combiners (Unique, "
      "SparseSegmentMean/Sum), safe_embedding_lookup_sparse with sqrtn (SparseFillEmptyRows, "
      "SparseReshape, an empty batch row); tf.gradients w.r.t. every shard and the sparse weights.",
      rtol=1e-4, atol=1e-5)
def embedding_partitioned_mod(b):
    _embedding_model(b, "mod")


@case("embedding_partitioned_div", "model",
      "embedding_partitioned_mod with partition_strategy='div' (contiguous id ranges per shard).",
      rtol=1e-4, atol=1e-5)
def embedding_partitioned_div(b):
    _embedding_model(b, "div")
