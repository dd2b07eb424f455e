"""The JIT backend: clusters of supported ops compiled by XLA through JAX (optional extra `jit`).

Importing this package does not import JAX; the modules that need it import it when a graph is
compiled, so `dftool` without the extra still loads (and `--jit` says what to install).
"""
