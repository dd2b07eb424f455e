"""Per-op lowerings to JAX, one module per family (see registry.py)."""
