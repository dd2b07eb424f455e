"""Frozen Keras applications at small sizes (family `keras_app`): MobileNetV2, ResNet50,
EfficientNetB0, DenseNet121 and NASNetMobile, inference mode, random seeded weights (nothing
downloaded), input "x" [2, 32, 32, 3], ten logits (`classifier_activation=None`: the sum of
softmax probabilities is constant, so its gradient would be numerical noise).

Where the public constructor has no width knob, the model comes from Keras' own builder with the
architecture's block structure and op types unchanged and only channel counts reduced:
ResNet50 through `resnet.ResNet` with its four stages (3, 4, 6, 3 bottleneck blocks) at 1/16 of
the filters, EfficientNetB0 through `efficientnet.EfficientNet` at width 0.2 (depth 1.0: B0's
blocks), DenseNet121 through `densenet.DenseNet([6, 12, 24, 16])` with growth rate 4 instead of
32, NASNetMobile through `nasnet.NASNet` with NASNetMobile's settings but 96 penultimate and 8 stem
filters. Batch-normalization statistics are calibrated on a random batch and scales/offsets
randomized (see calibrate_batch_norm). Expected gradients: the sum of the logits w.r.t. x and the stem
convolution's kernel."""
import numpy as np
from keras.src.applications import densenet, efficientnet, nasnet, resnet

from .freezing import frozen_keras_artifact
from .registry import case
from .tf2 import keras

FAMILY = "keras_app"
INPUT = (32, 32, 3)
COMMON = {"weights": None, "input_shape": INPUT, "classes": 10, "classifier_activation": None}


VARIANCE_FLOOR = 0.05  # near-constant channels would otherwise be scaled up a hundredfold


def calibrate_batch_norm(model, rng, low, high, shape=INPUT):
    """Batch-norm parameters as a trained model has them: random scales and offsets, and moving
    statistics that are each layer's input statistics on a calibration batch (one training-mode
    pass with momentum 0, after the scales are set, so every layer sees what its predecessors
    make). Keras' fresh statistics (0, 1) do not fit what a randomly initialized network
    computes: activations blow up, ReLU6 saturates and gradients vanish."""
    norms = [layer for layer in model.layers
             if isinstance(layer, keras.layers.BatchNormalization)]
    for layer in norms:
        gamma, beta, mean, variance = layer.get_weights()
        layer.set_weights([rng.uniform(0.5, 1.5, gamma.shape), rng.normal(0, 0.1, beta.shape),
                           mean, variance])
        layer.momentum = 0.0
    model(rng.uniform(low, high, (16, *shape)).astype(np.float32), training=True)
    for layer in norms:
        layer.momentum = 0.99
        gamma, beta, mean, variance = layer.get_weights()
        layer.set_weights([gamma, beta, mean, np.maximum(variance, VARIANCE_FLOOR)])


def stem_kernel(model):
    """The kernel of the first convolution."""
    for layer in model.layers:
        if isinstance(layer, (keras.layers.Conv2D, keras.layers.DepthwiseConv2D)):
            return layer.weights[0]
    raise ValueError("no convolution")


def spread_logits(model, x, std):
    """Scale the classifier (the last layer with weights) so the logits on `x` have standard
    deviation `std`, as a trained ImageNet model's do (about 5): rounding errors are relative to
    the values summed, so a random model's logits of about 1 would hide a 10x larger drift."""
    classifier = [layer for layer in model.layers if layer.weights][-1]
    factor = std / float(np.std(model(x, training=False)))
    classifier.set_weights([weight * factor for weight in classifier.get_weights()])


def application(make, rng, low=-1.0, high=1.0, shape=INPUT, logit_std=None):
    model = make()
    calibrate_batch_norm(model, rng, low, high, shape)
    x = rng.uniform(low, high, (2, *shape)).astype(np.float32)
    if logit_std:
        spread_logits(model, x, logit_std)
    return frozen_keras_artifact(model, x, lower=True, weight=stem_kernel(model))


@case("keras_mobilenet_v2", FAMILY,
      "keras.applications.MobileNetV2(alpha=0.35), 32x32 input: inverted residual blocks with "
      "depthwise convolutions, ReLU6, batch norm (inference).", slow=True)
def keras_mobilenet_v2(rng):
    return application(lambda: keras.applications.MobileNetV2(alpha=0.35, **COMMON), rng)


