"""A cupy-like array module over numpy: tests GPU code paths where no GPU (or no cupy) exists.

Kernels are written against `xp`; on a GPU that is cupy, which refuses several things numpy allows
silently. Code that relies on them passes every CPU test and fails on the first real GPU. This
module presents numpy the way cupy behaves, so the GPU test double (sim_gpu.py, `strict=True`)
catches those bugs in CI:

1. no implicit device -> host conversion: `np.asarray(device_array)` raises TypeError (cupy's
   `__array__`); `.get()` or `xp.asnumpy()` copy explicitly; `int()`, `float()`, `bool()`,
   `.tolist()` and `.item()` are allowed (cupy synchronizes and copies for them);
2. no mixing: a ufunc, operator or array function given a host ndarray (anything but a scalar)
   together with device arrays raises TypeError, as cupy does ("Unsupported type");
3. numpy functions called on device arrays dispatch to the array module (NEP 18, as cupy
   implements it), and reductions or scalar indexing give 0-d device arrays, not numpy scalars;
4. only cupy's dtypes live on the device: no object, string or bfloat16 arrays;
5. `argsort`/`sort` are stable (cupy's sorts are; they take no `kind`);
6. `ufunc.at` refuses the dtypes the oldest supported cupy refuses (its atomics), and
   `linalg.cholesky` does not raise for a matrix that is not positive definite: the failed
   factor has a NaN on its diagonal, as cupy returns it without checking cuSOLVER's status.

Every name a kernel takes from the module, or a numpy function dispatched to it, is recorded in
`NAMES_USED` (for the whole process), so a test that has cupy importable (no GPU needed) can check
that cupy provides each of them.
"""
from __future__ import annotations

import operator
import threading

import numpy as np

_CUPY_DTYPE_KINDS = "biufc"


def _unsupported(value) -> TypeError:
    return TypeError(f"Unsupported type {type(value)} (a host array mixed with device arrays; "
                     f"copy it with xp.asarray first)")


class DeviceArray:
    """A numpy array presented as cupy presents device memory."""

    __slots__ = ("_host_view", "__weakref__")
    __array_priority__ = 100
    __hash__ = None   # type: ignore[assignment]  # arrays are unhashable, as cupy's are (mypy wants a method)

    def __init__(self, array: np.ndarray):
        if array.dtype.kind not in _CUPY_DTYPE_KINDS:
            raise TypeError(f"cupy does not support arrays of dtype {array.dtype}")
        self._host_view = array

    # --- explicit and forbidden conversions --------------------------------------------------------
    def __array__(self, dtype=None, copy=None):
        raise TypeError("Implicit conversion to a NumPy array is not allowed. Please use `.get()` to "
                        "construct a NumPy array explicitly.")

    def get(self, stream=None, order="C", out=None, blocking=True) -> np.ndarray:
        """A host copy (into `out` when given), as cupy.ndarray.get."""
        if out is None:
            return np.array(self._host_view, order=order, copy=True)
        out[...] = self._host_view
        return out

    def __repr__(self) -> str:
        return f"device_array({self._host_view!r})"

    # --- numpy protocols -----------------------------------------------------------------------------
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        _record(f"{ufunc.__name__}.{method}" if method != "__call__" else ufunc.__name__)
        if "out" in kwargs:
            kwargs["out"] = tuple(_operand(o) for o in kwargs["out"])
        return wrap(getattr(ufunc, method)(*(_operand(x) for x in inputs), **kwargs))

    def __array_function__(self, func, types, args, kwargs):
        _record(func.__name__)
        return wrap(func(*_device_args(args), **_device_args(kwargs)))

    # --- array behaviour -----------------------------------------------------------------------------
    @property
    def real(self):
        return wrap(self._host_view.real)

    @real.setter
    def real(self, value):
        self._host_view.real = _operand(value)

    @property
    def imag(self):
        return wrap(self._host_view.imag)

    @imag.setter
    def imag(self, value):
        self._host_view.imag = _operand(value)

    def __getattr__(self, name):
        if name.startswith("__"):   # no __array_interface__ and friends: numpy must not look inside
            raise AttributeError(name)
        value = getattr(self._host_view, name)
        if callable(value):
            return lambda *args, **kwargs: wrap(value(*_device_args(args), **_device_args(kwargs)))
        return wrap(value) if isinstance(value, np.ndarray) else value

    def __getitem__(self, key):
        return wrap(self._host_view[_index(key)])

    def __setitem__(self, key, value):
        self._host_view[_index(key)] = _operand(value, allow_host=True)

    def __len__(self) -> int:
        return len(self._host_view)

    def __iter__(self):
        return (wrap(row) for row in self._host_view)

    def __bool__(self) -> bool:
        return bool(self._host_view)

    def __int__(self) -> int:
        return int(self._host_view)

    def __float__(self) -> float:
        return float(self._host_view)

    def __complex__(self) -> complex:
        return complex(self._host_view)

    def __index__(self) -> int:
        return operator.index(self._host_view)


