"""Reading arrays from .npy/.npz files (feeds, expected results) without trusting their headers.

An .npz is a zip archive: a few megabytes can decompress to gigabytes, and an .npy header may claim
any shape. Each array's header (dtype, shape) is read first, from the file or straight from the
opened zip member, and checked before a byte of data is decoded: against
limits.current().max_tensor_bytes, against what the graph expects of that feed when known (a
Placeholder's dtype and shape), and object arrays (pickles) are refused. Every problem is a
UsageError (exit 2) naming the file and, in an archive, the key.
"""
from __future__ import annotations

import json
import os
import zipfile
import zlib
from typing import Callable

import numpy as np
from numpy.lib import format as npy_format

from .. import dtypes, limits
from ..dtypes import DType
from ..errors import DftoolError, UsageError
from ..ops.core import FED_INPUT_OPS
from ..shapes import Shape

_NPY_MAGIC = b"\x93NUMPY"
_ZIP_MAGICS = (b"PK\x03\x04", b"PK\x05\x06")
# What a malformed file, archive or member raises while being read.
_READ_ERRORS = (ValueError, OSError, EOFError, zipfile.BadZipFile, zlib.error, NotImplementedError,
                OverflowError, SyntaxError)

# (dtype, shape) a feed must fit, either unknown (None); from the graph, by feed name.
Expectation = Callable[[str], "tuple[DType | None, Shape | None] | None"]


class ArrayHeader:
    """An .npy header: what decoding would produce, known before decoding."""

    __slots__ = ("dtype", "shape", "fortran_order")

    def __init__(self, dtype: np.dtype, shape: tuple[int, ...], fortran_order: bool):
        self.dtype, self.shape, self.fortran_order = dtype, tuple(shape), fortran_order

    @property
    def nbytes(self) -> int:
        count = 1
        for dim in self.shape:
            count *= dim
        return count * self.dtype.itemsize


def _read_header(fp) -> ArrayHeader:
    version = npy_format.read_magic(fp)
    if version == (1, 0):
        shape, fortran, dtype = npy_format.read_array_header_1_0(fp)
    elif version in ((2, 0), (3, 0)):  # 3.0 differs only in allowing UTF-8 field names
        shape, fortran, dtype = npy_format.read_array_header_2_0(fp)
    else:
        raise ValueError(f".npy format version {version} is not supported")
    return ArrayHeader(dtype, shape, fortran)


def check_header(header: ArrayHeader, where: str, expected: tuple[DType | None, Shape | None] | None = None,
                 feed: str | None = None, cast: bool = False) -> None:
    """UsageError naming `where` (the file, and key) unless the array described may be decoded:
    no objects (pickles), within max_tensor_bytes, and fitting the `expected` dtype and shape of
    `feed` when given (worded as the session words a feed that does not fit; see dtype_fits for
    `cast`)."""
    if header.dtype.hasobject:
        raise UsageError(f"{where}: holds Python objects (a pickle), which are not accepted",
                         hint="save strings as a fixed-width array (e.g. numpy.array(values, dtype='S'))")
    bound = limits.current().max_tensor_bytes
    if header.nbytes > bound:
        raise UsageError(f"{where}: {header.dtype}{list(header.shape)} would take "
                         f"{limits.describe_bytes(header.nbytes)}, above the tensor size limit of "
                         f"{limits.describe_bytes(bound)}",
                         hint="raise it with --max-tensor-bytes or DFTOOL_MAX_TENSOR_BYTES if the file is trusted")
    if expected is None:
        return
    want_dtype, want_shape = expected
    label = f"feed '{feed}'" if feed else where
    if want_shape is not None and not Shape.of(want_shape).is_compatible_with(Shape(header.shape)):
        raise UsageError(f"{label}: shape {list(header.shape)} does not fit {Shape.of(want_shape)} ({where})")
    if want_dtype is not None and not dtype_fits(header.dtype, want_dtype, cast):
        castable = not cast and dtype_fits(header.dtype, want_dtype, True)
        raise UsageError(f"{label}: dtype {header.dtype} does not match the expected {want_dtype.base} ({where})",
                         hint=f"save the array as {want_dtype.base.numpy}"
                              + (", or convert it on the way in with --cast-feeds" if castable else ""))


def dtype_fits(stored: np.dtype, want: DType, cast: bool = False) -> bool:
    """Whether an array of `stored` dtype can be fed where `want` is expected: the same dtype, a
    float that converts without loss (float16 for float32), an integer for an integer (the session
    checks that the values fit), text for string. With `cast` (--cast-feeds), also what numpy's
    same-kind casting allows: float64 for float32 (rounded), integers for floats, bool for numbers.
    A float64 array for a float32 input is refused without `cast`: silently rounding what the
    user saved is a surprise (numpy's default float is float64)."""
    want = want.base
    if want is dtypes.INVALID or want.numpy is None:
        return True
    if stored == want.numpy:
        return True
    if want is dtypes.string:
        return stored.kind in "SU"
    if stored.kind in "SUOV":
        return False
    try:
        got = dtypes.from_numpy(stored)
    except UsageError:
        return False
    if got.is_integer and want.is_integer:
        return True
    if got.is_floating and want.is_floating and np.can_cast(stored, want.numpy, "safe"):
        return True
    return cast and np.can_cast(stored, want.numpy, "same_kind")


