"""Mars-style tiled tensors with numpy's names: ``import ares.tensor as at``.

A :class:`Tensor` is a lazy expression with a shape, a dtype and a chunk grid. Nothing is
computed until ``execute()`` or ``fetch()`` (or ``np.asarray``): then the expression is
tiled into chunk tasks, fused, and run depth-first in Rust worker processes.

Supported dtypes: ``bool``, ``int8``–``int64``, ``uint8``–``uint64``, ``float32``,
``float64``. Where numpy and the array API standard differ, this module follows numpy.
Anything it does not support raises ``NotImplementedError`` naming it (also an
``AttributeError``, so ``hasattr`` works); it never computes something else.
"""

from __future__ import annotations

import builtins
import math
import numbers
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np

from .. import _native, get_default_session

# The dtypes tensors hold, by numpy's names (each is also a name of this module).
_SUPPORTED = (
    "bool",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float32",
    "float64",
    "complex64",
    "complex128",
)

__all__ = [
    "Tensor",
    "pow",
    "tensor",
    "array",
    "asarray",
    "ones",
    "zeros",
    "empty",
    "full",
    "ones_like",
    "zeros_like",
    "empty_like",
    "full_like",
    "arange",
    "linspace",
    "eye",
    "identity",
    "sqrt",
    "exp",
    "log",
    "sin",
    "cos",
    "abs",
    "absolute",
    "negative",
    "logical_not",
    "logical_and",
    "logical_or",
    "invert",
    "add",
    "subtract",
    "multiply",
    "divide",
    "true_divide",
    "power",
    "maximum",
    "minimum",
    "less",
    "less_equal",
    "greater",
    "greater_equal",
    "equal",
    "not_equal",
    "square",
    "sum",
    "prod",
    "mean",
    "std",
    "var",
    "min",
    "max",
    "amin",
    "amax",
    "argmin",
    "argmax",
    "any",
    "all",
    "matmul",
    "dot",
    "tensordot",
    "transpose",
    "reshape",
    "ravel",
    "expand_dims",
    "squeeze",
    "concatenate",
    "stack",
    "vstack",
    "hstack",
    "where",
    "clip",
    "rechunk",
    "linalg",
    "fft",
    "random",
    "bool_",
    *_SUPPORTED,
    "csingle",
    "cdouble",
    "newaxis",
    "int_",
    "double",
    "single",
    "pi",
    "e",
    "inf",
    "nan",
    "floor_divide",
    "remainder",
    "mod",
    "arctan2",
    "atan2",
    "hypot",
    "copysign",
    "logaddexp",
    "bitwise_and",
    "bitwise_or",
    "bitwise_xor",
    "bitwise_invert",
    "bitwise_not",
    "left_shift",
    "right_shift",
    "bitwise_left_shift",
    "bitwise_right_shift",
    "logical_xor",
    "tan",
    "sinh",
    "cosh",
    "tanh",
    "arcsin",
    "asin",
    "arccos",
    "acos",
    "arctan",
    "atan",
    "arcsinh",
    "asinh",
    "arccosh",
    "acosh",
    "arctanh",
    "atanh",
    "expm1",
    "log1p",
    "log2",
    "log10",
    "floor",
    "ceil",
    "trunc",
    "sign",
    "positive",
    "isnan",
    "isinf",
    "isfinite",
    "signbit",
    "isclose",
    "allclose",
    "array_equal",
    "rint",
]

int_ = np.int64
double = np.float64
single = np.float32
pi = np.pi
e = np.e
inf = np.inf
nan = np.nan
bool_ = np.bool_
int8 = np.int8
int16 = np.int16
int32 = np.int32
int64 = np.int64
uint8 = np.uint8
uint16 = np.uint16
uint32 = np.uint32
uint64 = np.uint64
float32 = np.float32
float64 = np.float64
complex64 = np.complex64
complex128 = np.complex128
csingle = np.complex64
cdouble = np.complex128
bool = np.bool_  # noqa: A001 - the array API's name for the dtype
newaxis = None

# Target bytes per chunk when the caller gives no chunk_size (Dask picks 128 MiB; tasks
# here are cheaper, and smaller chunks spread a mid-sized array over every worker).
_AUTO_CHUNK_BYTES = 16 << 20


def _check_out(name: str, out: Any, kw: dict) -> None:
    """numpy's reductions pass ``out`` (None) and may pass ``where``/``initial``."""
    if out is not None:
        raise NotImplementedError(f"{name} with out=: tensors are immutable; use the result")
    for k, v in kw.items():
        if v is not None and not (k == "where" and v is True):
            raise NotImplementedError(f"{name} with {k}=")


class Unsupported(NotImplementedError, AttributeError):
    """What numpy has and this module does not build: a NotImplementedError naming it,
    and an AttributeError so that ``getattr(t, name, default)`` and numpy's own
    functions (which convert through ``__array__``) still work."""


def _dtype_name(dtype: Any) -> str:
    name = np.dtype(dtype).name
    if name not in _SUPPORTED:
        raise NotImplementedError(f"dtype {name} is not supported (supported: {', '.join(_SUPPORTED)})")
    return name


def _shape_of(shape: Any) -> Tuple[int, ...]:
    if isinstance(shape, numbers.Integral):
        shape = (int(shape),)
    out = tuple(int(d) for d in shape)
    if builtins.any(d < 0 for d in out):
        raise ValueError(f"negative dimensions are not allowed: {out}")
    return out


def _auto_chunks(shape: Tuple[int, ...], itemsize: int) -> list:
    """Chunk sizes of at most ``_AUTO_CHUNK_BYTES``, halving the longest chunk edge."""
    chunks = [builtins.max(d, 1) for d in shape]
    while math.prod(chunks) * itemsize > _AUTO_CHUNK_BYTES:
        i = builtins.max(range(len(chunks)), key=lambda k: chunks[k])
        if chunks[i] == 1:
            break
        chunks[i] = (chunks[i] + 1) // 2
    return chunks


def _chunks_of(chunk_size: Any, shape: Tuple[int, ...], itemsize: int) -> list:
    """``chunk_size`` as one positive size per dimension (an int applies to all)."""
    if chunk_size is None:
        return _auto_chunks(shape, itemsize)
    if isinstance(chunk_size, numbers.Real):
        chunk_size = (int(chunk_size),) * len(shape)
    sizes = list(chunk_size)
    if len(sizes) != len(shape):
        raise ValueError(f"chunk_size {tuple(sizes)} has {len(sizes)} entries for {len(shape)} dimensions")
    out = []
    for s, d in zip(sizes, shape):
        if isinstance(s, (tuple, list)):
            raise NotImplementedError("chunk_size with explicit uneven chunks; give one size per dimension")
        s = d if s is None or s == -1 else int(s)
        if s == 0 and d == 0:
            s = 1  # an empty dimension is one empty chunk whatever the size asked
        if s <= 0:
            raise ValueError(f"chunk sizes must be positive, got {tuple(sizes)}")
        out.append(builtins.max(builtins.min(s, builtins.max(d, 1)), 1))
    return out


def _axis_of(axis: Any, ndim: int) -> Optional[list]:
    """numpy's ``axis`` (None, an int or a tuple, negatives from the end) as a list."""
    if axis is None:
        return None
    axes = [axis] if isinstance(axis, numbers.Integral) else list(axis)
    out = []
    for a in axes:
        a = int(a)
        if not -ndim <= a < ndim:
            raise np.exceptions.AxisError(a, ndim)
        out.append(a % ndim if ndim else 0)
    if len(set(out)) != len(out):
        raise ValueError("duplicate value in 'axis'")
    return out


def _scalar(v: Any) -> Any:
    if isinstance(v, np.generic):
        return v.item()
    return v


def _is_scalar(v: Any) -> bool:
    return isinstance(v, (builtins.bool, numbers.Number, np.generic))


def _uniform(chunks: Sequence[Optional[int]], n: Optional[int]) -> bool:
    """Whether a dimension's chunks are one size repeated, then a remainder."""
    if n is None or len(chunks) <= 1:
        return True
    first = chunks[0]
    return builtins.all(c == first for c in chunks[:-1]) and chunks[-1] <= first


