"""The registry of TF2 fixture cases and the `@case` decorator that fills it."""
from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Case:
    name: str
    family: str
    description: str
    build: Callable  # build(rng) -> recording.Artifact, made in a fresh process
    rtol: float
    atol: float
    notes: str
    slow: bool        # the acceptance tests mark it @pytest.mark.slow
    grad_rtol: float  # for expected_grads.npz (atol scaled by the gradient's largest value > 1)
    grad_atol: float


REGISTRY: dict[str, Case] = {}  # name -> Case, in registration order


def case(name, family, description, *, rtol=1e-4, atol=1e-5, notes="", slow=False,
         grad_rtol=1e-4, grad_atol=1e-5):
    """Register a case builder under `name`."""
    def register(build):
        assert name not in REGISTRY, name
        REGISTRY[name] = Case(name, family, description, build, rtol, atol, notes, slow,
                              grad_rtol, grad_atol)
        return build
    return register
