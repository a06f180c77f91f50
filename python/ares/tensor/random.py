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

__all__ = ["seed", "rand", "randn", "random", "random_sample", "uniform", "normal", "standard_normal", "randint"]

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


def __getattr__(name: str) -> Any:
    # A np.random function not built here is named as unsupported, not missing.
    if not name.startswith("_") and hasattr(np.random, name):
        raise NotImplementedError(f"ares.tensor.random.{name} is not supported (numpy.random.{name} has no tiled form here yet)")
    raise AttributeError(f"module 'ares.tensor.random' has no attribute {name!r}")