class Tensor:
    """A lazy, chunked n-dimensional array with numpy's operators and methods.

    Build tensors with the functions of :mod:`ares.tensor`; compute them with
    :meth:`execute` / :meth:`fetch` or ``np.asarray(t)``.
    """

    # `_session`: the session that computed the tensor (None until one does).
    __slots__ = ("_t", "_session", "__weakref__")

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        """numpy's ufuncs on tensors (``np.exp(t)``, ``np_array + t``,
        ``np.add.reduce(t)``) build tensors here; one without a tiled form here raises
        ``NotImplementedError`` naming it."""
        name = ufunc.__name__
        if method == "reduce" and name in _UFUNC_REDUCTIONS and len(inputs) == 1:
            axis = kwargs.pop("axis", 0)  # ufunc.reduce's default, unlike sum's
            keepdims = kwargs.pop("keepdims", False)
            given = [k for k, v in kwargs.items() if v is not None]
            if given:
                raise NotImplementedError(f"numpy.{name}.reduce(..., {given[0]}=...) of an ares tensor")
            return _UFUNC_REDUCTIONS[name](inputs[0], axis=axis, keepdims=keepdims)
        if method != "__call__":
            raise NotImplementedError(f"numpy.{name}.{method} of an ares tensor (use the ares.tensor functions)")
        given = [k for k, v in kwargs.items() if v is not None]
        if given:
            raise NotImplementedError(f"numpy.{name}(..., {given[0]}=...) of an ares tensor")
        f = _UFUNCS.get(name)
        if f is None:
            raise NotImplementedError(f"numpy.{name} of an ares tensor is not supported (no tiled form here yet)")
        return f(*inputs)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        """numpy's functions on tensors (``np.concatenate([t, t])``,
        ``np.where(t > 0, t, 0)``) build lazy tensors with this module's function of the
        same name. One it lacks raises ``NotImplementedError`` naming it: never a silent
        computation in numpy on fetched data (``np.asarray(t)`` fetches, on purpose)."""
        if not builtins.all(issubclass(t, (Tensor, np.ndarray)) for t in types):
            return NotImplemented
        f = _array_function(func)
        if f is None:
            where = func.__module__ if func.__module__.startswith("numpy.") else "numpy"
            raise Unsupported(
                f"{where}.{func.__name__} of an ares tensor is not supported (no tiled form here yet); "
                "np.asarray(t) fetches the tensor to compute it in numpy"
            )
        return f(*args, **kwargs)

    def __init__(self, native: "_native.NativeTensor") -> None:
        self._t = native
        self._session: Any = None

    def __array_namespace__(self, *, api_version: Optional[str] = None) -> Any:
        """The Array API namespace of tensors: :mod:`ares.tensor`."""
        if api_version is not None and api_version not in ("2021.12", "2022.12", "2023.12"):
            raise ValueError(f"Array API version {api_version!r} is not supported (2023.12 and earlier are)")
        import ares.tensor

        return ares.tensor

    @property
    def device(self) -> str:
        """Where the tensor lives: ``"cpu"`` (the cluster's CPUs)."""
        return "cpu"

    def to_device(self, device: Any, /, *, stream: Any = None) -> "Tensor":
        """The tensor itself on ``"cpu"``, its only device."""
        _check_device(device)
        return self

    @property
    def mT(self) -> "Tensor":
        """Each matrix transposed (the last two axes exchanged)."""
        return matrix_transpose(self)

    def __dlpack__(self, *, stream: Any = None, max_version: Any = None, dl_device: Any = None, copy: Any = None) -> Any:
        """Computes the tensor and exports it by DLPack (through the numpy array ``fetch``
        gives; a read-only view of the store is copied first for older consumers)."""
        a = self.fetch()
        kw = {k: v for k, v in (("max_version", max_version), ("dl_device", dl_device), ("copy", copy)) if v is not None}
        try:
            return a.__dlpack__(stream=stream, **kw)
        except BufferError:
            return a.copy().__dlpack__(stream=stream, **kw)

    def __dlpack_device__(self) -> Tuple[int, int]:
        return (1, 0)  # kDLCPU, device 0

    # ------------------------------------------------------------ description

    @property
    def shape(self) -> Tuple[int, ...]:
        """The shape; a length known only after running (a boolean mask's result) is
        ``nan``, as in Mars and Dask."""
        return tuple(math.nan if d is None else d for d in self._t.shape)

    @property
    def dtype(self) -> np.dtype:
        """The numpy dtype."""
        return np.dtype(self._t.dtype)

    @property
    def ndim(self) -> int:
        """Number of dimensions."""
        return len(self._t.shape)

    @property
    def size(self) -> int:
        """Number of elements (``nan`` if a length is not known yet)."""
        s = self.shape
        return math.nan if builtins.any(isinstance(d, float) for d in s) else math.prod(s)

    @property
    def nbytes(self) -> int:
        """Bytes the elements take."""
        return self.size * self.dtype.itemsize

    @property
    def itemsize(self) -> int:
        """Bytes per element."""
        return self.dtype.itemsize

    @property
    def chunks(self) -> Tuple[Tuple[int, ...], ...]:
        """Chunk lengths along each dimension (Dask's ``chunks``)."""
        return tuple(tuple(math.nan if c is None else c for c in dim) for dim in self._t.chunks)

    @property
    def real(self) -> "Tensor":
        """The real part (a real tensor itself)."""
        return real(self)

    @property
    def imag(self) -> "Tensor":
        """The imaginary part (zeros for a real tensor)."""
        return imag(self)

    def conj(self) -> "Tensor":
        """The complex conjugate."""
        return conj(self)

    conjugate = conj

    @property
    def T(self) -> "Tensor":
        """The transpose (axes reversed)."""
        return self.transpose()

    def __len__(self) -> int:
        if self.ndim == 0:
            raise TypeError("len() of unsized object")
        n = self.shape[0]
        if isinstance(n, float):
            raise TypeError("len() of a tensor whose length is known only after it runs; execute it first")
        return n

    def _header(self) -> str:
        def fmt(s: Tuple) -> str:
            return "(" + ", ".join(str(x) for x in s) + ("," if len(s) == 1 else "") + ")"

        chunksize = tuple(c[0] if c else 0 for c in self.chunks)
        n = math.prod(len(c) for c in self.chunks)
        return f"ares.Tensor<shape={fmt(self.shape)}, dtype={self.dtype.name}, chunksize={fmt(chunksize)}, chunks={n}>"

    def __repr__(self) -> str:
        """The shape, dtype and chunks; once computed, the values as numpy shows them
        too (elided when large, fetching only the elements shown)."""
        shown = self._shown_values(np.array_repr)
        if shown is None:
            return self._header()
        body = shown[len("array(") :].replace("\n" + " " * len("array("), "\n" + " " * len("tensor("))
        return f"{self._header()}\ntensor({body}"

    def __str__(self) -> str:
        shown = self._shown_values(np.array_str)
        return self._header() if shown is None else shown

    def _shown_values(self, show: Any) -> Optional[str]:
        """``show`` (numpy's ``array_repr`` or ``array_str``) of the values, if the tensor
        was computed in an open session. Past numpy's print threshold only the edge
        elements numpy shows are fetched, plus one placeholder per elided run, which numpy
        (made to summarise) prints as ``...``."""
        s = self._session
        if s is None or not s.is_computed(self) or builtins.any(isinstance(d, float) for d in self.shape):
            return None
        opts = np.get_printoptions()
        if self.size <= opts["threshold"]:
            return show(s.fetch(self, show_progress=False))
        edge = opts["edgeitems"]
        t = self
        for axis, n in enumerate(self.shape):
            if n > 2 * edge:
                t = concatenate([t._take_range(axis, 0, edge + 1), t._take_range(axis, n - edge, n)], axis=axis)
        a = s.fetch(t, show_progress=False)
        with np.printoptions(threshold=builtins.max(builtins.min(opts["threshold"], a.size - 1), 0)):
            # numpy (2.2+) names the shape of what it summarised: the tensor's, not the edges'.
            return show(a).replace(f"shape={a.shape}", f"shape={self.shape}")

    def _take_range(self, axis: int, start: int, stop: int) -> "Tensor":
        index = [slice(None)] * self.ndim
        index[axis] = slice(start, stop)
        return self[tuple(index)]

    # ------------------------------------------------------------ running

    def _running_session(self, session: Any) -> Any:
        """``session``, else the one that computed the tensor (an error if closed), else
        the default session."""
        if session is not None:
            return session
        if self._session is not None:
            self._session._open()  # SessionClosedError names it
            return self._session
        return get_default_session()

    def execute(self, session: Any = None, show_progress: Optional[bool] = None) -> "Tensor":
        """Computes the tensor (in ``session``; by default the session that computed it
        before, else the default session) and keeps its chunks in the store while it
        lives. Returns itself. Raises :class:`ares.SessionClosedError` if the session
        that computed it is closed."""
        self._running_session(session).execute(self, show_progress=show_progress)
        return self

    def fetch(self, session: Any = None, show_progress: Optional[bool] = None) -> np.ndarray:
        """Computes the tensor if needed (as :meth:`execute`) and returns it as a numpy
        array; a progress line shows while chunk tasks run."""
        return self._running_session(session).fetch(self, show_progress=show_progress)

    def to_numpy(self) -> np.ndarray:
        """The same as :meth:`fetch`."""
        return self.fetch()

    def __array__(self, dtype: Any = None, copy: Optional[bool] = None) -> np.ndarray:
        a = self.fetch()
        if dtype is not None and np.dtype(dtype) != a.dtype:
            return a.astype(dtype)  # a new array
        # np.array(t) asks for a copy: a view of the store is read-only.
        return a.copy() if copy or (copy is None and not a.flags.writeable) else a

    def _item(self) -> Any:
        if self.size != 1:
            raise TypeError("only length-1 tensors can be converted to Python scalars")
        return self.fetch().reshape(()).item()

    def __bool__(self) -> bool:
        if self.size != 1:
            raise ValueError(
                "The truth value of an array with more than one element is ambiguous. Use a.any() or a.all()"
            )
        return builtins.bool(self._item())

    def __float__(self) -> float:
        return float(self._item())

    def __complex__(self) -> complex:
        return complex(self._item())

    def __int__(self) -> int:
        return int(self._item())

    def __index__(self) -> int:
        if self.dtype.kind not in "iu":
            raise TypeError("only integer tensors can be used as an index")
        return int(self._item())

    def __format__(self, spec: str) -> str:
        if spec and self.ndim == 0:
            return format(self._item(), spec)
        return format(repr(self), spec)

    def __round__(self, ndigits: Optional[int] = None) -> Any:
        if self.ndim != 0:
            return self.round(ndigits or 0)  # numpy's: an array rounded
        return builtins.round(self._item(), ndigits)

    def sort(self, axis: Any = -1, kind: Any = None, order: Any = None, *, stable: Any = None) -> None:
        """Sorts in place, as numpy's ``ndarray.sort``: the tensor becomes the sorted
        expression (tensors computed from it before keep the old values)."""
        self._t = _sort(self, axis=axis, kind=kind, order=order)._t
        self._session = None

    def argsort(self, axis: Any = -1, kind: Any = None, order: Any = None, *, stable: Any = None) -> "Tensor":
        """The positions that sort the tensor along ``axis`` (stable): see :func:`argsort`."""
        return _argsort(self, axis=axis, kind=kind, order=order)

    def round(self, decimals: int = 0) -> "Tensor":
        """Rounded half to even to ``decimals`` (numpy's ``round``), lazily."""
        return _round(self, decimals)

    def copy(self) -> "Tensor":
        """The same tensor: tensors are immutable expressions, so a copy is itself."""
        return self

    def item(self) -> Any:
        """The only element, as a Python scalar."""
        return self._item()

    def tolist(self) -> Any:
        """The elements as nested Python lists."""
        return self.fetch().tolist()

    def __iter__(self) -> Iterator["Tensor"]:
        for i in range(len(self)):
            yield self[i]

    # ------------------------------------------------------------ element-wise

    def _binary(self, op: str, other: Any, reflected: bool = False) -> "Tensor":
        if isinstance(other, np.generic):
            # numpy 2 (NEP 50): a numpy scalar keeps its dtype in promotion, unlike a
            # Python scalar; it takes part as a 0-d tensor.
            other = tensor(np.asarray(other))
        if _is_scalar(other):
            if op == "pow" and self.dtype.kind in "iu" and isinstance(other, int) and other < 0 and not reflected:
                raise ValueError("Integers to negative integer powers are not allowed.")
            py_int = isinstance(other, int) and not isinstance(other, builtins.bool)
            if py_int and self.dtype.kind in "iub" and op not in _COMPARISONS:
                # numpy 2 (NEP 50): a Python int must fit the tensor's integer dtype (a
                # bool tensor's result is int64).
                info = np.iinfo(self.dtype if self.dtype.kind in "iu" else np.int64)
                if not info.min <= other <= info.max:
                    raise OverflowError(f"Python integer {other} out of bounds for {info.dtype.name}")
            f = self._t.rbinary_scalar if reflected else self._t.binary_scalar
            return Tensor(f(op, other))
        o = _to_tensor(other, like=self)
        # Operands chunked differently are rechunked alike by the library.
        a, b = (o, self) if reflected else (self, o)
        return Tensor(a._t.binary(op, b._t))

    def __add__(self, o: Any) -> "Tensor":
        return self._binary("add", o)

    def __radd__(self, o: Any) -> "Tensor":
        return self._binary("add", o, True)

    def __sub__(self, o: Any) -> "Tensor":
        return self._binary("sub", o)

    def __rsub__(self, o: Any) -> "Tensor":
        return self._binary("sub", o, True)

    def __mul__(self, o: Any) -> "Tensor":
        return self._binary("mul", o)

    def __rmul__(self, o: Any) -> "Tensor":
        return self._binary("mul", o, True)

    def __truediv__(self, o: Any) -> "Tensor":
        return self._binary("div", o)

    def __rtruediv__(self, o: Any) -> "Tensor":
        return self._binary("div", o, True)

    def __pow__(self, o: Any) -> "Tensor":
        return self._binary("pow", o)

    def __rpow__(self, o: Any) -> "Tensor":
        return self._binary("pow", o, True)

    def __divmod__(self, o: Any) -> Tuple["Tensor", "Tensor"]:
        return self._binary("floor_divide", o), self._binary("remainder", o)

    def __rdivmod__(self, o: Any) -> Tuple["Tensor", "Tensor"]:
        return self._binary("floor_divide", o, True), self._binary("remainder", o, True)

    def __floordiv__(self, o: Any) -> "Tensor":
        return self._binary("floor_divide", o)

    def __rfloordiv__(self, o: Any) -> "Tensor":
        return self._binary("floor_divide", o, True)

    def __mod__(self, o: Any) -> "Tensor":
        return self._binary("remainder", o)

    def __rmod__(self, o: Any) -> "Tensor":
        return self._binary("remainder", o, True)

    def __lshift__(self, o: Any) -> "Tensor":
        return self._binary("left_shift", o)

    def __rlshift__(self, o: Any) -> "Tensor":
        return self._binary("left_shift", o, True)

    def __rshift__(self, o: Any) -> "Tensor":
        return self._binary("right_shift", o)

    def __rrshift__(self, o: Any) -> "Tensor":
        return self._binary("right_shift", o, True)

    def __lt__(self, o: Any) -> "Tensor":
        return self._binary("lt", o)

    def __le__(self, o: Any) -> "Tensor":
        return self._binary("le", o)

    def __gt__(self, o: Any) -> "Tensor":
        return self._binary("gt", o)

    def __ge__(self, o: Any) -> "Tensor":
        return self._binary("ge", o)

    def __eq__(self, o: Any) -> "Tensor":  # type: ignore[override]
        return self._binary("eq", o)

    def __ne__(self, o: Any) -> "Tensor":  # type: ignore[override]
        return self._binary("ne", o)

    __hash__ = None  # type: ignore[assignment]

    def __and__(self, o: Any) -> "Tensor":
        return self._binary("bitwise_and", o)

    def __rand__(self, o: Any) -> "Tensor":
        return self._binary("bitwise_and", o, True)

    def __or__(self, o: Any) -> "Tensor":
        return self._binary("bitwise_or", o)

    def __ror__(self, o: Any) -> "Tensor":
        return self._binary("bitwise_or", o, True)

    def __xor__(self, o: Any) -> "Tensor":
        return self._binary("bitwise_xor", o)

    def __rxor__(self, o: Any) -> "Tensor":
        return self._binary("bitwise_xor", o, True)

    def __invert__(self) -> "Tensor":
        return Tensor(self._t.unary("invert"))

    def __neg__(self) -> "Tensor":
        return Tensor(self._t.unary("negative"))

    def __pos__(self) -> "Tensor":
        if self.dtype == np.bool_:
            raise TypeError("positive (+) is not defined for booleans (numpy 2 refuses it too)")
        return self

    def __abs__(self) -> "Tensor":
        return Tensor(self._t.unary("abs"))

    def __matmul__(self, o: Any) -> "Tensor":
        return matmul(self, o)

    def __rmatmul__(self, o: Any) -> "Tensor":
        return matmul(o, self)

    # ------------------------------------------------------------ reductions

    def _reduce(self, op: str, axis: Any, keepdims: bool) -> "Tensor":
        axes = _axis_of(axis, self.ndim)
        if op in ("min", "max", "argmin", "argmax"):
            over = range(self.ndim) if axes is None else axes
            if builtins.any(self.shape[a] == 0 for a in over):
                name = {"min": "minimum", "max": "maximum"}.get(op, op)
                raise ValueError(f"zero-size array to reduction operation {name} which has no identity")
        return Tensor(self._t.reduce(op, axes, builtins.bool(keepdims)))

    def sum(self, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False, **kw: Any) -> "Tensor":
        """Sum over ``axis`` (all by default). Booleans and int32 sum as int64, as in numpy
        (the kernel accumulates them so, without a cast pass)."""
        _check_out("sum", out, kw)
        x = self if dtype is None else self.astype(dtype)
        r = x._reduce("sum", axis, keepdims)
        # The kernel accumulates integers in int64; an explicit dtype is the result's.
        return r if dtype is None else r.astype(dtype, copy=False)

    def prod(self, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False, **kw: Any) -> "Tensor":
        """Product over ``axis``. Booleans and int32 multiply as int64, as in numpy."""
        _check_out("prod", out, kw)
        x = self if dtype is None else self.astype(dtype)
        r = x._reduce("prod", axis, keepdims)
        return r if dtype is None else r.astype(dtype, copy=False)

    def cumsum(self, axis: Optional[int] = None, dtype: Any = None, out: Any = None) -> "Tensor":
        """The running sum along ``axis`` (of the flattened tensor when None), lazily, in
        numpy's dtype (booleans and narrower integers as int64/uint64). Chunks run in
        parallel from the totals before them, so floats may differ from numpy's single
        sequential pass in the last bits."""
        return self._cumulative("cumsum", "sum", axis, dtype, out)

    def cumprod(self, axis: Optional[int] = None, dtype: Any = None, out: Any = None) -> "Tensor":
        """The running product along ``axis`` (as :meth:`cumsum`)."""
        return self._cumulative("cumprod", "prod", axis, dtype, out)

    def _cumulative(self, name: str, op: str, axis: Any, dtype: Any, out: Any) -> "Tensor":
        _check_out(name, out, {})
        x = self if dtype is None else self.astype(dtype)
        if axis is None:
            x, axis = x.reshape(-1), 0
        a = _axis_of(axis, x.ndim)
        if a is None or len(a) != 1:
            raise TypeError(f"{name} takes one integer axis")
        r = Tensor(x._t.cumulative(op, a[0]))
        # An explicit dtype is the result's (the wrap of a wider sum is the same).
        return r if dtype is None else r.astype(dtype)

    def mean(self, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False, **kw: Any) -> "Tensor":
        """Arithmetic mean over ``axis``."""
        _check_out("mean", out, kw)
        x = self if dtype is None else self.astype(dtype)
        r = x._reduce("mean", axis, keepdims)
        # numpy casts the mean to an integer dtype asked for (truncating).
        return r if dtype is None else r.astype(dtype, copy=False)

    def var(
        self,
        axis: Any = None,
        dtype: Any = None,
        out: Any = None,
        ddof: Any = 0,
        keepdims: bool = False,
        *,
        correction: Any = None,
        **kw: Any,
    ) -> "Tensor":
        """Variance over ``axis`` (``ddof`` 0 or 1)."""
        _check_out("var", out, kw)
        return self._moment("var", axis, dtype, _correction(ddof, correction), keepdims)

    def std(
        self,
        axis: Any = None,
        dtype: Any = None,
        out: Any = None,
        ddof: Any = 0,
        keepdims: bool = False,
        *,
        correction: Any = None,
        **kw: Any,
    ) -> "Tensor":
        """Standard deviation over ``axis`` (``ddof`` 0 or 1)."""
        _check_out("std", out, kw)
        return self._moment("std", axis, dtype, _correction(ddof, correction), keepdims)

    def _moment(self, op: str, axis: Any, dtype: Any, ddof: int, keepdims: bool) -> "Tensor":
        x = self if dtype is None else self.astype(dtype)
        if x.dtype == np.bool_:
            x = x.astype(np.float64)  # numpy computes moments of booleans as floats
        if ddof == 0:
            return x._reduce(op, axis, keepdims)
        v = x._reduce("var", axis, keepdims)
        axes = _axis_of(axis, self.ndim)
        n = math.prod(self.shape[a] for a in (axes if axes is not None else range(self.ndim)))
        if isinstance(n, float):
            raise NotImplementedError(f"{op} with ddof={ddof} of a tensor of unknown length")
        # With ddof >= n numpy divides the sum of squares by zero: inf (nan if it is 0).
        v = v * (n / (n - ddof)) if n - ddof > 0 else (v * n) / 0.0
        return v.sqrt() if op == "std" else v

    def min(self, axis: Any = None, out: Any = None, keepdims: bool = False, **kw: Any) -> "Tensor":
        """Minimum over ``axis``."""
        _check_out("min", out, kw)
        return self._reduce("min", axis, keepdims)

    def max(self, axis: Any = None, out: Any = None, keepdims: bool = False, **kw: Any) -> "Tensor":
        """Maximum over ``axis``."""
        _check_out("max", out, kw)
        return self._reduce("max", axis, keepdims)

    def argmin(self, axis: Optional[int] = None, out: Any = None, keepdims: bool = False, **kw: Any) -> "Tensor":
        """Index of the minimum (over the flattened tensor when ``axis`` is None)."""
        _check_out("argmin", out, kw)
        return self._arg("argmin", axis, keepdims)

    def argmax(self, axis: Optional[int] = None, out: Any = None, keepdims: bool = False, **kw: Any) -> "Tensor":
        """Index of the maximum (over the flattened tensor when ``axis`` is None)."""
        _check_out("argmax", out, kw)
        return self._arg("argmax", axis, keepdims)

    def _arg(self, op: str, axis: Optional[int], keepdims: bool) -> "Tensor":
        if axis is not None and not isinstance(axis, numbers.Integral):
            raise TypeError(f"{op}: axis must be an int or None")
        if axis is None and keepdims:
            return self._reduce(op, None, False).reshape((1,) * self.ndim)
        return self._reduce(op, axis, keepdims)

    def any(self, axis: Any = None, out: Any = None, keepdims: bool = False, **kw: Any) -> "Tensor":
        """Whether any element is true (non-zero)."""
        _check_out("any", out, kw)
        return self._reduce("any", axis, keepdims)

    def all(self, axis: Any = None, out: Any = None, keepdims: bool = False, **kw: Any) -> "Tensor":
        """Whether every element is true (non-zero)."""
        _check_out("all", out, kw)
        return self._reduce("all", axis, keepdims)

    # ------------------------------------------------------------ shape

    def reshape(self, *shape: Any, order: str = "C") -> "Tensor":
        """The same elements in row-major order with a new shape (one entry may be -1)."""
        if order != "C":
            raise NotImplementedError("reshape with order other than 'C'")
        if len(shape) == 1 and not isinstance(shape[0], numbers.Integral):
            shape = tuple(shape[0])
        return Tensor(self._t.reshape([int(d) for d in shape]))

    def ravel(self) -> "Tensor":
        """A 1-d tensor of the elements in row-major order."""
        return self.reshape(-1)

    flatten = ravel

    def transpose(self, *axes: Any) -> "Tensor":
        """Axes permuted (reversed by default)."""
        if len(axes) == 1 and axes[0] is not None and not isinstance(axes[0], numbers.Integral):
            axes = tuple(axes[0])
        if not axes or axes == (None,):
            perm = list(range(self.ndim))[::-1]
        else:
            perm = _axis_of(tuple(axes), self.ndim)
            if perm is None or len(perm) != self.ndim:
                raise ValueError("axes don't match array")
        if perm == list(range(self.ndim)):
            return self
        return Tensor(self._t.permute(perm))

    def swapaxes(self, a: int, b: int) -> "Tensor":
        """Two axes exchanged."""
        perm = list(range(self.ndim))
        a, b = _axis_of((a, b), self.ndim) if a % builtins.max(self.ndim, 1) != b % builtins.max(self.ndim, 1) else (a, a)
        perm[a], perm[b] = perm[b], perm[a]
        return self.transpose(perm)

    def squeeze(self, axis: Any = None) -> "Tensor":
        """Dimensions of length 1 removed."""
        axes = _axis_of(axis, self.ndim)
        if axes is None:
            axes = [i for i, d in enumerate(self.shape) if d == 1]
        for a in axes:
            if self.shape[a] != 1:
                raise ValueError("cannot select an axis to squeeze out which has size not equal to one")
        return self.reshape([d for i, d in enumerate(self.shape) if i not in axes])

    def astype(self, dtype: Any, copy: bool = True) -> "Tensor":
        """Elements converted to ``dtype`` (numpy's casting: floats to ints truncate)."""
        name = _dtype_name(dtype)
        # Tensors are immutable: the same dtype needs no copy.
        return self if name == self._t.dtype else Tensor(self._t.astype(name))

    def rechunk(self, chunk_size: Any) -> "Tensor":
        """The same elements in chunks of ``chunk_size`` (an int or one size per dimension)."""
        return Tensor(self._t.rechunk(_chunks_of(chunk_size, self._known_shape("rechunk"), self.itemsize)))

    def _known_shape(self, op: str) -> Tuple[int, ...]:
        s = self.shape
        if builtins.any(isinstance(d, float) for d in s):
            raise ValueError(f"{op} needs a known shape; execute the tensor first")
        return s  # type: ignore[return-value]

    def clip(self, min: Any = None, max: Any = None) -> "Tensor":
        """Elements limited to ``[min, max]`` (scalars)."""
        return clip(self, min, max)

    def dot(self, other: Any) -> "Tensor":
        """``dot(self, other)``."""
        return dot(self, other)

    def sqrt(self) -> "Tensor":
        return Tensor(self._t.unary("sqrt"))

    # ------------------------------------------------------------ indexing

    def __getitem__(self, index: Any) -> "Tensor":
        # A 0-d integer tensor or array (a[a.argmax()]) is an integer index, as in numpy.
        if isinstance(index, (Tensor, np.ndarray)) and index.ndim == 0 and index.dtype.kind in "iu":
            index = int(index)
        if isinstance(index, list) and index and builtins.all(isinstance(i, (builtins.bool, np.bool_)) for i in index):
            index = np.asarray(index)  # a list of booleans is a mask, as in numpy
        if isinstance(index, tuple) and len(index) == 1 and (_is_bool_array(index[0]) or _is_bool_scalar(index[0])):
            index = index[0]
        if _is_bool_scalar(index):
            # numpy's x[True] (a new axis) and x[False] (that axis empty); a 0-d mask
            # tensor keeps the axis's one row or none, known once computed.
            lifted = self[None]
            if isinstance(index, Tensor):
                return lifted.take(nonzero(index.reshape(1))[0], axis=0)
            return lifted if builtins.bool(index) else lifted[:0]
        if _is_bool_array(index):
            mask = _to_tensor(index, like=self)
            k = mask.ndim
            if k > self.ndim or mask.shape != self.shape[:k]:
                raise IndexError(f"boolean index of shape {mask.shape} does not match the tensor's shape {self.shape}")
            if not isinstance(index, Tensor) or 0 in mask.shape:
                # A mask in hand (or an empty one) gives its positions, and so the
                # result's length, now: a gather over the masked axes flattened.
                index = np.zeros(mask.shape, dtype=bool) if isinstance(index, Tensor) else index
                lead = self if k == 1 else self.reshape((-1,) + self.shape[k:])
                return lead.take(np.flatnonzero(np.asarray(index)), axis=0)
            if k == self.ndim:
                return Tensor(self._t.mask(mask._t))
            if k == 1:
                # Rows where a mask over the first axis holds (numpy's `a[mask]`).
                return self.take(nonzero(mask)[0], axis=0)
            return self.reshape((-1,) + self.shape[k:]).take(nonzero(mask.reshape(-1))[0], axis=0)
        if not isinstance(index, tuple):
            index = (index,)
        index = tuple(
            np.asarray(i) if isinstance(i, list) and i and builtins.all(isinstance(e, (builtins.bool, np.bool_)) for e in i) else i
            for i in index
        )
        if builtins.any(_is_bool_array(i) for i in index):
            # Among other indices a mask is its nonzero() positions, one integer array per
            # axis it covers (numpy's definition): known lengths for a mask in hand.
            expanded: List[Any] = []
            for i in index:
                if _is_bool_array(i):
                    expanded.extend(nonzero(i) if isinstance(i, Tensor) else np.nonzero(i))
                else:
                    expanded.append(i)
            index = tuple(expanded)
        # 0-d integer tensors or arrays inside a tuple are integers, as in numpy.
        index = tuple(
            int(i) if isinstance(i, (Tensor, np.ndarray)) and i.ndim == 0 and i.dtype.kind in "iu" else i for i in index
        )
        if builtins.any(_is_int_array(i) or _is_bool_array(i) for i in index):
            return self._advanced(index)
        n_ell = builtins.sum(1 for i in index if i is Ellipsis)
        if n_ell > 1:
            raise IndexError("an index can only have a single ellipsis ('...')")
        real = [i for i in index if i is not None and i is not Ellipsis]
        if len(real) > self.ndim:
            raise IndexError(f"too many indices for tensor: tensor is {self.ndim}-dimensional, but {len(real)} were indexed")
        if n_ell:
            at = index.index(Ellipsis)
            index = index[:at] + (slice(None),) * (self.ndim - len(real)) + index[at + 1 :]
        else:
            index = index + (slice(None),) * (self.ndim - len(real))
        shape = self.shape
        slices, out_shape, dim = [], [], 0
        for i in index:
            if i is None:
                out_shape.append(1)
                continue
            n = shape[dim]
            if isinstance(i, slice):
                step = 1 if i.step is None else int(i.step)
                if step == 0:
                    raise ValueError("slice step cannot be zero")
                start = None if i.start is None else int(i.start)
                stop = None if i.stop is None else int(i.stop)
                slices.append((start, stop, step))
                out_shape.append(math.nan if isinstance(n, float) else len(range(*slice(start, stop, step).indices(n))))
            elif isinstance(i, (builtins.bool, np.bool_)):
                raise NotImplementedError("a boolean scalar as an index (numpy adds an axis)")
            elif isinstance(i, (numbers.Integral, np.integer)):
                k = int(i)
                if isinstance(n, float):
                    raise IndexError("integer index into a dimension of unknown length; execute the tensor first")
                if not -n <= k < n:
                    raise IndexError(f"index {k} is out of bounds for axis {dim} with size {n}")
                k %= n
                slices.append((k, k + 1, 1))
            else:
                raise IndexError(
                    "only integers, slices (`:`), ellipsis (`...`), numpy.newaxis (`None`) and boolean "
                    f"tensors are valid indices, not {type(i).__name__}"
                )
            dim += 1
        t = Tensor(self._t.slice(slices)) if builtins.any(s != (None, None, 1) for s in slices) else self
        if tuple(out_shape) != t.shape:
            t = t.reshape([-1 if isinstance(d, float) else d for d in out_shape])
        return t

    def _advanced(self, index: tuple) -> "Tensor":
        """numpy's indexing with integer arrays: one array (with basic indices around it)
        is a gather along its axis; several arrays index the leading axes together
        (their positions broadcast, then raveled into one gather)."""
        if builtins.any(_is_bool_array(i) for i in index):
            raise NotImplementedError("a boolean array among other indices (give one mask of the full shape)")
        n_ell = builtins.sum(1 for i in index if i is Ellipsis)
        if n_ell > 1:
            raise IndexError("an index can only have a single ellipsis ('...')")
        if n_ell:
            at = index.index(Ellipsis)
            real = builtins.sum(1 for i in index if i is not None and i is not Ellipsis)
            index = index[:at] + (slice(None),) * builtins.max(self.ndim - real, 0) + index[at + 1 :]
        arrays = [k for k, i in enumerate(index) if _is_int_array(i)]
        if len(arrays) == 1:
            k = arrays[0]
            idx = _index_tensor(index[k])
            basic = index[:k] + (slice(None),) + index[k + 1 :]
            # The gathered axis: the dimensions the basic index keeps before it.
            axis = builtins.sum(1 for i in basic[:k] if i is None or isinstance(i, slice))
            sliced = self[basic]
            out = sliced.take(idx, axis=axis)
            # numpy counts integers as advanced indices too: when they and the array are
            # not side by side (a slice or newaxis between), the array's dimensions go first.
            adv = [j for j, i in enumerate(index) if j == k or isinstance(i, (numbers.Integral, np.integer))]
            apart = builtins.any(not (j in adv) for j in range(adv[0], adv[-1] + 1))
            if apart and axis != 0:
                order = list(range(axis, axis + idx.ndim)) + [d for d in range(out.ndim) if not axis <= d < axis + idx.ndim]
                out = out.transpose(order)
            return out
        if arrays != list(range(len(arrays))) or builtins.any(not isinstance(i, slice) or i != slice(None) for i in index[len(arrays) :]):
            return self._advanced_anywhere(index)
        k = len(arrays)
        if k > self.ndim:
            raise IndexError(f"too many indices for tensor: tensor is {self.ndim}-dimensional, but {k} were indexed")
        lead = self._known_shape("indexing")[:k]
        idx = [_index_tensor(index[j]) for j in arrays]
        shape = np.broadcast_shapes(*(i.shape for i in idx))
        total = math.prod(lead)
        flat = None
        bad = None
        for j, i in enumerate(idx):
            n = lead[j]
            i = i.astype(np.int64)
            out_of = (i < -n) | (i >= n)
            bad = out_of if bad is None else bad | out_of
            i = where(i < 0, i + n, i)
            flat = i if flat is None else flat * n + i
        # A position out of its axis must fail, not land elsewhere in the raveled one.
        flat = where(bad, total, flat)
        flat = broadcast_to(flat, shape)
        rest = list(self.shape[k:])
        merged = self.rechunk([c[0] if c else 1 for c in self.chunks[:1]] + [-1] * (self.ndim - 1)).reshape([total] + rest)
        return merged.take(flat, axis=0)

    def _advanced_anywhere(self, index: tuple) -> "Tensor":
        """Several integer arrays (and integers) on any axes, with slices between or
        around them: the indexed axes are moved to the front and gathered together, the
        slices applied to the rest; as numpy places them, the gathered dimensions stay
        where the indexed axes were when those are side by side, and go first otherwise."""
        if builtins.any(i is None for i in index):
            raise NotImplementedError("several integer arrays together with newaxis (None)")
        index = index + (slice(None),) * (self.ndim - len(index))
        if len(index) > self.ndim:
            raise IndexError(f"too many indices for tensor: tensor is {self.ndim}-dimensional, but {len(index)} were indexed")
        adv = [d for d, i in enumerate(index) if _is_int_array(i) or isinstance(i, (numbers.Integral, np.integer))]
        rest = [d for d in range(self.ndim) if d not in adv]
        moved = self.transpose(adv + rest) if adv + rest != list(range(self.ndim)) else self
        # An integer is a one-element array here (broadcasting with the real arrays
        # gives the same shape), so every indexed axis leads and one gather takes them.
        arrays = tuple(_index_tensor(index[d]) if _is_int_array(index[d]) else np.array([int(index[d])]) for d in adv)
        sliced = moved[(slice(None),) * len(adv) + tuple(index[d] for d in rest)]
        out = sliced._advanced(arrays + (slice(None),) * len(rest))
        nb = out.ndim - len(rest)
        together = adv == list(range(adv[0], adv[-1] + 1))
        if together and adv[0] > 0:
            # The gathered dimensions back where the indexed axes were.
            before = adv[0]
            order = list(range(nb, nb + before)) + list(range(nb)) + list(range(nb + before, out.ndim))
            out = out.transpose(order)
        return out

    def take(self, indices: Any, axis: Optional[int] = None) -> "Tensor":
        """See :func:`take`."""
        return take(self, indices, axis=axis)

    def __setitem__(self, index: Any, value: Any) -> None:
        """numpy's item assignment, by rebinding the tensor to a new expression (tensors
        computed from it before keep the old values): a boolean mask, basic indices
        (integers, slices, ``...``) or an integer array along the first axis, with a value
        cast to the tensor's dtype as numpy casts it. An array value fills a box of basic
        indices with unit steps."""
        new = _assigned(self, index, value)
        self._t = new._t
        self._session = None

    def __getattr__(self, name: str) -> Any:
        # An ndarray attribute not built here is named as unsupported, not missing; the
        # error is an AttributeError too, so numpy's functions fall back to __array__.
        if not name.startswith("_") and hasattr(np.ndarray, name):
            raise Unsupported(f"Tensor.{name} is not supported (numpy's ndarray.{name} has no tiled form here yet)")
        raise AttributeError(f"'Tensor' object has no attribute {name!r}")


