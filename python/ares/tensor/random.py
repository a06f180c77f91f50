"""``ares.tensor.random``: numpy.random's functions on tensors. The same seed gives the
same values whatever the chunking. Without a seed, each call draws a fresh one from a
generator that :func:`seed` resets (as ``numpy.random.seed`` does); the values are not
numpy's own stream."""

from __future__ import annotations

import numbers
from typing import Any, Optional

import numpy as np

from .. import _native
from . import Tensor, _chunks_of, _shape_of

__all__ = [
    "seed",
    "rand",
    "randn",
    "random",
    "random_sample",
    "uniform",
    "normal",
    "standard_normal",
    "randint",
    "exponential",
    "standard_exponential",
    "permutation",
    "shuffle",
    "choice",
]

_rng = np.random.default_rng()


def seed(s: Optional[int] = None) -> None:
    """Resets the generator the unseeded calls draw their seeds from."""
    global _rng
    _rng = np.random.default_rng(s)


def _seed(s: Optional[int]) -> int:
    if s is None:
        return int(_rng.integers(0, 2**63 - 1))
    if not isinstance(s, numbers.Integral) or s < 0:
        raise ValueError(f"seed must be a non-negative integer, got {s!r}")
    return int(s) % 2**64


def _size(size: Any) -> tuple:
    return () if size is None else _shape_of(size)


def _make(kind: str, size: Any, chunk_size: Any, seed: Optional[int], low: float, high: float, itemsize: int = 8) -> Tensor:
    shape = _size(size)
    return Tensor(_native.random(kind, list(shape), _chunks_of(chunk_size, shape, itemsize), _seed(seed), low, high))


def uniform(low: float = 0.0, high: float = 1.0, size: Any = None, chunk_size: Any = None, seed: Optional[int] = None, dtype: Any = None) -> Tensor:
    """Floats uniform on ``[low, high)``."""
    t = _make("uniform", size, chunk_size, seed, float(low), float(high))
    return t if dtype is None else t.astype(dtype)


def rand(*shape: int, chunk_size: Any = None, seed: Optional[int] = None) -> Tensor:
    """Floats uniform on ``[0, 1)`` of the given shape (``rand(3, 4)``)."""
    return uniform(0.0, 1.0, size=shape, chunk_size=chunk_size, seed=seed)


def random_sample(size: Any = None, chunk_size: Any = None, seed: Optional[int] = None) -> Tensor:
    """Floats uniform on ``[0, 1)``."""
    return uniform(0.0, 1.0, size=size, chunk_size=chunk_size, seed=seed)


random = random_sample


def standard_normal(size: Any = None, chunk_size: Any = None, seed: Optional[int] = None) -> Tensor:
    """Standard normal floats."""
    return _make("normal", size, chunk_size, seed, 0.0, 1.0)


def randn(*shape: int, chunk_size: Any = None, seed: Optional[int] = None) -> Tensor:
    """Standard normal floats of the given shape (``randn(3, 4)``)."""
    return standard_normal(size=shape, chunk_size=chunk_size, seed=seed)


def normal(loc: float = 0.0, scale: float = 1.0, size: Any = None, chunk_size: Any = None, seed: Optional[int] = None) -> Tensor:
    """Normal floats with mean ``loc`` and standard deviation ``scale``."""
    if scale < 0:
        raise ValueError("scale < 0")
    return standard_normal(size=size, chunk_size=chunk_size, seed=seed) * float(scale) + float(loc)


def randint(low: int, high: Optional[int] = None, size: Any = None, dtype: Any = int, chunk_size: Any = None, seed: Optional[int] = None) -> Tensor:
    """Integers on ``[low, high)`` (``[0, low)`` when ``high`` is None), int64."""
    if high is None:
        low, high = 0, low
    if high <= low:
        raise ValueError("low >= high")
    t = _make("randint", size, chunk_size, seed, float(low), float(high))
    name = np.dtype(dtype).name
    return t if name == "int64" else t.astype(dtype)


def exponential(scale: float = 1.0, size: Any = None, chunk_size: Any = None, seed: Optional[int] = None) -> Tensor:
    """Exponential floats of mean ``scale`` (by inverting the distribution of uniform
    floats, so the same seed gives the same values whatever the chunking)."""
    if scale < 0:
        raise ValueError("scale < 0")
    u = uniform(0.0, 1.0, size=size, chunk_size=chunk_size, seed=seed)
    return _neg_log1p(u) * float(scale)


