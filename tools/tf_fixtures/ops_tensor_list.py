"""TensorList cases (family `tensor_list`): the variant-valued list ops of TF2 control flow and
Keras RNNs, as raw ops in v1 graphs, inside a v1 tf.while_loop (what a frozen, lowered Keras
LSTM holds), and differentiated (TensorFlow's list_ops.py gradients, through the loop too).

Lists cannot be fetched (variants are not numpy values), so every list is read back through
TensorListStack, GetItem, Gather, Concat, Length or ElementShape."""
import numpy as np

from .registry import case
from .tf_v1 import tf

FAMILY = "tensor_list"
R = tf.raw_ops
F32 = tf.float32


def _shape(*dims):
    """An int32 element_shape input (-1 dims unknown); no dims: a scalar element."""
    return tf.constant(np.asarray(dims, np.int32).reshape(len(dims)))


UNKNOWN = -1  # the scalar element_shape of unknown rank


@case("op_tensor_list_basic", FAMILY,
      "FromTensor/GetItem/SetItem/Stack/Length/ElementShape (int32 and int64, known and unknown "
      "rank), PushBack/PopBack on an EmptyTensorList, Reserve with unset elements read as zeros, "
      "SetItem with resize_if_index_out_of_bounds, Resize (grow and shrink), ConcatLists, AddN "
      "and ZerosLike of lists. Extra run 'other' feeds other values.")
def op_tensor_list_basic(b):
    x = b.placeholder("x", b.normal(4, 3))
    item = b.placeholder("item", b.normal(3))
    index = b.placeholder("index", np.int32(2), shape=[])
    items = R.TensorListFromTensor(tensor=x, element_shape=_shape(3), name="from_tensor")
    b.raw("TensorListGetItem", "get_item", input_handle=items, index=index, element_shape=UNKNOWN,
          element_dtype=F32)
    b.raw("TensorListLength", "length", input_handle=items)
    b.raw("TensorListElementShape", "element_shape", input_handle=items, shape_type=tf.int32)
    unknown = R.TensorListFromTensor(tensor=x, element_shape=UNKNOWN, name="from_tensor_unknown")
    b.raw("TensorListElementShape", "element_shape_unknown_rank", input_handle=unknown,
          shape_type=tf.int64)
    changed = R.TensorListSetItem(input_handle=items, index=index, item=item * 2.0, name="set_item")
    b.raw("TensorListStack", "stack_set", input_handle=changed, element_shape=_shape(3),
          element_dtype=F32, num_elements=4)
    # The input list is a value: setting an item left it as it was.
    b.raw("TensorListStack", "stack_original", input_handle=items, element_shape=UNKNOWN,
          element_dtype=F32)

    empty = R.EmptyTensorList(element_shape=_shape(3), max_num_elements=-1, element_dtype=F32,
                              name="empty")
    pushed = R.TensorListPushBack(input_handle=empty, tensor=item, name="push_1")
    pushed = R.TensorListPushBack(input_handle=pushed, tensor=x[0], name="push_2")
    pushed = R.TensorListPushBack(input_handle=pushed, tensor=x[1] + item, name="push_3")
    popped_list, _ = b.raw("TensorListPopBack", "pop_back", take=[1], input_handle=pushed,
                           element_shape=UNKNOWN, element_dtype=F32)
    b.raw("TensorListStack", "stack_after_pop", input_handle=popped_list, element_shape=UNKNOWN,
          element_dtype=F32)
    b.raw("TensorListStack", "stack_pushed", input_handle=pushed, element_shape=_shape(3),
          element_dtype=F32)

    reserved = R.TensorListReserve(element_shape=_shape(3), num_elements=5, element_dtype=F32,
                                   name="reserve")
    one_set = R.TensorListSetItem(input_handle=reserved, index=1, item=item, name="reserve_set")
    b.raw("TensorListStack", "stack_unset_zeros", input_handle=one_set, element_shape=UNKNOWN,
          element_dtype=F32)
    b.raw("TensorListGetItem", "get_unset_zeros", input_handle=one_set, index=3,
          element_shape=UNKNOWN, element_dtype=F32)
    grown = R.TensorListSetItem(input_handle=one_set, index=index + 5, item=item,
                                resize_if_index_out_of_bounds=True, name="set_item_resize")
    b.raw("TensorListStack", "stack_resized_by_set", input_handle=grown, element_shape=UNKNOWN,
          element_dtype=F32)
    shrunk = R.TensorListResize(input_handle=changed, size=2, name="resize_shrink")
    b.raw("TensorListStack", "stack_shrunk", input_handle=shrunk, element_shape=UNKNOWN,
          element_dtype=F32)
    regrown = R.TensorListResize(input_handle=shrunk, size=index + 1, name="resize_grow")
    b.raw("TensorListStack", "stack_regrown", input_handle=regrown, element_shape=_shape(3),
          element_dtype=F32)
    joined = R.TensorListConcatLists(input_a=items, input_b=one_set, element_dtype=F32,
                                     name="concat_lists")
    b.raw("TensorListStack", "stack_concat_lists", input_handle=joined, element_shape=UNKNOWN,
          element_dtype=F32)
    summed = R.AddN(inputs=[one_set, R.TensorListSetItem(input_handle=reserved, index=2, item=item * 3.0)],
                    name="add_n_lists")
    b.raw("TensorListStack", "stack_add_n", input_handle=summed, element_shape=UNKNOWN,
          element_dtype=F32)
    zeros = R.ZerosLike(x=changed, name="zeros_like_list")
    b.raw("TensorListStack", "stack_zeros_like", input_handle=zeros, element_shape=UNKNOWN,
          element_dtype=F32)
    b.variant("other", x=b.normal(4, 3), item=b.normal(3), index=0)