# ---------------------------------------------------------------- helpers


def _is_bool_scalar(i: Any) -> builtins.bool:
    """A boolean scalar index: Python's or numpy's bool, or a 0-d boolean array or tensor."""
    if isinstance(i, (builtins.bool, np.bool_)):
        return True
    return isinstance(i, (Tensor, np.ndarray)) and i.ndim == 0 and i.dtype == np.bool_


def _is_bool_array(i: Any) -> builtins.bool:
    """A boolean mask index: a boolean tensor or numpy array (not a bool scalar)."""
    if isinstance(i, Tensor):
        return i.dtype == np.bool_ and i.ndim > 0
    return isinstance(i, np.ndarray) and i.dtype == np.bool_ and i.ndim > 0


def _is_int_array(i: Any) -> builtins.bool:
    """An integer-array index: an integer tensor or array, or a list of integers (an
    empty list too, as numpy reads it)."""
    if isinstance(i, Tensor):
        return i.dtype.kind in "iu" and i.ndim > 0
    if isinstance(i, np.ndarray):
        return i.dtype.kind in "iu" and i.ndim > 0
    if isinstance(i, list):
        a = np.asarray(i)
        return a.dtype.kind in "iu" or a.size == 0
    return False


def _index_tensor(i: Any) -> Tensor:
    """An integer-array index as an int64 (or unsigned) tensor."""
    if isinstance(i, Tensor):
        return i
    a = np.asarray(i)
    return tensor(a.astype(np.int64) if a.size == 0 else a)