def _neg_log1p(u: Tensor) -> Tensor:
    from . import log1p

    return -log1p(-u)


def standard_exponential(size: Any = None, chunk_size: Any = None, seed: Optional[int] = None) -> Tensor:
    """Exponential floats of mean 1."""
    return exponential(1.0, size=size, chunk_size=chunk_size, seed=seed)


def permutation(x: Any, chunk_size: Any = None, seed: Optional[int] = None) -> Tensor:
    """A random permutation of ``range(x)`` (an int), or of a tensor's first axis: the
    stable argsort of uniform floats, so it is one permutation whatever the chunking
    and the same for a seed."""
    from . import _to_tensor, argsort

    if isinstance(x, numbers.Integral):
        n = int(x)
        if n < 0:
            raise ValueError("negative dimensions are not allowed")
        return argsort(uniform(0.0, 1.0, size=n, chunk_size=chunk_size, seed=seed))
    t = _to_tensor(x)
    if t.ndim == 0:
        raise IndexError("x must be an integer or at least 1-dimensional")
    n = t._known_shape("permutation")[0]
    chunk = chunk_size if chunk_size is not None else (t.chunks[0][0] if t.chunks[0] else 1)
    return t.take(permutation(n, chunk_size=chunk, seed=seed), axis=0)


def shuffle(x: Tensor, seed: Optional[int] = None) -> None:
    """Shuffles a tensor's first axis in place (it is rebound to the shuffled expression,
    as ``Tensor.sort`` does)."""
    from . import Tensor as _Tensor

    if not isinstance(x, _Tensor):
        raise TypeError("shuffle takes an ares tensor (it is shuffled in place)")
    shuffled = permutation(x, seed=seed)
    x._t = shuffled._t
    x._session = None


def choice(
    a: Any,
    size: Any = None,
    replace: bool = True,
    p: Any = None,
    chunk_size: Any = None,
    seed: Optional[int] = None,
) -> Tensor:
    """Random elements of ``a`` (a 1-d tensor or array, or ``range(a)`` for an int):
    uniform with replacement; weighted by ``p`` (the cumulative weights searched for
    uniform floats); without replacement the first of a random permutation."""
    from . import _to_tensor, cumsum, searchsorted
    from . import arange as _arange

    if isinstance(a, numbers.Integral):
        if a <= 0:
            raise ValueError("a must be a positive integer unless no samples are taken")
        pool = None
        n = int(a)
    else:
        pool = _to_tensor(a)
        if pool.ndim != 1:
            raise ValueError("a must be 1-dimensional")
        n = pool._known_shape("choice")[0]
        if n == 0:
            raise ValueError("a cannot be empty unless no samples are taken")
    shape = _size(size)
    count = int(np.prod(shape)) if shape else 1
    if not replace:
        if count > n:
            raise ValueError("Cannot take a larger sample than population when replace=False")
        if p is not None:
            raise NotImplementedError("choice with replace=False and p=")
        idx = permutation(n, seed=seed)[:count].reshape(shape)
    elif p is not None:
        w = np.asarray(p.fetch() if isinstance(p, Tensor) else p, dtype=np.float64)
        if w.ndim != 1 or w.shape[0] != n:
            raise ValueError("a and p must have same size")
        if (w < 0).any() or not np.isclose(w.sum(), 1.0):
            raise ValueError("probabilities are not non-negative" if (w < 0).any() else "probabilities do not sum to 1")
        edges = cumsum(_to_tensor(w))
        u = uniform(0.0, float(w.sum()), size=shape, chunk_size=chunk_size, seed=seed)
        idx = searchsorted(edges, u, side="right")
        idx = idx.clip(0, n - 1)
    else:
        idx = randint(0, n, size=shape, chunk_size=chunk_size, seed=seed)
    if pool is None:
        return idx if shape else idx.reshape(())
    return pool.take(idx.reshape(-1) if shape else idx.reshape(1), axis=0).reshape(shape)


def __getattr__(name: str) -> Any:
    # A np.random function not built here is named as unsupported, not missing.
    if not name.startswith("_") and hasattr(np.random, name):
        raise NotImplementedError(f"ares.tensor.random.{name} is not supported (numpy.random.{name} has no tiled form here yet)")
    raise AttributeError(f"module 'ares.tensor.random' has no attribute {name!r}")
