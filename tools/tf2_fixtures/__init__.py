"""The TF2 fixture generator behind tools/make_tf2_fixtures.py (see its docstring).

Infrastructure:
    tf2        TensorFlow 2 / Keras 3 configured for reproducible recording
    registry   Case, REGISTRY and the @case decorator
    recording  Artifact, running graph.pb in TensorFlow, writing a case and manifest.json

Cases, one module per family (importing a module registers its cases):
    functions (tf_function), keras_rnn (keras_rnn), keras_apps (keras_app)
"""
from . import functions, keras_apps, keras_rnn  # noqa: F401
from .recording import generate, write_manifest
from .registry import REGISTRY

__all__ = ["REGISTRY", "generate", "write_manifest"]