def _to_tensor(x: Any, like: Optional[Tensor] = None) -> Tensor:
    """A tensor for a tensor, a numpy array, a list or a scalar."""
    if isinstance(x, Tensor):
        return x
    if _is_scalar(x):
        # A numpy scalar keeps its dtype in promotion (numpy 2, NEP 50); a Python
        # scalar takes the other operand's.
        a = np.asarray(x)
        if like is not None:
            a = a.astype(np.result_type(like.dtype, x))
        return tensor(a)
    return tensor(x)


# ---------------------------------------------------------------- creation


def tensor(data: Any, dtype: Any = None, chunk_size: Any = None) -> Tensor:
    """A tensor holding ``data`` (a numpy array, nested lists or a scalar), split into
    chunks of ``chunk_size``. The buffer of a numpy array is read directly, chunk by
    chunk, without an intermediate copy."""
    if isinstance(data, Tensor):
        t = data if dtype is None else data.astype(dtype)
        return t if chunk_size is None else t.rechunk(chunk_size)
    a = np.asarray(data)
    if dtype is not None:
        a = a.astype(np.dtype(_dtype_name(dtype)), copy=False)
    else:
        _dtype_name(a.dtype)
    if not a.dtype.isnative:
        a = a.astype(a.dtype.newbyteorder("="))
    shape = a.shape
    return Tensor(_native.from_numpy(a, _chunks_of(chunk_size, shape, a.dtype.itemsize)))