@case("op_tensor_list_gather_scatter", FAMILY,
      "Gather (with repeats, and unset elements read as zeros), Scatter, ScatterV2 with and without "
      "num_elements, ScatterIntoExistingList growing the list, Split with uneven lengths, Concat "
      "(element_shape attr), ConcatV2 with leading_dims sizing unset elements, int32 elements.")
def op_tensor_list_gather_scatter(b):
    x = b.placeholder("x", b.normal(5, 2, 3))
    rows = b.placeholder("rows", b.normal(7, 3))
    indices = tf.constant(np.int32([4, 0, 2]), name="indices")  # a feed: random indices would not fit
    items = R.TensorListFromTensor(tensor=x, element_shape=_shape(2, 3), name="from_tensor")
    b.raw("TensorListGather", "gather", input_handle=items, indices=[3, 1, 3, 0],
          element_shape=UNKNOWN, element_dtype=F32)
    scattered = R.TensorListScatter(tensor=x[:3], indices=indices, element_shape=_shape(2, 3),
                                    name="scatter")
    b.raw("TensorListStack", "stack_scatter", input_handle=scattered, element_shape=UNKNOWN,
          element_dtype=F32)
    b.raw("TensorListGather", "gather_unset", input_handle=scattered, indices=[1, 4],
          element_shape=UNKNOWN, element_dtype=F32)
    sized = R.TensorListScatterV2(tensor=x[:2], indices=[1, 3], element_shape=_shape(-1, 3),
                                  num_elements=6, name="scatter_v2")
    b.raw("TensorListLength", "length_scatter_v2", input_handle=sized)
    b.raw("TensorListGather", "gather_scatter_v2", input_handle=sized, indices=[3, 1],
          element_shape=UNKNOWN, element_dtype=F32)
    unsized = R.TensorListScatterV2(tensor=x[:2], indices=[2, 0], element_shape=_shape(2, 3),
                                    num_elements=-1, name="scatter_v2_unsized")
    b.raw("TensorListStack", "stack_scatter_v2_unsized", input_handle=unsized, element_shape=UNKNOWN,
          element_dtype=F32)
    # Growing by one (index 5 of 5): TensorFlow fills a gap left by a larger index with empty
    # float tensors whose Stack reads uninitialized memory, so no gap here.
    into = R.TensorListScatterIntoExistingList(input_handle=items, tensor=x[:2] * 2.0, indices=[5, 1],
                                               name="scatter_into")
    b.raw("TensorListStack", "stack_scatter_into", input_handle=into, element_shape=_shape(2, 3),
          element_dtype=F32)
    split = R.TensorListSplit(tensor=rows, element_shape=_shape(-1, 3),
                              lengths=tf.constant([3, 0, 4], tf.int64), name="split")
    b.raw("TensorListLength", "length_split", input_handle=split)
    b.raw("TensorListGetItem", "get_split", input_handle=split, index=2, element_shape=UNKNOWN,
          element_dtype=F32)
    b.raw("TensorListConcat", "concat", input_handle=split, element_dtype=F32,
          element_shape=tf.TensorShape([None, 3]))
    partly = R.TensorListReserve(element_shape=_shape(-1, 3), num_elements=3, element_dtype=F32,
                                 name="reserve")
    partly = R.TensorListSetItem(input_handle=partly, index=1, item=rows[:2], name="reserve_set")
    b.raw("TensorListConcatV2", "concat_v2_leading_dims", input_handle=partly,
          element_shape=_shape(-1, 3), leading_dims=tf.constant([1, 0, 2], tf.int64), element_dtype=F32)
    ints = R.TensorListFromTensor(tensor=tf.cast(indices, tf.int32) * 3, element_shape=_shape(),
                                  name="from_ints")
    b.raw("TensorListStack", "stack_ints", input_handle=R.TensorListSetItem(input_handle=ints, index=0, item=7),
          element_shape=_shape(), element_dtype=tf.int32)


