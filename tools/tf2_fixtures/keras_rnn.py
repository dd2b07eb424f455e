"""Keras 3 recurrent models frozen twice (family `keras_rnn`): `<model>_lowered` with
`lower_control_flow=True` (v1 Switch/Merge/Enter/Exit loops that still hold TensorList ops) and
`<model>_functional` with `lower_control_flow=False` (a While op with cond/body functions).
Input "x" [batch, time, features]; fetch: the model output ("Identity:0"). Expected gradients:
the sum of the output w.r.t. x and the first recurrent layer's input kernel (a Const after
freezing, used inside the loop)."""
import numpy as np

from .freezing import frozen_keras_artifact
from .registry import case
from .tf2 import keras

FAMILY = "keras_rnn"
BATCH, TIME, FEATURES = 2, 6, 3


def _lstm():
    return keras.Sequential([keras.Input((TIME, FEATURES)), keras.layers.LSTM(6),
                             keras.layers.Dense(3)]), 0


def _gru():
    return keras.Sequential([keras.Input((TIME, FEATURES)), keras.layers.GRU(6),
                             keras.layers.Dense(3)]), 0


def _bidirectional():
    return keras.Sequential([keras.Input((TIME, FEATURES)),
                             keras.layers.Bidirectional(keras.layers.LSTM(4,
                                                                          return_sequences=True)),
                             keras.layers.GlobalAveragePooling1D(), keras.layers.Dense(3)]), 0


def _stacked():
    return keras.Sequential([keras.Input((TIME, FEATURES)),
                             keras.layers.LSTM(5, return_sequences=True), keras.layers.LSTM(4),
                             keras.layers.Dense(2)]), 0


def _conv1d_gru():
    return keras.Sequential([keras.Input((TIME * 2, FEATURES)),
                             keras.layers.Conv1D(8, 3, activation="relu"),
                             keras.layers.MaxPooling1D(2), keras.layers.GRU(5),
                             keras.layers.Dense(2, activation="tanh")]), 2


MODELS = {
    "keras_lstm": (_lstm, "Sequential: LSTM(6) -> Dense(3)."),
    "keras_gru": (_gru, "Sequential: GRU(6, reset_after=True) -> Dense(3)."),
    "keras_bilstm": (_bidirectional, "Sequential: Bidirectional(LSTM(4, return_sequences)) -> "
                                     "GlobalAveragePooling1D -> Dense(3)."),
    "keras_stacked_rnn": (_stacked, "Sequential: LSTM(5, return_sequences) -> LSTM(4) -> "
                                    "Dense(2): two stacked recurrent layers."),
    "keras_conv1d_gru": (_conv1d_gru, "Sequential: Conv1D(8, 3, relu) -> MaxPooling1D(2) -> "
                                      "GRU(5) -> Dense(2, tanh), 12 time steps."),
}


def _register(name, make, description, lower):
    suffix, how = (("lowered", "lower_control_flow=True: v1 loop frames + TensorList ops")
                   if lower else ("functional", "lower_control_flow=False: While + functions"))

    @case(f"{name}_{suffix}", FAMILY, f"{description} Frozen with {how}.")
    def build(rng):
        model, layer = make()
        time = model.inputs[0].shape[1]
        x = rng.standard_normal((BATCH, time, FEATURES)).astype(np.float32)
        kernel = model.layers[layer].weights[0]  # the recurrent layer's input kernel
        return frozen_keras_artifact(model, x, lower=lower, weight=kernel)

    return build


for _name, (_make, _description) in MODELS.items():
    for _lower in (True, False):
        _register(_name, _make, _description, _lower)