def _converted(array: np.ndarray, expected, cast: bool) -> np.ndarray:
    """With `cast`, an array in the expected dtype where only --cast-feeds allows its own."""
    want = expected[0].base if expected is not None and expected[0] is not None else None
    if not cast or want is None or want.numpy is None or dtype_fits(array.dtype, want):
        return array
    return array.astype(want.numpy, casting="same_kind")


def _decode(open_member) -> np.ndarray:
    """Read the array after its header was checked (the member is opened again from the start)."""
    with open_member() as fp:
        return npy_format.read_array(fp, allow_pickle=False)


def _kind(path: str, what: str) -> str:
    try:
        with open(path, "rb") as fp:
            magic = fp.read(6)
    except FileNotFoundError:
        raise UsageError(f"{what} '{path}': no such file") from None
    except IsADirectoryError:
        raise UsageError(f"{what} '{path}': is a directory, not an .npy/.npz file") from None
    except OSError as exc:
        raise UsageError(f"{what} '{path}': cannot read it ({exc.strerror or exc})") from None
    if magic == _NPY_MAGIC:
        return "npy"
    if magic[:4] in _ZIP_MAGICS:
        return "npz"
    raise UsageError(f"{what} '{path}': not a readable .npy/.npz file (no .npy or zip signature)")


def _failure(where: str, exc: BaseException, what: str = "array") -> UsageError:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return UsageError(f"{where}: not a readable {what} ({text})")


def read_npy(path: str, what: str, expected=None, feed: str | None = None, cast: bool = False) -> np.ndarray:
    """The array in an .npy file, its header checked before its data is read."""
    where = f"{what} '{path}'"
    if _kind(path, what) != "npy":
        raise UsageError(f"{where} is an .npz archive; expected one .npy array")
    try:
        with open(path, "rb") as fp:
            header = _read_header(fp)
        check_header(header, where, expected, feed, cast)
        return _converted(_decode(lambda: open(path, "rb")), expected, cast)
    except DftoolError:
        raise
    except MemoryError:
        raise UsageError(f"{where}: out of memory reading it") from None
    except _READ_ERRORS as exc:
        raise _failure(where, exc) from None


def npz_headers(path: str, what: str) -> dict[str, ArrayHeader]:
    """key -> header of every array in an .npz archive, reading no data."""
    return _walk_npz(path, what, None, None, decode=False)


def read_npz(path: str, what: str, keys: list[str] | None = None,
             expect: Expectation | None = None, cast: bool = False) -> dict[str, np.ndarray]:
    """The arrays of an .npz archive by key (only `keys`, when given, in the archive's order);
    each member's header is checked (see check_header, with `expect(key)`) before decompressing
    its data, so a zip bomb costs nothing."""
    return _walk_npz(path, what, keys, expect, decode=True, cast=cast)


def _walk_npz(path: str, what: str, keys, expect, decode: bool, cast: bool = False) -> dict:
    if _kind(path, what) != "npz":
        raise UsageError(f"{what} '{path}': expected an .npz archive of named arrays")
    arrays: dict = {}
    key = None
    try:
        with zipfile.ZipFile(path) as archive:
            members = archive.namelist()
            for member in members:
                key = member[:-4] if member.endswith(".npy") else member
                if keys is not None and key not in keys:
                    continue
                where = f"{what} '{path}' key '{key}'"
                if not member.endswith(".npy"):
                    raise UsageError(f"{where}: not an .npy array")
                with archive.open(member) as fp:
                    header = _read_header(fp)
                if not decode:
                    arrays[key] = header
                    continue
                expected = expect(key) if expect else None
                check_header(header, where, expected, key if expect else None, cast)
                arrays[key] = _converted(_decode(lambda: archive.open(member)), expected, cast)
    except DftoolError:
        raise
    except MemoryError:
        raise UsageError(f"{what} '{path}': out of memory reading it") from None
    except _READ_ERRORS as exc:
        if key is None:
            raise _failure(f"{what} '{path}'", exc, ".npz archive") from None
        raise _failure(f"{what} '{path}' key '{key}'", exc) from None
    return arrays