def _lstm_like_loop(b, x, w, u, n_steps):
    """A loop as Keras leaves it after lowering: inputs read from a FromTensor list, one state
    carried, outputs written into a reserved list with SetItem and a running list grown with
    PushBack. Every list is a loop variable, as a lowered While makes every input one (TensorFlow's
    v1 gradient cannot accumulate a loop-invariant list: it has no zeros of a variant)."""
    steps, batch, features = x.shape.as_list()
    units = w.shape.as_list()[1]
    inputs = R.TensorListFromTensor(tensor=x, element_shape=_shape(batch, features), name="inputs")
    outputs = R.TensorListReserve(element_shape=_shape(batch, units), num_elements=steps,
                                  element_dtype=F32, name="outputs")
    history = R.EmptyTensorList(element_shape=_shape(batch, units), max_num_elements=-1,
                                element_dtype=F32, name="history")
    h0 = tf.zeros([batch, units], name="h0")

    def body(i, h, inputs, outputs, history):
        x_t = R.TensorListGetItem(input_handle=inputs, index=i, element_shape=_shape(batch, features),
                                  element_dtype=F32)
        h = tf.tanh(tf.matmul(x_t, w) + tf.matmul(h, u))
        return (i + 1, h, inputs, R.TensorListSetItem(input_handle=outputs, index=i, item=h),
                R.TensorListPushBack(input_handle=history, tensor=h * 0.5))

    _, h, inputs, outputs, history = tf.while_loop(lambda i, *_: i < n_steps, body,
                                                   [tf.constant(0), h0, inputs, outputs, history],
                                                   name="rnn")
    return h, inputs, outputs, history


@case("op_tensor_list_while", FAMILY,
      "A v1 tf.while_loop (a tanh RNN over a fed number of steps) reading its inputs with "
      "TensorListGetItem and writing outputs with TensorListSetItem into a reserved list and "
      "TensorListPushBack onto an empty one, as a lowered Keras RNN does; stacked after the loop, "
      "unwritten steps read as zeros. Gradients of the loss w.r.t. x, w and u through the loop and "
      "the lists. Extra run 'two_steps' stops early.", rtol=1e-4, atol=1e-5)
