"""Gradient reference cases (family `grad_reference`): forward-only graphs plus the values of
TensorFlow's tf.gradients(y, xs) recorded as data (expected_grads.npz), so that `dftool grad`
can be checked against TensorFlow. Unlike the `gradient` family, graph.pb holds no gradient
nodes: `Builder.differentiate` adds them only after the GraphDef has been exported.

The xs mix every kind of tensor `dftool grad` accepts: frozen weights (Const), fed weights
(Placeholder), intermediate tensors and a tensor `y` does not depend on (zero gradient)."""
import numpy as np

from .layers import conv, lstm_inputs, lstm_weights, pool, run_lstm
from .registry import case
from .tf_v1 import tf

FAMILY = "grad_reference"


@case("gradref_mlp", FAMILY,
      "Mean softmax cross-entropy of a two-layer MLP; d loss / d the frozen first layer (Const), "
      "the fed second layer (Placeholder), the input and two intermediate tensors.",
      rtol=1e-4, atol=1e-5)
def gradref_mlp(b):
    x = b.placeholder("x", b.normal(4, 6))
    labels = b.placeholder("labels", np.eye(3, dtype=np.float32)[[0, 2, 1, 2]])
    w1 = b.variable("dense1/kernel", b.normal(6, 8, scale=0.5))
    b1 = b.variable("dense1/bias", b.normal(8, scale=0.1))
    w2 = b.placeholder("dense2/kernel", b.normal(8, 3, scale=0.5))
    b2 = b.placeholder("dense2/bias", b.normal(3, scale=0.1))
    hidden = tf.nn.relu(tf.nn.bias_add(tf.matmul(x, w1), b1), name="hidden")
    logits = tf.add(tf.matmul(hidden, w2), b2, name="logits")  # Add broadcasts the bias
    cross_entropy = tf.nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits)
    loss = tf.reduce_mean(cross_entropy, name="loss")
    b.differentiate(loss, [w1, b1, w2, b2, x, hidden, logits])


@case("gradref_broadcast", FAMILY,
      "A non-scalar y (TensorFlow sums it): tanh(x * w + c) * scale with broadcasting "
      "[4,3]*[3]+[4,1]*[]; the placeholder `unused` gets a zero gradient.",
      rtol=1e-4, atol=1e-5)
def gradref_broadcast(b):
    x = b.placeholder("x", b.normal(4, 3))
    w = b.placeholder("w", b.normal(3))
    c = b.placeholder("c", b.normal(4, 1))
    scale = b.placeholder("scale", np.float32(1.5), shape=[])
    unused = b.placeholder("unused", b.normal(2))
    b.fetch(unused * 2.0, "unused_doubled")  # keeps `unused` a live input of the graph
    y = tf.multiply(tf.tanh(x * w + c), scale, name="y")
    b.differentiate(y, [x, w, c, scale, unused])


@case("gradref_cond", FAMILY,
      "d loss / d x, w through a tf.cond on a fed predicate; the false branch does not use w "
      "(zero gradient). Extra run 'false' differentiates the other branch.",
      rtol=1e-4, atol=1e-5)
def gradref_cond(b):
    x = b.placeholder("x", b.normal(3))
    w = b.placeholder("w", b.normal(3))
    pred = b.placeholder("pred", np.bool_(True), shape=[])
    y = tf.cond(pred, lambda: tf.sin(x) * w, lambda: tf.exp(x) - x * x, name="cond")
    loss = tf.reduce_sum(y * y, name="loss")
    b.differentiate(loss, [x, w])
    b.variant("false", pred=False)


@case("gradref_while", FAMILY,
      "d loss / d x0, w, bias through tf.while_loop with a fed trip count; w (fed) and bias "
      "(frozen) are loop invariants whose gradients accumulate over iterations. Extra runs: "
      "n=0 and n=7.", rtol=1e-4, atol=1e-5)
def gradref_while(b):
    n = b.placeholder("n", np.int32(4), shape=[])
    x0 = b.placeholder("x", b.normal(3))
    w = b.placeholder("w", b.normal(3))
    bias = b.variable("bias", b.normal(3, scale=0.3))
    _, h = tf.while_loop(lambda i, h: i < n, lambda i, h: (i + 1, tf.tanh(h * w + bias)),
                         [tf.constant(0), x0], name="loop")
    loss = tf.reduce_sum(h * h, name="loss")
    b.differentiate(loss, [x0, w, bias])
    b.variant("zero_iterations", n=0)
    b.variant("seven", n=7)


@case("gradref_nested_while", FAMILY,
      "d loss / d x0, w, v through a while loop nested in a while loop whose inner trip count "
      "is the outer counter + 1 (different per outer iteration). Extra run: n=1.",
      rtol=1e-4, atol=1e-5)
def gradref_nested_while(b):
    n = b.placeholder("n", np.int32(3), shape=[])
    x0 = b.placeholder("x", b.normal(3))
    w = b.placeholder("w", b.normal(3))
    v = b.placeholder("v", b.uniform(0.5, 1.0, 3))

    def outer_body(i, h):
        _, h = tf.while_loop(lambda j, g: j < i + 1,
                             lambda j, g: (j + 1, tf.sin(g * w) + 0.5 * g),
                             [tf.constant(0), h], name="inner")
        return i + 1, h * v

    _, h = tf.while_loop(lambda i, h: i < n, outer_body, [tf.constant(0), x0], name="outer")
    loss = tf.reduce_sum(tf.square(h), name="loss")
    b.differentiate(loss, [x0, w, v])
    b.variant("one", n=1)