def _binary(op):
    def forward(self, other):
        return wrap(op(self._host_view, _operand(other)))

    def reflected(self, other):
        return wrap(op(_operand(other), self._host_view))

    def in_place(self, other):
        self._host_view = op(self._host_view, _operand(other))
        return self
    return forward, reflected, in_place


for _name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or", "xor",
              "lshift", "rshift"):
    _forward, _reflected, _in_place = _binary(getattr(operator, f"__{_name}__"))
    setattr(DeviceArray, f"__{_name}__", _forward)
    setattr(DeviceArray, f"__r{_name}__", _reflected)
    setattr(DeviceArray, f"__i{_name}__", _in_place)
for _name in ("lt", "le", "eq", "ne", "gt", "ge"):
    setattr(DeviceArray, f"__{_name}__", _binary(getattr(operator, f"__{_name}__"))[0])
for _name in ("neg", "pos", "abs", "invert"):
    setattr(DeviceArray, f"__{_name}__", (lambda op: lambda self: wrap(op(self._host_view)))(
        getattr(operator, f"__{_name}__")))


def wrap(value):
    """Results of numpy calls as the device would give them (arrays and numpy scalars -> device
    arrays; tuples and lists element-wise)."""
    if isinstance(value, np.ndarray):
        return DeviceArray(value)
    if isinstance(value, np.generic):
        return DeviceArray(np.asarray(value))
    if isinstance(value, tuple) and hasattr(value, "_fields"):    # linalg's named results (QRResult)
        return type(value)(*(wrap(v) for v in value))
    if isinstance(value, (tuple, list)):
        return type(value)(wrap(v) for v in value)
    return value


def _operand(value, allow_host: bool = False):
    """An argument of a ufunc or operator: device arrays unwrapped, scalars as they are, host
    arrays refused (as cupy refuses them)."""
    if isinstance(value, DeviceArray):
        return value._host_view
    if isinstance(value, np.ndarray) and not allow_host:
        raise _unsupported(value)
    return value


def _device_args(args):
    """Arguments of an array function or method: device arrays unwrapped, also inside lists and
    tuples; a host ndarray among them is refused."""
    if isinstance(args, dict):
        return {key: _device_args(value) for key, value in args.items()}
    if isinstance(args, (tuple, list)):
        return type(args)(_device_args(a) for a in args)
    return _operand(args)


def _index(key):
    """An index: device arrays unwrapped (host integer arrays are accepted, as cupy accepts them)."""
    if isinstance(key, tuple):
        return tuple(_index(k) for k in key)
    return key._host_view if isinstance(key, DeviceArray) else key


# Functions that take host data and return device arrays (uploads): host arrays are welcome here.
_UPLOADS = frozenset({"asarray", "array", "asanyarray", "ascontiguousarray", "asfortranarray"})
NAMES_USED: set[str] = set()
_names_lock = threading.Lock()


def _record(name: str) -> None:
    with _names_lock:
        NAMES_USED.add(name)


