"""The JIT's tests keep JAX's persistent compilation cache in a temporary directory (set before
graphtool.jit loads JAX), not in the user's ~/.cache/dftool/jax."""
import os
import tempfile

os.environ.setdefault("DFTOOL_JIT_CACHE", tempfile.mkdtemp(prefix="dftool-jit-cache-"))
