"""Graph optimization passes (Grappler-style), one module per pass, run by manager.optimize.

PASS_ORDER is the fixed order the manager runs them in (repeated to a fixed point). Adding a pass:
a module here with a @register_pass class, and its name in PASS_ORDER.
"""
from importlib import import_module

PASS_ORDER = ("lower", "constfold", "arithmetic", "cse", "layout", "remapper", "dependency", "loop_invariant", "dce")

_MODULES = {"lower": "lower", "constfold": "constant_folding", "arithmetic": "arithmetic", "cse": "cse", "layout": "layout",
            "remapper": "remapper", "dependency": "dependency", "loop_invariant": "loop_invariant",
            "dce": "dce"}

for _name in PASS_ORDER:
    import_module(f"{__name__}.{_MODULES[_name]}")
