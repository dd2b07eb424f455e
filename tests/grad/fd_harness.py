"""Checking one op's gradient function against central finite differences.

A case describes the op's inputs as data: `Rand` inputs are drawn at random (seeded) at each
check point and differentiated, `Value` inputs are explicit differentiated arrays, anything else
(integer indices, axes, shapes, float constants) becomes a Const. For a case the harness builds,
in one graph,

    forward:         op(inputs) with float Placeholders of static shape
    forward_dynamic: the same op on Placeholders whose dims are unknown (the gradient function
                     must then work from run-time shapes, as inside while loops)

then calls the op's gradient function directly at the root through a GradContext (no driver),
seeding output k with a fixed random array w_k, so the gradients are those of
y = sum_k sum(w_k * output_k). The finite differences of y come from running `forward` itself
with each differentiated element nudged by +-eps. Graph and session are built once per case
and reused for every point and every nudge.

Float64 is the default. Ops whose kernels only exist for float32 (FusedBatchNorm, LRN) use
float32 with a larger eps (3e-3) and looser tolerances: the float32 rounding of the forward
outputs, divided by 2*eps, bounds how well their finite differences can agree.
"""
from __future__ import annotations

import zlib
from dataclasses import dataclass, field

import numpy as np

from graphtool import dtypes
from graphtool.builder import GraphBuilder
from graphtool.exec.session import Session
from graphtool.grad import registry as grad_registry
from graphtool.grad.registry import GradContext
from graphtool.ops import registry as op_registry

FLOAT64_TOLERANCE = dict(eps=1e-6, rtol=1e-5, atol=1e-6)
FLOAT32_TOLERANCE = dict(eps=3e-3, rtol=1e-2, atol=3e-3)

# Families whose gradients belong to the driver (control flow frames, stacks, TensorArrays,
# variables) and are checked by the driver's own tests: a single node run at the root, as this
# harness does, cannot express their frames and state. TensorList ops take and give lists, which
# cannot be fed or nudged: tests/grad/test_tensor_list_grad.py checks them by finite differences
# through whole graphs (tensor -> lists -> tensor) instead.
CHECKED_BY_DRIVER_FAMILIES = frozenset({"control_flow", "tensor_array", "tensor_list", "state"})


def checked_by_driver(op: str) -> bool:
    """True for ops whose gradients are checked in the driver's tests rather than here."""
    spec = op_registry.lookup(op)
    return spec is not None and (spec.control_flow or spec.family in CHECKED_BY_DRIVER_FAMILIES)


@dataclass(frozen=True)
class Rand:
    """A differentiated float input drawn at random at each check point.

    Values are uniform in [low, high]; with `signed`, magnitudes are in [low, high] with random
    signs (keeps Abs/Relu-like kinks at 0 out of reach); with `distinct`, values are a shuffled
    grid over [low, high], so no two are tied (Max, MaxPool, TopK, ...)."""

    shape: tuple
    low: float = -2.0
    high: float = 2.0
    signed: bool = False
    distinct: bool = False

    def draw(self, rng: np.random.Generator) -> np.ndarray:
        size = int(np.prod(self.shape, dtype=np.int64))
        if self.distinct:
            grid = np.linspace(self.low, self.high, max(size, 2))[:size]
            step = (self.high - self.low) / max(size - 1, 1)
            values = rng.permutation(grid) + rng.uniform(-0.2, 0.2, size) * step
        else:
            values = rng.uniform(self.low, self.high, size)
            if self.signed:
                values *= rng.choice([-1.0, 1.0], size)
        return values.reshape(self.shape)


@dataclass(frozen=True)
class Value:
    """A differentiated float input with explicit values (the same at every point)."""

    array: object

    def draw(self, rng: np.random.Generator) -> np.ndarray:
        return np.asarray(self.array, dtype=np.float64)

    @property
    def shape(self) -> tuple:
        return np.shape(self.array)


@dataclass
class Case:
    """One configuration of an op to check. `inputs` has one entry per input arg of the op's
    signature (a list for list args such as AddN's); `outputs` names the forward outputs that get
    an incoming gradient (default: every floating output; the others get None, as the driver
    passes for outputs nothing depends on)."""

    inputs: list
    attrs: dict = field(default_factory=dict)
    outputs: tuple | None = None
    dtype: str = "float64"
    points: int = 2
    dynamic: bool = True
    tolerance: dict = field(default_factory=dict)
    label: str = ""
    # For ops whose gradient is symmetric by convention (TensorFlow's Cholesky): compare along
    # symmetric nudges of the innermost two dims, x[i, j] and x[j, i] together.
    symmetric: bool = False

    def describe(self) -> str:
        return self.label or ", ".join(_describe_input(v) for v in self.inputs)

    def limits(self) -> dict:
        base = FLOAT64_TOLERANCE if self.dtype == "float64" else FLOAT32_TOLERANCE
        return {**base, **self.tolerance}