class _UfuncProxy:
    """A numpy ufunc used as cupy's: calls and its methods take and give device arrays."""

    def __init__(self, ufunc, prefix: str):
        self._ufunc, self._prefix = ufunc, prefix
        self.__name__ = ufunc.__name__

    def __call__(self, *args, **kwargs):
        return wrap(self._ufunc(*_device_args(args), **_device_args(kwargs)))

    def __getattr__(self, method):
        _record(f"{self._prefix}{self.__name__}.{method}")
        bound = getattr(self._ufunc, method)
        if not callable(bound):
            return bound
        if method == "at":
            return self._at
        return lambda *args, **kwargs: wrap(bound(*_device_args(args), **_device_args(kwargs)))

    def _at(self, target, indices, values=None):
        accepted = _AT_DTYPES.get(self.__name__, ())
        if np.dtype(target.dtype).str[1:] not in accepted:
            raise TypeError(f"cupy.{self.__name__}.at only supports {', '.join(sorted(accepted)) or 'no'} "
                            f"as data type (the strict double refuses {np.dtype(target.dtype)})")
        args = (target, indices) if values is None else (target, indices, values)
        self._ufunc.at(*_device_args(args))


# cupy 13's ufunc.at dtypes (its scatter kernels use CUDA atomics); later versions accept more.
_AT_DTYPES = {
    "add": {"i4", "u4", "u8", "f2", "f4", "f8"},
    "subtract": {"i4", "u4"},
    "maximum": {"i4", "u4", "u8", "f4", "f8"},
    "minimum": {"i4", "u4", "u8", "f4", "f8"},
    "bitwise_and": {"i4", "i8", "u4", "u8"},
    "bitwise_or": {"i4", "i8", "u4", "u8"},
    "bitwise_xor": {"i4", "i8", "u4", "u8"},
}


class StrictNumpy:
    """The array module kernels see on the strict GPU double (named "cupy", like the real one)."""

    __name__ = "cupy"
    ndarray = DeviceArray

    def __init__(self, module=np, prefix: str = ""):
        self._module = module
        self._prefix = prefix

    def asnumpy(self, value, stream=None, order="C", out=None, blocking=True) -> np.ndarray:
        """A host copy of a device array (host arrays pass through), as cupy.asnumpy."""
        if isinstance(value, DeviceArray):
            return value.get(out=out)
        return np.asarray(value)

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        value = getattr(self._module, name)
        _record(self._prefix + name)
        if isinstance(value, np.ufunc):
            return _UfuncProxy(value, self._prefix)
        if self._prefix == "linalg." and name == "cholesky":
            value = _cholesky_without_raising
        if isinstance(value, type(np)):                      # a submodule: xp.lib, xp.linalg, ...
            return StrictNumpy(value, f"{self._prefix}{name}.")
        if callable(value) and not isinstance(value, type):  # a function (dtypes pass through)
            return _function(name, value)
        return value


def _cholesky_without_raising(a):
    """cupy's cholesky: no LinAlgError; a matrix that is not positive definite gets NaN on the
    diagonal from where its factorization failed (its status is not checked)."""
    try:
        return np.linalg.cholesky(a)
    except np.linalg.LinAlgError:
        pass
    n = a.shape[-1]
    flat = a.reshape((-1, n, n))
    factors = np.empty_like(flat)
    for k, matrix in enumerate(flat):
        try:
            factors[k] = np.linalg.cholesky(matrix)
        except np.linalg.LinAlgError:
            factors[k] = np.tril(matrix)
            factors[k][np.diag_indices(n)] = np.nan
    return factors.reshape(a.shape)


def _function(name: str, function):
    uploads = name in _UPLOADS
    stable = name in ("argsort", "sort")

    def call(*args, **kwargs):
        if stable:
            kwargs["kind"] = "stable"
        if uploads:
            args = tuple(_operand(a, allow_host=True) if not isinstance(a, (list, tuple)) else _upload_list(a)
                         for a in args)
            return wrap(function(*args, **kwargs))
        return wrap(function(*_device_args(args), **_device_args(kwargs)))
    call.__name__ = name
    return call


def _upload_list(values):
    """A (nested) list given to asarray: device scalars inside it are unwrapped."""
    return type(values)(_upload_list(v) if isinstance(v, (list, tuple)) else _operand(v, allow_host=True)
                        for v in values)