def collect_feeds(feed_pairs: tuple[str, ...] | list[str], feeds_file: str | None,
                  expect: Expectation | None = None, cast: bool = False) -> dict[str, np.ndarray]:
    """--feeds FILE.npz first, then each --feed NAME=FILE.npy or NAME=VALUE (later ones win);
    `expect(name)` gives what the graph expects of a feed, checked against each header before
    decoding; `cast` (--cast-feeds) converts what dtype_fits allows only with it."""
    feeds: dict[str, np.ndarray] = {}
    if feeds_file:
        feeds.update(read_npz(feeds_file, "--feeds", expect=expect, cast=cast))
    for pair in feed_pairs:
        name, sep, path = pair.partition("=")
        if not sep or not name or not path:
            raise UsageError(f"--feed '{pair}': expected NAME=FILE.npy or NAME=VALUE")
        what = f"--feed {name}"
        expected = expect(name) if expect else None
        if _is_inline(path):
            feeds[name] = inline_value(path, what, expected, name)
            continue
        if _kind(path, what) == "npz":
            raise UsageError(f"--feed {name}: '{path}' is an .npz archive; use --feeds for archives")
        feeds[name] = read_npy(path, what, expected, name, cast)
    return feeds


def _is_inline(text: str) -> bool:
    """A value written on the command line (`60`, `-1.5`, `[1,2,3]`, `true`, `"text"`), not a
    file name: an existing file always wins, and names ending in .npy/.npz are files."""
    if text.endswith((".npy", ".npz")) or os.path.exists(text):
        return False
    stripped = text.strip()
    return bool(stripped) and (stripped[0] in "[-+.\"0123456789" or stripped.lower() in ("true", "false",
                                                                                        "nan", "inf", "-inf"))


def inline_value(text: str, what: str, expected=None, feed: str | None = None) -> np.ndarray:
    """An inline --feed value as an array of the expected dtype (JSON numbers, booleans, strings
    and nested lists; nan and inf too). Integers fill float inputs; a fraction for an integer
    input, ragged lists and values the dtype cannot hold are usage errors naming the feed."""
    where = f"{what} '{text}'"
    try:
        value = json.loads(text.replace("True", "true").replace("False", "false"),
                           parse_constant=lambda word: float(word))   # NaN, Infinity, -Infinity
    except RecursionError:
        raise UsageError(f"{what}: the value is nested too deeply") from None
    except ValueError:
        lowered = text.strip().lower()
        if lowered not in ("nan", "inf", "-inf"):
            raise UsageError(f"{where}: neither a file nor a value (a number, true/false, \"text\" or a "
                             f"[list] of them)") from None
        value = float(lowered)
    want = expected[0].base if expected is not None and expected[0] is not None else None
    try:
        if want is not None and want.numpy is not None and want is not dtypes.string:
            array = np.asarray(value)
            if array.dtype.kind == "f" and want.is_integer:
                raise UsageError(f"{where}: has fractions, but feed '{feed}' is {want.name}")
            if (array.dtype.kind == "b") != want.is_bool:
                raise UsageError(f"{where}: feed '{feed}' is {want.name}; write "
                                 + ("true or false" if want.is_bool else "numbers"))
            converted = np.asarray(value, dtype=want.numpy)
            if array.dtype.kind in "iu" and not np.array_equal(converted.astype(array.dtype), array):
                raise UsageError(f"{where}: does not fit {want.name}")
            array = converted
        elif want is dtypes.string:
            array = np.asarray(value, dtype=object)
            if any(not isinstance(v, str) for v in array.reshape(-1)):
                raise UsageError(f"{where}: feed '{feed}' is a string; write \"text\"")
            array = np.asarray([v.encode() for v in array.reshape(-1)], dtype=object).reshape(array.shape)
        else:   # nothing known: TensorFlow's defaults for Python values
            array = np.asarray(value)
            if array.dtype == np.float64:
                array = array.astype(np.float32)
            elif array.dtype == np.int64:
                array = array.astype(np.int32)
    except UsageError:
        raise
    except OverflowError:
        raise UsageError(f"{where}: does not fit {want.name if want is not None else 'its dtype'}") from None
    except (ValueError, TypeError) as exc:
        raise UsageError(f"{where}: not an array ({' '.join(str(exc).split())})") from None
    if array.dtype.kind in "OSU" and want is not dtypes.string:
        raise UsageError(f"{where}: holds text; feed '{feed}' is numeric" if want is not None
                         else f"{where}: holds text")
    if expected is not None and expected[1] is not None and \
            not Shape.of(expected[1]).is_compatible_with(Shape(array.shape)):
        raise UsageError(f"feed '{feed}': shape {list(array.shape)} does not fit {Shape.of(expected[1])} ({where})")
    return array


def placeholder_expectation(resolve: Callable) -> Expectation:
    """An Expectation from a name resolver (Session.resolve): a fed Placeholder's declared dtype
    and shape, or the output dtype of another fed tensor; None for names that resolve to
    nothing (the session reports those)."""
    def expect(name: str):
        try:
            ref = resolve(name, "feed")
            dtype = ref.node.spec.output_dtypes(ref.node)[ref.index] if ref.node.spec else None
        except (DftoolError, KeyError, IndexError, TypeError, ValueError):
            return None
        shape = ref.node.attr("shape", None) if ref.node.op in FED_INPUT_OPS else None
        return (dtype if isinstance(dtype, DType) else None), (shape if isinstance(shape, Shape) else None)
    return expect