def _describe_input(value) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(_describe_input(v) for v in value) + "]"
    if isinstance(value, (Rand, Value)):
        return "x" + "x".join(map(str, value.shape)) if value.shape else "x()"
    return f"c{list(np.shape(value))}" if np.ndim(value) else f"c={value}"


@dataclass
class CheckResult:
    max_abs_error: float
    worst_ratio: float          # max |analytic - numeric| / (atol + rtol |numeric|); <= 1 passes
    worst: str                  # where the worst ratio was seen
    evaluations: int


class _Built:
    """The graph of one case: placeholders, forward outputs and the gradient tensors."""

    def __init__(self, op: str, case: Case, seed: int):
        self.op, self.case = op, case
        self.rng = np.random.default_rng(seed)
        self.b = GraphBuilder()
        self.dtype = dtypes.as_dtype(case.dtype)
        self.differentiated: list[tuple[str, object]] = []   # (placeholder name, spec)
        static_inputs = self._inputs(case.inputs, "in", dynamic=False)
        self.forward = self._forward(static_inputs, "forward")
        self.weighted = self._weighted_outputs()
        self.points = [self._draw_point() for _ in range(case.points)]
        shapes = self._output_shapes()
        self.weights = {k: self._weight(k, shapes[k]) for k in self.weighted}
        self.grad_names = {"static": self._gradients(self.forward)}
        if case.dynamic:
            dynamic_inputs = self._inputs(case.inputs, "in", dynamic=True)
            self.grad_names["dynamic"] = self._gradients(self._forward(dynamic_inputs, "forward_dynamic"))
        self.session = Session(self.b.graph, threads=1)

    # --- building -------------------------------------------------------------------------------
    def _inputs(self, specs: list, prefix: str, dynamic: bool) -> list:
        built = []
        for i, spec in enumerate(specs):
            name = f"{prefix}{i}"
            if isinstance(spec, list):
                built.append(self._inputs(spec, f"{name}_", dynamic))
            elif isinstance(spec, (Rand, Value)):
                shape = [None] * len(spec.shape) if dynamic else list(spec.shape)
                suffix = "_dyn" if dynamic else ""
                built.append(self.b.placeholder(self.dtype, shape, name=name + suffix))
                if not dynamic:
                    self.differentiated.append((name, spec))
            else:
                built.append(self.b.const(np.asarray(spec), name=name + ("_dyn" if dynamic else "")))
        return built

    def _forward(self, inputs: list, name: str):
        self.b.op(self.op, inputs, name=name, **self.case.attrs)
        return self.b.graph.get(name)

    def _weighted_outputs(self) -> list[int]:
        if self.case.outputs is not None:
            return list(self.case.outputs)
        return [k for k, ref in enumerate(self.forward.outputs)
                if self.b.dtype(ref).base.is_floating or self.b.dtype(ref).base.is_complex]

    def _weight(self, k: int, shape: tuple) -> np.ndarray:
        """The seed of output k; a complex output's seed is complex, and the objective takes
        Re(conj(w) * out), so its gradient is dy/dRe + i dy/dIm, TensorFlow's convention."""
        weight = self.rng.standard_normal(shape)
        if self.b.dtype(self.forward.output(k)).base.is_complex:
            weight = weight + 1j * self.rng.standard_normal(shape)
        return weight

    def _output_shapes(self) -> dict[int, tuple]:
        """The weighted outputs' shapes: static, or (SegmentSum, Where-like ops) as computed at
        the first point."""
        static = {k: self.b.shape(self.forward.output(k)) for k in self.weighted}
        if all(shape.fully_defined for shape in static.values()):
            return {k: tuple(shape.as_list()) for k, shape in static.items()}
        fetches = [self.forward.output(k).name for k in self.weighted]
        values = Session(self.b.graph, threads=1).run(fetches, self.points[0]).values
        return {k: value.shape for k, value in zip(self.weighted, values)}

    def _gradients(self, node) -> dict[str, str | None]:
        """Call the gradient function on `node`; placeholder name -> gradient tensor name."""
        seeds = [None] * node.num_outputs
        for k in self.weighted:
            out_dtype = self.b.dtype(node.output(k)).base
            seeds[k] = self.b.const(self.weights[k].astype(out_dtype.numpy), name=f"seed{k}")
        fn = grad_registry.lookup(self.op)
        results = fn(GradContext(self.b, node), seeds)
        assert len(results) == len(node.inputs), \
            f"{self.op}: gradient function returned {len(results)} entries for {len(node.inputs)} inputs"
        by_input = {}
        for slot, ref in enumerate(node.inputs):
            by_input[ref.node.name.removesuffix("_dyn")] = results[slot]
        return {name: (None if by_input[name] is None else by_input[name].name)
                for name, _ in self.differentiated}

    # --- running --------------------------------------------------------------------------------
    def _draw_point(self) -> dict[str, np.ndarray]:
        if self.dtype.is_complex:
            return {name: (spec.draw(self.rng) + 1j * spec.draw(self.rng)).astype(self.dtype.numpy)
                    for name, spec in self.differentiated}
        return {name: spec.draw(self.rng).astype(self.dtype.numpy) for name, spec in self.differentiated}

    def feeds(self, point: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        feeds = dict(point)
        if self.case.dynamic:
            feeds.update({f"{name}_dyn": value for name, value in point.items()})
        return feeds

    def objective(self, point: dict[str, np.ndarray]) -> float:
        fetches = [self.forward.output(k).name for k in self.weighted]
        values = self.session.run(fetches, point).values
        total = float(sum(np.sum(np.real(np.conj(self.weights[k]) * v)) for k, v in zip(self.weighted, values)))
        assert np.isfinite(total), f"{self.op}: the forward outputs are not finite at {point}"
        return total

    def analytic(self, point, variant: str) -> dict[str, np.ndarray]:
        names = self.grad_names[variant]
        fetch = [n for n in names.values() if n is not None]
        values = dict(zip(fetch, self.session.run(fetch, self.feeds(point)).values)) if fetch else {}
        result = {}
        for name, tensor in names.items():
            result[name] = (np.zeros(point[name].shape) if tensor is None
                            else values[tensor].astype(np.result_type(values[tensor], np.float64)))
        return result

    def numeric(self, point, eps: float) -> tuple[dict[str, np.ndarray], int]:
        """Central differences of the objective for every differentiated element."""
        result, evaluations = {}, 0
        for name, value in point.items():
            grad = np.zeros(value.shape, np.result_type(value, np.float64))
            # A complex input is nudged along its real and its imaginary part.
            for direction in ((1, 1j) if value.dtype.kind == "c" else (1,)):
                for index in np.ndindex(*value.shape):
                    up, down = value.copy(), value.copy()
                    mirror = (*index[:-2], index[-1], index[-2]) if self.case.symmetric else index
                    if self.case.symmetric and index[-2] < index[-1]:
                        continue
                    for at in {index, mirror}:
                        up[at] += eps * direction
                        down[at] -= eps * direction
                    # In float32 the nudge is rounded: divide by the step actually taken.
                    step = abs(complex(up[index]) - complex(down[index]))
                    change = self.objective({**point, name: up}) - self.objective({**point, name: down})
                    grad[index] += direction * change / step
                    grad[mirror] = grad[index]
                    evaluations += 2
            result[name] = grad
        return result, evaluations


def check_case(op: str, case: Case, case_index: int = 0) -> CheckResult:
    """Compare `op`'s registered gradient with central differences at `case.points` seeded random
    points, for the static and (unless case.dynamic is False) the shape-unknown graph."""
    built = _Built(op, case, zlib.crc32(f"{op}/{case_index}".encode()))
    limits = case.limits()
    worst = CheckResult(0.0, 0.0, "", 0)
    for point_index, point in enumerate(built.points):
        numeric, evaluations = built.numeric(point, limits["eps"])
        worst.evaluations += evaluations
        for variant in built.grad_names:
            analytic = built.analytic(point, variant)
            if case.symmetric:     # the derivative along x[i, j] and x[j, i] nudged together
                analytic = {name: a + np.swapaxes(a, -1, -2) - a * np.eye(a.shape[-1])
                            for name, a in analytic.items()}
            for name in point:
                _record(worst, analytic[name], numeric[name], limits,
                        f"point {point_index}, {variant} graph, input {name}")
    return worst


def _record(result: CheckResult, analytic, numeric, limits, where: str) -> None:
    assert analytic.shape == numeric.shape, \
        f"{where}: gradient shape {analytic.shape} != input shape {numeric.shape}"
    error = np.abs(analytic - numeric)
    ratio = error / (limits["atol"] + limits["rtol"] * np.abs(numeric))
    result.max_abs_error = max(result.max_abs_error, float(error.max(initial=0.0)))
    if ratio.size and float(ratio.max()) > result.worst_ratio:
        at = np.unravel_index(int(np.argmax(ratio)), ratio.shape)
        result.worst_ratio = float(ratio.max())
        result.worst = (f"{where} at {tuple(int(i) for i in at)}: analytic {analytic[at]:.8g}, "
                        f"numeric {numeric[at]:.8g}")