@case("gradref_while_in_cond", FAMILY,
      "d loss / d x, w through a while loop inside the true branch of a tf.cond. Extra run "
      "'false' takes the branch without a loop.", rtol=1e-4, atol=1e-5)
def gradref_while_in_cond(b):
    pred = b.placeholder("pred", np.bool_(True), shape=[])
    n = b.placeholder("n", np.int32(3), shape=[])
    x = b.placeholder("x", b.normal(4))
    w = b.placeholder("w", b.uniform(0.5, 1.0, 4))

    def true_fn():
        _, y = tf.while_loop(lambda k, v: k < n, lambda k, v: (k + 1, v * w + 0.1),
                             [tf.constant(0), x], name="loop")
        return y

    out = tf.cond(pred, true_fn, lambda: x * w, name="cond")
    loss = tf.reduce_sum(tf.sin(out), name="loss")
    b.differentiate(loss, [x, w])
    b.variant("false", pred=False)


@case("gradref_cond_in_while", FAMILY,
      "d loss / d x, w through a tf.cond inside a while loop body (predicate alternates with "
      "the counter). Extra run: n=5.", rtol=1e-4, atol=1e-5)
def gradref_cond_in_while(b):
    n = b.placeholder("n", np.int32(4), shape=[])
    x = b.placeholder("x", b.normal(3))
    w = b.placeholder("w", b.uniform(0.5, 1.0, 3))

    def body(i, v):
        even = tf.equal(tf.math.floormod(i, 2), 0)
        return i + 1, tf.cond(even, lambda: v * w, lambda: tf.sin(v) + w, name="step")

    _, v = tf.while_loop(lambda i, v: i < n, body, [tf.constant(0), x], name="loop")
    loss = tf.reduce_sum(v * v, name="loss")
    b.differentiate(loss, [x, w])
    b.variant("five", n=5)


@case("gradref_lstm", FAMILY,
      "d loss / d kernel, bias (frozen) and the input of a tf.nn.dynamic_rnn LSTM with "
      "sequence_length (v1 while loop, TensorArrayV3 scatter/read/write/gather). Extra run: "
      "full-length sequences.", rtol=1e-4, atol=1e-5,
      notes="The cell reproduces tf.nn.rnn_cell.LSTMCell's ops (unavailable under Keras 3).")
def gradref_lstm(b):
    x, seq_len = lstm_inputs(b)
    kernel_value, bias_value = lstm_weights(b)
    kernel = b.variable("lstm/kernel", kernel_value)
    bias = b.variable("lstm/bias", bias_value)
    outputs, state = run_lstm(kernel, bias, x, seq_len)
    loss = tf.add(tf.reduce_sum(tf.square(outputs)), tf.reduce_sum(state.c), name="loss")
    b.differentiate(loss, [kernel, bias, x])
    b.variant("full_length", seq_len=[5, 5, 5])


@case("gradref_convnet", FAMILY,
      "d loss / d every frozen weight and the input of a conv net: strided SAME Conv2D + "
      "FusedBatchNormV3 (is_training=True, batch statistics) + Relu + MaxPool + Conv2D + "
      "AvgPool + dense (BiasAdd) + sparse softmax cross-entropy.", rtol=1e-4, atol=1e-5,
      notes="The first conv has no bias: batch norm in training mode subtracts the batch mean, "
            "so a bias there has a zero gradient that float32 leaves as rounding noise.")
def gradref_convnet(b):
    x = b.placeholder("x", b.normal(2, 9, 9, 3))
    labels = b.placeholder("labels", np.array([1, 3], np.int32))
    w1 = b.variable("conv1/filter", b.normal(3, 3, 3, 4, scale=0.3))
    gamma = b.variable("bn/gamma", b.uniform(0.5, 1.5, 4))
    beta = b.variable("bn/beta", b.normal(4, scale=0.1))
    w2 = b.variable("conv2/filter", b.normal(3, 3, 4, 6, scale=0.3))
    wf = b.variable("fc/kernel", b.normal(6, 4, scale=0.3))
    bf = b.variable("fc/bias", b.normal(4, scale=0.1))
    h = conv(x, w1, 2, "SAME")                                                  # 5x5x4
    h, _, _ = tf.nn.fused_batch_norm(h, gamma, beta, epsilon=1e-3, is_training=True)
    h = pool("max", tf.nn.relu(h), 3, 2, "VALID")                                 # 2x2x4
    h = tf.nn.relu(conv(h, w2, 1, "SAME"))                                        # 2x2x6
    h = tf.reshape(pool("avg", h, 2, 2, "VALID"), [-1, 6])
    logits = tf.nn.bias_add(tf.matmul(h, wf), bf)
    loss = tf.reduce_mean(
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits), name="loss")
    b.differentiate(loss, [w1, gamma, beta, w2, wf, bf, x])
