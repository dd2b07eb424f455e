"""Per-op lowerings to JAX, one module per family (see registry.py)."""

# Importing the package registers every family (the registry itself imports none of them).
from . import families  # noqa: F401