def op_tensor_list_while(b):
    x = b.placeholder("x", b.normal(5, 2, 3))
    w = b.placeholder("w", b.normal(3, 4, scale=0.5))
    u = b.placeholder("u", b.normal(4, 4, scale=0.5))
    n = b.placeholder("n", np.int32(5), shape=[])
    h, inputs, outputs, history = _lstm_like_loop(b, x, w, u, n)
    # TensorFlow's v1 loop gradient needs every list Exit used (it cannot make zeros of a
    # variant for an unused one): the last input is read after the loop.
    last_input = b.fetch(R.TensorListGetItem(input_handle=inputs, index=4, element_shape=_shape(2, 3),
                                             element_dtype=F32, name="last_input"))
    stacked = b.fetch(R.TensorListStack(input_handle=outputs, element_shape=_shape(2, 4),
                                        element_dtype=F32, num_elements=5, name="stacked"))
    pushed = b.fetch(R.TensorListStack(input_handle=history, element_shape=_shape(2, 4),
                                       element_dtype=F32, name="stacked_history"))
    b.fetch(R.TensorListLength(input_handle=history, name="history_length"))
    b.fetch(h, "final_h")
    loss = tf.add_n([tf.reduce_sum(stacked * stacked), tf.reduce_sum(pushed),
                     tf.reduce_sum(last_input * 0.25)], name="loss")
    b.differentiate(loss, [x, w, u])
    b.variant("two_steps", n=2)


@case("op_tensor_list_grad", FAMILY,
      "Gradients through list ops without a loop: FromTensor/GetItem/SetItem/Stack, "
      "PushBack/PopBack, Gather/ScatterV2, ScatterIntoExistingList, Split/ConcatV2 and a list "
      "read by two ops (its gradients meet in AddN of lists).", rtol=1e-4, atol=1e-5)
def op_tensor_list_grad(b):
    x = b.placeholder("x", b.normal(4, 3))
    v = b.placeholder("v", b.normal(3))
    items = R.TensorListFromTensor(tensor=tf.sin(x), element_shape=_shape(3), name="items")
    first = R.TensorListGetItem(input_handle=items, index=0, element_shape=_shape(3), element_dtype=F32)
    changed = R.TensorListSetItem(input_handle=items, index=2, item=first * v)
    pushed = R.TensorListPushBack(input_handle=changed, tensor=v * v)
    popped_list, popped = R.TensorListPopBack(input_handle=pushed, element_shape=_shape(3),
                                              element_dtype=F32)
    stacked = R.TensorListStack(input_handle=popped_list, element_shape=_shape(3), element_dtype=F32)
    gathered = R.TensorListGather(input_handle=items, indices=[3, 1], element_shape=_shape(3),
                                  element_dtype=F32)
    scattered = R.TensorListScatterV2(tensor=gathered * 2.0, indices=[0, 2], element_shape=_shape(3),
                                      num_elements=3)
    into = R.TensorListScatterIntoExistingList(input_handle=scattered, tensor=x[:1] * v, indices=[1])
    again = R.TensorListGather(input_handle=into, indices=[0, 1, 2], element_shape=_shape(3),
                               element_dtype=F32)
    split = R.TensorListSplit(tensor=tf.reshape(x, [6, 2]) * 1.5, element_shape=_shape(-1, 2),
                              lengths=tf.constant([2, 4], tf.int64))
    joined, _ = R.TensorListConcatV2(input_handle=split, element_shape=_shape(-1, 2),
                                     leading_dims=tf.zeros([0], tf.int64), element_dtype=F32)
    loss = tf.add_n([tf.reduce_sum(tf.square(stacked)), tf.reduce_sum(popped * 3.0),
                     tf.reduce_sum(tf.cos(again)), tf.reduce_sum(joined * joined)], name="loss")
    b.differentiate(loss, [x, v])
