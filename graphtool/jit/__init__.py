"""The JIT backend: clusters of supported ops compiled by XLA through JAX (optional extra `jit`).

    Session(graph, jit=True)  /  dftool run --jit  /  DFTOOL_JIT=1

engine.py runs the pass per compiled signature: functionalize.py (v1 control flow -> While/If),
clustering.py (+ candidates.py, graph_cycles.py: which nodes, grouped how), rewrite.py (each
cluster -> one `_JitCluster` node), cluster_op.py (its op, kernel and compiled program), trace.py
(a body traced through lowerings/), runtime.py (JAX itself: x64, the persistent cache, devices).

Importing this package does not import JAX; the modules that need it import it when a graph is
compiled, so `dftool` without the extra still loads (and `--jit` says what to install).
"""
