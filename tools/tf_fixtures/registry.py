"""The registry of fixture cases and the `@case` decorator that fills it."""
from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Case:
    name: str
    family: str
    description: str
    build: Callable  # build(builder): creates the case's graph inside a fresh tf.Graph
    rtol: float
    atol: float
    notes: str
    stateful: bool = False  # unfrozen, runs in order in one session (stateful.py)


REGISTRY: dict[str, Case] = {}  # name -> Case, in registration order


def case(name, family, description, *, rtol=1e-5, atol=1e-6, notes="", stateful=False):
    """Register a case builder under `name`."""
    def register(build):
        assert name not in REGISTRY, name
        REGISTRY[name] = Case(name, family, description, build, rtol, atol, notes, stateful)
        return build
    return register