array = tensor


def asarray(data: Any, dtype: Any = None, chunk_size: Any = None, *, device: Any = None, copy: Any = None) -> Tensor:
    """Like :func:`tensor`, returning a tensor unchanged. ``copy`` is accepted for the
    Array API: a tensor is immutable and other data is always copied into chunks, so
    only ``copy=False`` of non-tensor data (which would need sharing) raises."""
    _check_device(device)
    if copy is False and not isinstance(data, Tensor):
        raise ValueError("asarray(copy=False) of data that is not a tensor: its elements are copied into chunks")
    t = tensor(data, dtype=dtype, chunk_size=chunk_size)
    if copy and t is data:
        # A new tensor object: item assignment rebinds one, never the other.
        t = Tensor(data._t)
        t._session = data._session
    return t


def full(shape: Any, fill_value: Any, dtype: Any = None, chunk_size: Any = None, *, device: Any = None) -> Tensor:
    """A tensor of ``shape`` filled with ``fill_value``."""
    _check_device(device)
    shape = _shape_of(shape)
    v = _scalar(fill_value)
    if not _is_scalar(v):
        raise NotImplementedError("full with a non-scalar fill_value")
    name = _dtype_name(dtype if dtype is not None else np.result_type(fill_value))
    py = builtins.bool if name == "bool" else float if name.startswith("float") else complex if name.startswith("complex") else int
    t = Tensor(_native.full(list(shape), py(v), _chunks_of(chunk_size, shape, np.dtype(name).itemsize)))
    return t if t._t.dtype == name else t.astype(name)


def ones(shape: Any, dtype: Any = None, chunk_size: Any = None, *, device: Any = None) -> Tensor:
    """A tensor of ones (float64 by default)."""
    _check_device(device)
    return full(shape, 1.0, dtype=dtype or np.float64, chunk_size=chunk_size)


def zeros(shape: Any, dtype: Any = None, chunk_size: Any = None, *, device: Any = None) -> Tensor:
    """A tensor of zeros (float64 by default)."""
    _check_device(device)
    return full(shape, 0.0, dtype=dtype or np.float64, chunk_size=chunk_size)


def empty(shape: Any, dtype: Any = None, chunk_size: Any = None, *, device: Any = None) -> Tensor:
    """A tensor of zeros: tensors are computed, so there is no uninitialised memory."""
    _check_device(device)
    return zeros(shape, dtype=dtype, chunk_size=chunk_size)


def _like(a: Any, dtype: Any, shape: Any, chunk_size: Any) -> Tuple[Tuple[int, ...], Any, Any]:
    t = a if isinstance(a, Tensor) else tensor(a)
    s = t._known_shape("*_like") if shape is None else _shape_of(shape)
    cs = chunk_size if chunk_size is not None else (tuple(c[0] for c in t.chunks) if shape is None else None)
    return s, dtype if dtype is not None else t.dtype, cs


def full_like(
    a: Any, fill_value: Any, dtype: Any = None, shape: Any = None, chunk_size: Any = None, *, device: Any = None
) -> Tensor:
    """A tensor like ``a`` (shape, dtype, chunks) filled with ``fill_value``."""
    _check_device(device)
    s, d, cs = _like(a, dtype, shape, chunk_size)
    return full(s, fill_value, dtype=d, chunk_size=cs)


def ones_like(a: Any, dtype: Any = None, shape: Any = None, chunk_size: Any = None, *, device: Any = None) -> Tensor:
    """Ones shaped like ``a``."""
    _check_device(device)
    return full_like(a, 1, dtype=dtype, shape=shape, chunk_size=chunk_size)


def zeros_like(a: Any, dtype: Any = None, shape: Any = None, chunk_size: Any = None, *, device: Any = None) -> Tensor:
    """Zeros shaped like ``a``."""
    _check_device(device)
    return full_like(a, 0, dtype=dtype, shape=shape, chunk_size=chunk_size)


def empty_like(a: Any, dtype: Any = None, shape: Any = None, chunk_size: Any = None, *, device: Any = None) -> Tensor:
    """Zeros shaped like ``a`` (tensors are computed: no uninitialised memory)."""
    return zeros_like(a, dtype=dtype, shape=shape, chunk_size=chunk_size, device=device)


