"""The random family: no gradients (TensorFlow declares its random ops not differentiable; a
sample's dependence on its shape, key or seed is not a derivative)."""
from __future__ import annotations

from .registry import not_differentiable

not_differentiable(
    "StatelessRandomUniformV2", "StatelessRandomNormalV2", "StatelessTruncatedNormalV2",
    "StatelessRandomUniformIntV2", "StatelessRandomUniformFullIntV2", "StatelessRandomGetKeyCounter",
    "StatelessRandomGetKeyCounterAlg", "StatelessRandomGetAlg", "StatelessTruncatedNormal",
    "StatelessRandomUniformInt", "StatelessRandomUniformFullInt", "StatefulUniform", "StatefulStandardNormalV2",
    "StatefulTruncatedNormal", "StatefulUniformInt", "StatefulUniformFullInt", "RngReadAndSkip", "RngSkip",
)