@case("keras_resnet50", FAMILY,
      "ResNet50 through keras' resnet.ResNet builder: conv1 + four stages of 3/4/6/3 bottleneck "
      "blocks (filters 4/8/16/32, ResNet50's divided by 16), 32x32 input.", slow=True,
      atol=1e-3, notes="atol 1e-3: TensorFlow's own float32 logits (up to 7) are 3.7e-4 off a "
                       "float64 evaluation of the same model (dftool's: 2.9e-4).")
def keras_resnet50(rng):
    def stack_fn(x):
        x = resnet.stack_residual_blocks_v1(x, 4, 3, stride1=1, name="conv2")
        x = resnet.stack_residual_blocks_v1(x, 8, 4, name="conv3")
        x = resnet.stack_residual_blocks_v1(x, 16, 6, name="conv4")
        return resnet.stack_residual_blocks_v1(x, 32, 3, name="conv5")

    return application(lambda: resnet.ResNet(stack_fn, preact=False, use_bias=True,
                                             name="resnet50", **COMMON), rng)


@case("keras_efficientnet_b0", FAMILY,
      "EfficientNetB0 through keras' efficientnet.EfficientNet builder at width 0.2 (depth 1.0: "
      "B0's 16 MBConv blocks with squeeze-and-excitation, swish), 32x32 input in [0, 255] "
      "(the model rescales and normalizes it).", slow=True)
def keras_efficientnet_b0(rng):
    return application(lambda: efficientnet.EfficientNet(0.2, 1.0, 32, name="efficientnetb0",
                                                         **COMMON), rng, 0.0, 255.0)


@case("keras_densenet121", FAMILY,
      "DenseNet121 through keras' densenet.DenseNet([6, 12, 24, 16]) builder with growth rate 4 "
      "(DenseNet121: 32), 32x32 input: dense blocks of concatenations, transition layers.",
      slow=True)
def keras_densenet121(rng):
    original = densenet.conv_block

    def narrow_conv_block(x, growth_rate, name):
        return original(x, 4, name)

    densenet.conv_block = narrow_conv_block  # dense_block hard-codes a growth rate of 32
    try:
        return application(lambda: densenet.DenseNet([6, 12, 24, 16], name="densenet121",
                                                     **COMMON), rng)
    finally:
        densenet.conv_block = original


@case("keras_nasnet_mobile", FAMILY,
      "NASNetMobile through keras' nasnet.NASNet builder (4 blocks, filter multiplier 2, no "
      "skip reduction, as NASNetMobile) with 96 penultimate and 8 stem filters, 32x32 input: "
      "separable convolutions, cropping/padding, many concatenations.", slow=True)
def keras_nasnet_mobile(rng):
    common = dict(COMMON)
    return application(lambda: nasnet.NASNet(penultimate_filters=96, num_blocks=4,
                                             stem_block_filters=8, skip_reduction=False,
                                             filter_multiplier=2, default_size=32,
                                             name="nasnet_mobile", **common), rng)


# Numeric fidelity (issue 13): MobileNets as an image classifier ships them, 1,000 logits, at the
# tolerance a user expects (rtol 1e-4, atol 1e-5). Depthwise convolutions, long 1x1 convolution
# sums and a 1,000-way classifier are where float32 accumulation order shows.
IMAGENET = {"weights": None, "classes": 1000, "classifier_activation": None}
MOBILENET_INPUT = (128, 128, 3)
IMAGENET_LOGIT_STD = 5.0


@case("keras_mobilenet_v1_1000", FAMILY,
      "keras.applications.MobileNet(alpha=0.25), 128x128 input, 1,000 logits: 13 depthwise "
      "separable blocks, ReLU6, batch norm (inference), 1x1 convolution classifier scaled to "
      "ImageNet-like logits (std 5).", slow=True)
def keras_mobilenet_v1_1000(rng):
    return application(lambda: keras.applications.MobileNet(
        alpha=0.25, input_shape=MOBILENET_INPUT, **IMAGENET), rng, shape=MOBILENET_INPUT,
        logit_std=IMAGENET_LOGIT_STD)


@case("keras_mobilenet_v2_1000", FAMILY,
      "keras.applications.MobileNetV2(alpha=0.35), 128x128 input, 1,000 logits: inverted "
      "residual blocks with depthwise convolutions, ReLU6, batch norm (inference), a 1280x1000 "
      "dense classifier scaled to ImageNet-like logits (std 5).", slow=True)
def keras_mobilenet_v2_1000(rng):
    return application(lambda: keras.applications.MobileNetV2(
        alpha=0.35, input_shape=MOBILENET_INPUT, **IMAGENET), rng, shape=MOBILENET_INPUT,
        logit_std=IMAGENET_LOGIT_STD)