def arange(
    start: Any, stop: Any = None, step: Any = 1, dtype: Any = None, chunk_size: Any = None, *, device: Any = None
) -> Tensor:
    """Evenly spaced values in ``[start, stop)``, as ``numpy.arange`` (int64 for
    integer arguments, float64 otherwise)."""
    _check_device(device)
    if stop is None:
        start, stop = 0, start
    start, stop, step = _scalar(start), _scalar(stop), _scalar(step)
    if step == 0:
        raise ZeroDivisionError("arange: step cannot be zero")
    ints = builtins.all(isinstance(v, numbers.Integral) for v in (start, stop, step))
    if ints:
        # Exact int64 arithmetic (no float64 on the way, so 2**53 + 1 stays itself).
        n = builtins.max(0, -((int(start) - int(stop)) // int(step)))
        chunk = _chunks_of(chunk_size, (n,), 8)[0]
        t = Tensor(_native.arange_int(int(start), int(stop), int(step), chunk))
        want = _dtype_name(dtype) if dtype is not None else "int64"
        return t if t._t.dtype == want else t.astype(want)
    n = builtins.max(0, math.ceil((stop - start) / step))
    chunk = _chunks_of(chunk_size, (n,), 8)[0]
    t = Tensor(_native.arange(float(start), float(stop), float(step), chunk))
    want = _dtype_name(dtype) if dtype is not None else ("int64" if ints else "float64")
    return t if t._t.dtype == want else t.astype(want)


def linspace(
    start: float,
    stop: float,
    num: int = 50,
    endpoint: bool = True,
    dtype: Any = None,
    chunk_size: Any = None,
    *,
    device: Any = None,
) -> Tensor:
    """``num`` evenly spaced values from ``start`` to ``stop`` (inclusive unless
    ``endpoint=False``)."""
    _check_device(device)
    if num < 0:
        raise ValueError(f"Number of samples, {num}, must be non-negative.")
    if not endpoint:
        # numpy's values: i · ((stop - start) / num) + start.
        if num == 0:
            return _linspace_dtype(zeros(0), dtype)
        step = (float(stop) - float(start)) / num
        t = arange(num, chunk_size=_chunks_of(chunk_size, (num,), 8)[0]).astype(np.float64) * step + float(start)
        return _linspace_dtype(t, dtype)
    chunk = _chunks_of(chunk_size, (num,), 8)[0]
    t = Tensor(_native.linspace(float(start), float(stop), int(num), chunk))
    if num > 1:
        # numpy sets the last value to `stop` exactly (start + step·(num-1) may miss it).
        t = where(arange(num, chunk_size=chunk) == num - 1, float(stop), t)
    return _linspace_dtype(t, dtype)


def _linspace_dtype(t: Tensor, dtype: Any) -> Tensor:
    """numpy 2's linspace rounds towards -inf for an integer dtype (a cast truncates)."""
    if dtype is None:
        return t
    if np.dtype(dtype).kind in "iu":
        whole = t.astype(np.int64)
        t = whole - (whole > t)
    return t.astype(dtype)


def eye(
    N: int, M: Optional[int] = None, k: int = 0, dtype: Any = None, chunk_size: Any = None, *, device: Any = None
) -> Tensor:
    """An ``N × M`` matrix (``M`` defaults to ``N``) with ones on diagonal ``k`` (0 the
    main one, positive above it) and zeros elsewhere."""
    _check_device(device)
    N, M, k = int(N), int(N if M is None else M), int(k)
    if N < 0 or M < 0:
        raise ValueError(f"negative dimensions are not allowed: ({N}, {M})")
    if M == N and k == 0:
        chunk = _chunks_of(chunk_size, (N, N), 8)[0]
        t = Tensor(_native.eye(N, builtins.max(chunk, 1)))
    else:
        rows, cols = _chunks_of(chunk_size, (N, M), 8)
        # Lazily from two ranges: column - row == k.
        t = (arange(M, chunk_size=cols).reshape(1, M) - arange(N, chunk_size=rows).reshape(N, 1) == k).astype(np.float64)
    return t if dtype is None else t.astype(dtype)


def identity(n: int, dtype: Any = None, chunk_size: Any = None) -> Tensor:
    """The ``n × n`` identity."""
    return eye(n, dtype=dtype, chunk_size=chunk_size)


# ---------------------------------------------------------------- ufuncs


def _unary(op: str, x: Any) -> Tensor:
    return Tensor(_to_tensor(x)._t.unary(op))


def sqrt(x: Any) -> Tensor:
    """Element-wise square root."""
    return _unary("sqrt", x)


def exp(x: Any) -> Tensor:
    """Element-wise exponential."""
    return _unary("exp", x)


def log(x: Any) -> Tensor:
    """Element-wise natural logarithm."""
    return _unary("log", x)


def sin(x: Any) -> Tensor:
    """Element-wise sine."""
    return _unary("sin", x)


def cos(x: Any) -> Tensor:
    """Element-wise cosine."""
    return _unary("cos", x)


def absolute(x: Any) -> Tensor:
    """Element-wise absolute value."""
    return _unary("abs", x)


abs = absolute


def negative(x: Any) -> Tensor:
    """Element-wise negation."""
    return -_to_tensor(x)


def logical_not(x: Any) -> Tensor:
    """Element-wise logical not (of the truth of each element)."""
    return _unary("not", x)


def invert(x: Any) -> Tensor:
    """``~x``: bitwise not of integers, logical not of booleans."""
    return ~_to_tensor(x)


bitwise_invert = invert
bitwise_not = invert


def square(x: Any) -> Tensor:
    """Element-wise ``x * x`` (booleans square in int8, as numpy's)."""
    return _unary("square", x)


def _float_function(name: str, doc: str) -> Any:
    def f(x: Any) -> Tensor:
        return _unary(name, x)

    f.__name__ = name
    f.__doc__ = doc + " Integers compute in float64 (float32 for 16-bit ones)."
    return f


tan = _float_function("tan", "Element-wise tangent.")
sinh = _float_function("sinh", "Element-wise hyperbolic sine.")
cosh = _float_function("cosh", "Element-wise hyperbolic cosine.")
tanh = _float_function("tanh", "Element-wise hyperbolic tangent.")
arcsin = asin = _float_function("asin", "Element-wise inverse sine.")
arccos = acos = _float_function("acos", "Element-wise inverse cosine.")
arctan = atan = _float_function("atan", "Element-wise inverse tangent.")
arcsinh = asinh = _float_function("asinh", "Element-wise inverse hyperbolic sine.")
arccosh = acosh = _float_function("acosh", "Element-wise inverse hyperbolic cosine.")
arctanh = atanh = _float_function("atanh", "Element-wise inverse hyperbolic tangent.")
expm1 = _float_function("expm1", "Element-wise ``exp(x) - 1``, exact near 0.")
log1p = _float_function("log1p", "Element-wise ``log(1 + x)``, exact near 0.")
log2 = _float_function("log2", "Element-wise base-2 logarithm.")
log10 = _float_function("log10", "Element-wise base-10 logarithm.")


def rint(x: Any) -> Tensor:
    """Element-wise round half to even; integers and booleans give floats, as numpy's
    ``rint`` (float64 where numpy gives float16)."""
    t = _to_tensor(x)
    if t.dtype.kind in "biu":
        f = np.result_type(t.dtype, np.float16)
        t = t.astype(np.float64 if f == np.float16 else f)
    return _unary("rint", t)


def floor(x: Any) -> Tensor:
    """Rounded down (integers and booleans keep their dtype, as numpy's)."""
    return _unary("floor", x)


def ceil(x: Any) -> Tensor:
    """Rounded up (integers and booleans keep their dtype)."""
    return _unary("ceil", x)


def trunc(x: Any) -> Tensor:
    """Rounded toward zero (integers and booleans keep their dtype)."""
    return _unary("trunc", x)


def sign(x: Any) -> Tensor:
    """-1, 0 or 1 (NaN for NaN), in ``x``'s dtype."""
    return _unary("sign", x)


def positive(x: Any) -> Tensor:
    """``+x`` (refused for booleans, as numpy 2)."""
    return _unary("positive", x)


def isnan(x: Any) -> Tensor:
    """Whether each element is NaN."""
    return _unary("isnan", x)


def isinf(x: Any) -> Tensor:
    """Whether each element is infinite."""
    return _unary("isinf", x)


def isfinite(x: Any) -> Tensor:
    """Whether each element is neither NaN nor infinite."""
    return _unary("isfinite", x)


def signbit(x: Any) -> Tensor:
    """Whether each element's sign bit is set (-0.0 and -NaN too)."""
    return _unary("signbit", x)


def _binop(name: str, x: Any, y: Any) -> Tensor:
    if isinstance(x, Tensor):
        return x._binary(name, y)
    if isinstance(y, Tensor):
        return y._binary(name, x, reflected=True)
    return _to_tensor(x)._binary(name, y)


def add(x: Any, y: Any) -> Tensor:
    """``x + y``."""
    return _binop("add", x, y)


def subtract(x: Any, y: Any) -> Tensor:
    """``x - y``."""
    return _binop("sub", x, y)


def multiply(x: Any, y: Any) -> Tensor:
    """``x * y``."""
    return _binop("mul", x, y)


def true_divide(x: Any, y: Any) -> Tensor:
    """``x / y`` (true division)."""
    return _binop("div", x, y)


divide = true_divide


def power(x: Any, y: Any) -> Tensor:
    """``x ** y``."""
    return _binop("pow", x, y)


pow = power  # noqa: A001 - the Array API's name (numpy 2 has both)


def maximum(x: Any, y: Any) -> Tensor:
    """Element-wise maximum (NaN wins, as in numpy)."""
    return _binop("maximum", x, y)


def minimum(x: Any, y: Any) -> Tensor:
    """Element-wise minimum (NaN wins, as in numpy)."""
    return _binop("minimum", x, y)


def floor_divide(x: Any, y: Any) -> Tensor:
    """``x // y`` (Python's floor division; an integer divided by 0 gives 0, as numpy)."""
    return _binop("floor_divide", x, y)


def remainder(x: Any, y: Any) -> Tensor:
    """``x % y`` (with the divisor's sign, as Python's)."""
    return _binop("remainder", x, y)


mod = remainder


def arctan2(x: Any, y: Any) -> Tensor:
    """The angle of the point ``(y, x)``, element-wise."""
    return _binop("atan2", x, y)


atan2 = arctan2


def hypot(x: Any, y: Any) -> Tensor:
    """``sqrt(x² + y²)`` without overflow."""
    return _binop("hypot", x, y)


def copysign(x: Any, y: Any) -> Tensor:
    """``x``'s magnitude with ``y``'s sign."""
    return _binop("copysign", x, y)


def logaddexp(x: Any, y: Any) -> Tensor:
    """``log(exp(x) + exp(y))`` without overflow."""
    return _binop("logaddexp", x, y)


def bitwise_and(x: Any, y: Any) -> Tensor:
    """``x & y`` (integers and booleans)."""
    return _binop("bitwise_and", x, y)


def bitwise_or(x: Any, y: Any) -> Tensor:
    """``x | y``."""
    return _binop("bitwise_or", x, y)


def bitwise_xor(x: Any, y: Any) -> Tensor:
    """``x ^ y``."""
    return _binop("bitwise_xor", x, y)


def left_shift(x: Any, y: Any) -> Tensor:
    """``x << y`` (0 once the count reaches the width)."""
    return _binop("left_shift", x, y)


def right_shift(x: Any, y: Any) -> Tensor:
    """``x >> y``, arithmetic for signed integers."""
    return _binop("right_shift", x, y)


bitwise_left_shift = left_shift
bitwise_right_shift = right_shift


def logical_xor(x: Any, y: Any) -> Tensor:
    """Element-wise exclusive or of the truth of each element."""
    return _to_tensor(x).astype(np.bool_) ^ _to_tensor(y).astype(np.bool_)


def less(x: Any, y: Any) -> Tensor:
    """``x < y``."""
    return _binop("lt", x, y)


def less_equal(x: Any, y: Any) -> Tensor:
    """``x <= y``."""
    return _binop("le", x, y)


def greater(x: Any, y: Any) -> Tensor:
    """``x > y``."""
    return _binop("gt", x, y)


def greater_equal(x: Any, y: Any) -> Tensor:
    """``x >= y``."""
    return _binop("ge", x, y)


def equal(x: Any, y: Any) -> Tensor:
    """``x == y``."""
    return _binop("eq", x, y)


def not_equal(x: Any, y: Any) -> Tensor:
    """``x != y``."""
    return _binop("ne", x, y)


def logical_and(x: Any, y: Any) -> Tensor:
    """Element-wise logical and."""
    return _to_tensor(x).astype(np.bool_, copy=False) & _to_tensor(y).astype(np.bool_, copy=False)


def logical_or(x: Any, y: Any) -> Tensor:
    """Element-wise logical or."""
    return _to_tensor(x).astype(np.bool_, copy=False) | _to_tensor(y).astype(np.bool_, copy=False)


# ---------------------------------------------------------------- reductions


def sum(a: Any, axis: Any = None, dtype: Any = None, keepdims: bool = False) -> Tensor:
    """Sum over ``axis``."""
    return _to_tensor(a).sum(axis=axis, dtype=dtype, keepdims=keepdims)


def prod(a: Any, axis: Any = None, dtype: Any = None, keepdims: bool = False) -> Tensor:
    """Product over ``axis``."""
    return _to_tensor(a).prod(axis=axis, dtype=dtype, keepdims=keepdims)


def mean(a: Any, axis: Any = None, dtype: Any = None, keepdims: bool = False) -> Tensor:
    """Mean over ``axis``."""
    return _to_tensor(a).mean(axis=axis, dtype=dtype, keepdims=keepdims)


def std(a: Any, axis: Any = None, dtype: Any = None, ddof: Any = 0, keepdims: bool = False, *, correction: Any = None) -> Tensor:
    """Standard deviation over ``axis``, dividing by ``n - ddof`` (the Array API's
    ``correction`` is the same number)."""
    return _to_tensor(a).std(axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims, correction=correction)


def var(a: Any, axis: Any = None, dtype: Any = None, ddof: Any = 0, keepdims: bool = False, *, correction: Any = None) -> Tensor:
    """Variance over ``axis``, dividing by ``n - ddof`` (or ``n - correction``)."""
    return _to_tensor(a).var(axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims, correction=correction)


def _correction(ddof: Any, correction: Any) -> Any:
    """numpy's ``ddof`` or the Array API's ``correction`` (not both)."""
    if correction is None:
        return ddof
    if ddof != 0:
        raise ValueError("ddof and correction can't be provided simultaneously.")
    return correction


def min(a: Any, axis: Any = None, keepdims: bool = False) -> Tensor:
    """Minimum over ``axis``."""
    return _to_tensor(a).min(axis=axis, keepdims=keepdims)


def max(a: Any, axis: Any = None, keepdims: bool = False) -> Tensor:
    """Maximum over ``axis``."""
    return _to_tensor(a).max(axis=axis, keepdims=keepdims)


amin, amax = min, max


def argmin(a: Any, axis: Optional[int] = None, keepdims: bool = False) -> Tensor:
    """Index of the minimum."""
    return _to_tensor(a).argmin(axis=axis, keepdims=keepdims)


def argmax(a: Any, axis: Optional[int] = None, keepdims: bool = False) -> Tensor:
    """Index of the maximum."""
    return _to_tensor(a).argmax(axis=axis, keepdims=keepdims)


def any(a: Any, axis: Any = None, keepdims: bool = False) -> Tensor:
    """Whether any element is true."""
    return _to_tensor(a).any(axis=axis, keepdims=keepdims)


def all(a: Any, axis: Any = None, keepdims: bool = False) -> Tensor:
    """Whether every element is true."""
    return _to_tensor(a).all(axis=axis, keepdims=keepdims)


# ---------------------------------------------------------------- shape and joins


def _contract_chunks(a: Tensor, b: Tensor, ka: int, kb: int) -> Tuple[Tensor, Tensor]:
    """``b`` rechunked so its contracted dimension is chunked like ``a``'s."""
    ca, cb = a._t.chunks[ka], b._t.chunks[kb]
    if ca == cb:
        return a, b
    if not _uniform(ca, a._t.shape[ka]):
        a = Tensor(a._t.rechunk([c[0] if i != ka else builtins.max(ca) for i, c in enumerate(a._t.chunks)]))
        ca = a._t.chunks[ka]
    want = [c[0] if c else 1 for c in b._t.chunks]
    want[kb] = ca[0]
    want = [builtins.max(w, 1) for w in want]
    return a, Tensor(b._t.rechunk(want))


def matmul(a: Any, b: Any) -> Tensor:
    """Matrix product ``a @ b`` of 1-d or 2-d tensors."""
    x, y = _to_tensor(a), _to_tensor(b)
    if x.ndim == 0 or y.ndim == 0:
        raise ValueError("matmul: Input operand does not have enough dimensions")
    if x.ndim > 2 or y.ndim > 2:
        return _stacked_matmul(x, y)
    # Integers wrap around in the result's width and booleans give "some a[i,k] and
    # b[k,j]", as numpy computes them.
    dt = np.result_type(x.dtype, y.dtype)
    x, y = x.astype(dt, copy=False), y.astype(dt, copy=False)
    vx, vy = x.ndim == 1, y.ndim == 1
    if vx:
        x = x.reshape(1, -1)
    if vy:
        y = y.reshape(-1, 1)
    if x.shape[1] != y.shape[0]:
        raise ValueError(
            f"matmul: Input operand 1 has a mismatch in its core dimension 0, (size {y.shape[0]} is different from {x.shape[1]})"
        )
    x, y = _contract_chunks(x, y, 1, 0)
    out = Tensor(x._t.matmul(y._t))
    if vx and vy:
        return out.reshape(())
    if vx:
        return out.reshape(-1)
    if vy:
        return out.reshape(-1)
    return out


# Past this many matrices a stack's product is refused: each is tiled on its own.
_MAX_STACK = 4096


def _pairs_over_stack(fn: Any, x: Tensor, y: Tensor, y_core: int, core: Tuple[int, ...], dtype: Any, refusal: str) -> Tensor:
    """``fn`` of each pair of a matrix of ``x``'s stack and its partner in ``y``'s (``y``
    has ``y_core`` core dimensions), the stacks broadcast together, the results of
    shape ``core`` stacked; ``refusal`` (``{count}``, ``{limit}``) names a stack too large."""
    stack_shape = np.broadcast_shapes(x.shape[:-2], y.shape[: y.ndim - y_core])
    count = math.prod(stack_shape)
    if count > _MAX_STACK:
        raise NotImplementedError(refusal.format(count=count, limit=_MAX_STACK))
    if count == 0:
        return zeros(stack_shape + core, dtype=dtype)
    xb = broadcast_to(x, stack_shape + x.shape[-2:])
    yb = broadcast_to(y, stack_shape + y.shape[y.ndim - y_core :])
    parts = [fn(xb[pos], yb[pos]) for pos in np.ndindex(*stack_shape)]
    return stack(parts, axis=0).reshape(stack_shape + parts[0].shape)


def _stacked_matmul(x: Tensor, y: Tensor) -> Tensor:
    """numpy's matmul of stacks: the leading (stack) dimensions broadcast, each pair of
    matrices multiplied as its own tiled product, the results stacked."""
    vx, vy = x.ndim == 1, y.ndim == 1
    if vx:
        x = x.reshape(1, -1)
    if vy:
        y = y.reshape(-1, 1)
    if x.shape[-1] != y.shape[-2]:
        raise ValueError(
            f"matmul: Input operand 1 has a mismatch in its core dimension 0, (size {y.shape[-2]} is different from {x.shape[-1]})"
        )
    m, n = x.shape[-2], y.shape[-1]
    out = _pairs_over_stack(
        matmul, x, y, 2, (m, n), np.result_type(x.dtype, y.dtype), "matmul of a stack of {count} matrices (at most {limit}: each is tiled on its own)"
    )
    stack_shape = out.shape[:-2]
    if vx:
        out = out.reshape(stack_shape + (n,))
    if vy:
        out = out.reshape(out.shape[:-1]) if not vx else out
    return out


def tensordot(a: Any, b: Any, axes: Any = 2) -> Tensor:
    """``numpy.tensordot``: sums products over ``axes`` (an int ``N``: the last ``N`` of
    ``a`` with the first ``N`` of ``b``; or a pair of axis sequences). The result has
    ``a``'s other axes, then ``b``'s. Computed as one blocked matrix product."""
    x, y = _to_tensor(a), _to_tensor(b)
    if isinstance(axes, (int, np.integer)):
        n = int(axes)
        if n < 0 or n > x.ndim or n > y.ndim:
            raise ValueError(f"tensordot: axes={n} does not fit operands of {x.ndim} and {y.ndim} dimensions")
        axes_a, axes_b = list(range(x.ndim - n, x.ndim)), list(range(n))
    else:
        try:
            axes_a, axes_b = axes
        except (TypeError, ValueError):
            raise ValueError("tensordot: axes must be an int or a pair of axis sequences") from None
        axes_a = [axes_a] if isinstance(axes_a, (int, np.integer)) else list(axes_a)
        axes_b = [axes_b] if isinstance(axes_b, (int, np.integer)) else list(axes_b)
        if len(axes_a) != len(axes_b):
            raise ValueError("shape-mismatch for sum")

    def norm(ax: Any, nd: int) -> int:
        ax = int(ax)
        if not -nd <= ax < nd:
            raise np.exceptions.AxisError(ax, nd)
        return ax % nd

    axes_a = [norm(i, x.ndim) for i in axes_a]
    axes_b = [norm(i, y.ndim) for i in axes_b]
    if len(set(axes_a)) != len(axes_a) or len(set(axes_b)) != len(axes_b):
        raise ValueError("tensordot: repeated axis")
    if builtins.any(x.shape[i] != y.shape[j] for i, j in zip(axes_a, axes_b)):
        raise ValueError("shape-mismatch for sum")
    free_a = [i for i in range(x.ndim) if i not in axes_a]
    free_b = [j for j in range(y.ndim) if j not in axes_b]
    m = math.prod(x.shape[i] for i in free_a)
    k = math.prod(x.shape[i] for i in axes_a)
    n = math.prod(y.shape[j] for j in free_b)
    xm = x.transpose(free_a + axes_a).reshape(m, k)
    ym = y.transpose(axes_b + free_b).reshape(k, n)
    out_shape = tuple(x.shape[i] for i in free_a) + tuple(y.shape[j] for j in free_b)
    return matmul(xm, ym).reshape(out_shape)


def dot(a: Any, b: Any) -> Tensor:
    """``numpy.dot`` for scalars, 1-d and 2-d tensors."""
    x, y = _to_tensor(a), _to_tensor(b)
    if x.ndim == 0 or y.ndim == 0:
        return x * y
    return matmul(x, y)


def transpose(a: Any, axes: Any = None) -> Tensor:
    """Axes permuted (reversed by default)."""
    return _to_tensor(a).transpose(axes)


def reshape(a: Any, shape: Any = None, *, newshape: Any = None, copy: Any = None) -> Tensor:
    """``a`` with a new shape (``newshape=`` is numpy's older spelling). ``copy`` is
    accepted: tensors are immutable, so a reshape never shares writable memory."""
    if (shape is None) == (newshape is None):
        raise TypeError("reshape() takes one shape (shape= or newshape=)")
    return _to_tensor(a).reshape(shape if newshape is None else newshape)


def ravel(a: Any) -> Tensor:
    """``a`` flattened."""
    return _to_tensor(a).ravel()


def expand_dims(a: Any, axis: Any) -> Tensor:
    """A dimension of length 1 inserted at ``axis`` (an int or a tuple)."""
    t = _to_tensor(a)
    axes = [axis] if isinstance(axis, numbers.Integral) else list(axis)
    nd = t.ndim + len(axes)
    pos = sorted(_axis_of(tuple(axes), nd) or [])
    shape = list(t._known_shape("expand_dims"))
    for p in pos:
        shape.insert(p, 1)
    return t.reshape(shape)


def squeeze(a: Any, axis: Any = None) -> Tensor:
    """Dimensions of length 1 removed."""
    return _to_tensor(a).squeeze(axis)


def concatenate(arrays: Sequence[Any], axis: Optional[int] = 0) -> Tensor:
    """Tensors joined along ``axis`` (flattened first when ``axis`` is None)."""
    ts = [_to_tensor(a) for a in arrays]
    if not ts:
        raise ValueError("need at least one array to concatenate")
    if axis is None:
        ts, axis = [t.ravel() for t in ts], 0
    nd = ts[0].ndim
    if nd == 0:
        raise ValueError("zero-dimensional arrays cannot be concatenated")
    for i, t in enumerate(ts[1:], 1):
        if t.ndim != nd:
            raise ValueError(
                "all the input array dimensions except for the concatenation axis must match exactly, but along "
                f"dimension 0, the array at index 0 has {nd} dimension(s) and the array at index {i} has {t.ndim}"
            )
    ax = _axis_of(axis, nd)[0]
    dt = np.result_type(*[t.dtype for t in ts])
    ts = [t.astype(dt, copy=False) for t in ts]
    return Tensor(_native.concatenate([t._t for t in ts], ax))


def stack(arrays: Sequence[Any], axis: int = 0) -> Tensor:
    """Tensors of one shape joined along a new axis."""
    ts = [_to_tensor(a) for a in arrays]
    if not ts:
        raise ValueError("need at least one array to stack")
    if builtins.any(t.shape != ts[0].shape for t in ts):
        raise ValueError("all input arrays must have the same shape")
    ax = _axis_of(axis, ts[0].ndim + 1)[0]
    dt = np.result_type(*[t.dtype for t in ts])
    return concatenate([expand_dims(t.astype(dt, copy=False), ax) for t in ts], axis=ax)


def vstack(arrays: Sequence[Any]) -> Tensor:
    """Tensors joined along the first axis (1-d ones as rows)."""
    ts = [_to_tensor(a) for a in arrays]
    return concatenate([t.reshape(1, -1) if t.ndim == 1 else t for t in ts], axis=0)


def hstack(arrays: Sequence[Any]) -> Tensor:
    """Tensors joined along the second axis (the first for 1-d ones)."""
    ts = [_to_tensor(a) for a in arrays]
    return concatenate(ts, axis=0 if ts and ts[0].ndim == 1 else 1)


def where(condition: Any, x: Any = None, y: Any = None) -> Tensor:
    """Elements of ``x`` where ``condition`` holds, else of ``y`` (broadcast); with
    only ``condition``, :func:`nonzero` of it (as numpy)."""
    if x is None and y is None:
        return nonzero(condition)
    if x is None or y is None:
        raise ValueError("either both or neither of x and y should be given")
    c = _to_tensor(condition)
    if c.dtype != np.bool_:
        c = c != 0
    xt = _to_tensor(x) if not _is_scalar(x) else None
    yt = _to_tensor(y) if not _is_scalar(y) else None
    # Python scalars take the other operand's dtype where numpy's promotion would; numpy
    # scalars keep theirs.
    if xt is None and yt is None:
        dt = np.result_type(x, y)
        xt, yt = _to_tensor(np.asarray(x, dtype=dt)), _to_tensor(np.asarray(y, dtype=dt))
    elif xt is None:
        xt = _to_tensor(x, like=yt)
    elif yt is None:
        yt = _to_tensor(y, like=xt)
    dt = np.result_type(xt.dtype, yt.dtype)
    xt, yt = xt.astype(dt, copy=False), yt.astype(dt, copy=False)
    return Tensor(_native.where_(c._t, xt._t, yt._t))


def isclose(a: Any, b: Any, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: builtins.bool = False) -> Tensor:
    """numpy's ``isclose``, lazily: ``|a - b| <= atol + rtol * |b|`` element-wise,
    infinities equal only to themselves, NaN to nothing unless ``equal_nan``."""
    x, y = _to_tensor(a), _to_tensor(b)
    dt = np.result_type(x.dtype, y.dtype, 1.0)
    x, y = x.astype(dt, copy=False), y.astype(dt, copy=False)
    finite = isfinite(x) & isfinite(y)
    close = where(finite, absolute(x - y) <= atol + rtol * absolute(y), x == y)
    return close | (isnan(x) & isnan(y)) if equal_nan else close


def allclose(a: Any, b: Any, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: builtins.bool = False) -> Tensor:
    """Whether every element is close (:func:`isclose`): a lazy 0-d boolean tensor,
    where numpy returns a bool (``if at.allclose(a, b):`` computes it)."""
    return all(isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan))


def array_equal(a1: Any, a2: Any, equal_nan: builtins.bool = False) -> Any:
    """Whether the shapes and elements are equal: ``False`` at once for different
    shapes, else a lazy 0-d boolean tensor."""
    x, y = _to_tensor(a1), _to_tensor(a2)
    if x.shape != y.shape:
        return False
    same = x == y
    if equal_nan:
        same = same | (isnan(x) & isnan(y))
    return all(same)


def clip(a: Any, min: Any = None, max: Any = None, out: Any = None, *, a_min: Any = None, a_max: Any = None) -> Tensor:  # noqa: A002
    """Elements limited to ``[min, max]`` (one may be None): scalars, arrays or
    tensors broadcast against ``a``. numpy's ``a_min=``/``a_max=`` spellings are taken too."""
    _check_out("clip", out, {})
    for given, old, name in ((min, a_min, "min"), (max, a_max, "max")):
        if given is not None and old is not None:
            raise ValueError(f"clip: give a_{name} or {name}, not both")
    a_min = min if min is not None else a_min
    a_max = max if max is not None else a_max
    t = _to_tensor(a)
    if a_min is None and a_max is None:
        return t  # the standard's clip with no bounds (numpy 2.1 agrees)
    if (a_min is not None and not _is_scalar(a_min)) or (a_max is not None and not _is_scalar(a_max)):
        # Array bounds: numpy's minimum(maximum(a, lo), hi), NaN propagating.
        r = t
        if a_min is not None:
            r = maximum(r, a_min)
        if a_max is not None:
            r = minimum(r, a_max)
        return r
    # numpy's promotion: Python bounds take the tensor's dtype, numpy scalars keep theirs.
    out = np.result_type(t.dtype, *(b for b in (a_min, a_max) if b is not None))
    if out.kind != "f":
        if t.dtype != out:
            t = t.astype(out)
        if a_min is not None:
            t = t._binary("maximum", a_min)
        if a_max is not None:
            t = t._binary("minimum", a_max)
        return t
    if t.dtype != out:
        t = t.astype(out)
    lo, hi = _scalar(a_min), _scalar(a_max)
    return Tensor(t._t.clip(-math.inf if lo is None else float(lo), math.inf if hi is None else float(hi)))


def rechunk(a: Any, chunk_size: Any) -> Tensor:
    """``a`` in chunks of ``chunk_size``."""
    return _to_tensor(a).rechunk(chunk_size)


from . import fft, linalg, random  # noqa: E402  (they use Tensor)

_COMPARISONS = frozenset({"lt", "le", "gt", "ge", "eq", "ne"})

# numpy's ufuncs by name, for Tensor.__array_ufunc__.
_UFUNCS: Dict[str, Any] = {
    "add": add,
    "subtract": subtract,
    "multiply": multiply,
    "divide": true_divide,
    "true_divide": true_divide,
    "power": power,
    "maximum": maximum,
    "minimum": minimum,
    "less": less,
    "less_equal": less_equal,
    "greater": greater,
    "greater_equal": greater_equal,
    "equal": equal,
    "not_equal": not_equal,
    "logical_and": logical_and,
    "logical_or": logical_or,
    "logical_not": logical_not,
    "bitwise_and": bitwise_and,
    "bitwise_or": bitwise_or,
    "bitwise_xor": bitwise_xor,
    "left_shift": left_shift,
    "right_shift": right_shift,
    "logical_xor": logical_xor,
    "invert": invert,
    "negative": negative,
    "positive": positive,
    "floor_divide": floor_divide,
    "remainder": remainder,
    "arctan2": arctan2,
    "hypot": hypot,
    "copysign": copysign,
    "logaddexp": logaddexp,
    "tan": tan,
    "sinh": sinh,
    "cosh": cosh,
    "tanh": tanh,
    "arcsin": arcsin,
    "arccos": arccos,
    "arctan": arctan,
    "arcsinh": arcsinh,
    "arccosh": arccosh,
    "arctanh": arctanh,
    "expm1": expm1,
    "log1p": log1p,
    "log2": log2,
    "log10": log10,
    "floor": floor,
    "rint": rint,
    "ceil": ceil,
    "trunc": trunc,
    "sign": sign,
    "isnan": isnan,
    "isinf": isinf,
    "isfinite": isfinite,
    "signbit": signbit,
    "absolute": absolute,
    "sqrt": sqrt,
    "exp": exp,
    "log": log,
    "sin": sin,
    "cos": cos,
    "square": square,
    "matmul": matmul,
}


# ufunc.reduce as the reduction of the same name.
_UFUNC_REDUCTIONS: Dict[str, Any] = {
    "add": sum,
    "multiply": prod,
    "maximum": max,
    "minimum": min,
    "logical_and": all,
    "logical_or": any,
}

# numpy functions about an array's description, answered without computing.
_DESCRIPTIONS: Dict[str, Any] = {
    "shape": lambda a: a.shape,
    "ndim": lambda a: a.ndim,
    "size": lambda a, axis=None: a.size if axis is None else a.shape[axis],
}


def _array_function(func: Any) -> Any:
    """The function here standing for numpy's ``func``, or None."""
    name, module = func.__name__, func.__module__
    if module == "numpy":
        if name in _DESCRIPTIONS:
            return _DESCRIPTIONS[name]
        f = globals().get(name) if name in __all__ else None
    elif module == "numpy.linalg":
        f = getattr(linalg, name, None)
    elif module == "numpy.fft":
        f = getattr(fft, name, None)
    else:
        return None
    return f if callable(f) and not isinstance(f, type) else None


from ._array_api import *  # noqa: E402,F401,F403 - the compositions, re-exported
from ._array_api import __all__ as _composed
from ._array_api import _check_device, broadcast_to, matrix_transpose  # noqa: E402
from ._array_api import _assigned  # noqa: E402
from ._array_api import round as _round  # noqa: E402
from ._sorting import *  # noqa: E402,F401,F403 - sorting and order statistics, re-exported
from ._sorting import __all__ as _sorting_names  # noqa: E402
from ._sorting import argsort as _argsort  # noqa: E402
from ._sorting import sort as _sort  # noqa: E402

__all__ += _sorting_names

from ._statistics import *  # noqa: E402,F401,F403 - NaN-ignoring reductions and statistics
from ._statistics import __all__ as _statistics_names  # noqa: E402

__all__ += _statistics_names

from ._contract import einsum  # noqa: E402,F401
from ._numpy_extras import *  # noqa: E402,F401,F403 - numpy's functions beyond the standard
from ._numpy_extras import __all__ as _extras_names  # noqa: E402

__all__ += _extras_names

__all__ += ["einsum"]

__all__ += _composed
__array_api_version__ = "2023.12"


def __getattr__(name: str) -> Any:
    # A numpy function not built here is named as unsupported, not missing: an error that
    # is both a NotImplementedError and an AttributeError, so `hasattr` and
    # `getattr(at, name, default)` work.
    if not name.startswith("_") and hasattr(np, name):
        raise Unsupported(f"ares.tensor.{name} is not supported (numpy.{name} has no tiled form here yet)")
    raise AttributeError(f"module 'ares.tensor' has no attribute {name!r}")
