"""Ares: a distributed futures runtime in Rust, with Mars-style tiled tensors.

    import ares
    import ares.tensor as at

    ares.init(num_cpus=2)            # an embedded one-node cluster (or address="HOST:PORT")
    a = at.random.rand(4000, 4000, chunk_size=1000)
    print((a @ a.T).std().execute().fetch())
    ares.shutdown()

Every chunk runs as a task in a Rust worker process; Python only builds the expression.
``ares.init`` may also be used as a context manager (``with ares.init(): ...``).
"""

from __future__ import annotations

import atexit
import itertools
import os
import sys
import weakref
from typing import TYPE_CHECKING, Optional, Sequence, Union

from . import _native
from ._native import AresError

__all__ = [
    "AresError",
    "SessionClosedError",
    "Runtime",
    "Session",
    "init",
    "shutdown",
    "is_initialized",
    "node_stats",
    "new_session",
    "get_default_session",
]

__version__ = "0.1.0"

_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def _bytes(v: Union[int, str, None]) -> Optional[int]:
    """An int, or a size such as ``"2G"`` / ``"512M"``."""
    if v is None or isinstance(v, int):
        return v
    s = str(v).strip().upper().removesuffix("B").removesuffix("I")
    unit = s[-1] if s and s[-1] in _UNITS else ""
    try:
        return int(float(s[: len(s) - len(unit)]) * _UNITS[unit])
    except ValueError:
        raise ValueError(f"object_store_memory={v!r}: give bytes as an int or a size like '2G'") from None


def _worker_command() -> tuple[str, list[str]]:
    """Workers are a bare interpreter (no site, no numpy) that loads this package's
    extension module and enters its Rust worker loop at once: chunk tasks never run
    Python."""
    path = _native.__file__
    code = (
        "import importlib.util as u;"
        f"s=u.spec_from_file_location('ares._native',{path!r});"
        "m=u.module_from_spec(s);s.loader.exec_module(m);m._worker_main()"
    )
    return sys.executable, ["-S", "-c", code]


class Runtime:
    """The running runtime, returned by :func:`init`; as a context manager it calls
    :func:`shutdown` on exit."""

    def __enter__(self) -> "Runtime":
        return self

    def __exit__(self, *exc: object) -> None:
        shutdown()

    def __repr__(self) -> str:
        return f"<ares.Runtime initialized={is_initialized()}>"


def init(
    address: Optional[str] = None,
    num_cpus: Optional[int] = None,
    object_store_memory: Union[int, str, None] = None,
    spill_dirs: Optional[Sequence[Union[str, os.PathLike]]] = None,
) -> Runtime:
    """Starts the runtime in this process.

    With no ``address`` (and no ``ARES_ADDRESS`` in the environment) it starts an
    embedded one-node cluster: a node daemon on threads of this process and one Rust
    worker process per CPU. ``address="HOST:PORT"`` (with ``ARES_TOKEN`` set) joins a
    cluster started by ``ares start --head``; ``address="auto"`` finds the daemon
    running on this machine.

    Args:
        address: a cluster to connect to, as above.
        num_cpus: CPUs the embedded node offers (default: all of this machine's).
        object_store_memory: size of the shared-memory object store, in bytes or as
            ``"2G"`` (default: 30% of RAM, capped by the free space of /dev/shm, or of ARES_SHM_DIR).
        spill_dirs: directories objects are spilled to when the store is full.

    Raises:
        AresError: if the runtime is already running or cannot start.
    """
    program, args = _worker_command()
    _native.init(
        address,
        num_cpus,
        _bytes(object_store_memory),
        [os.fspath(d) for d in (spill_dirs or [])],
        program,
        args,
    )
    return Runtime()


class SessionClosedError(AresError):
    """A tensor or frame was computed in a session that is now closed (by
    :func:`shutdown` or leaving its ``with`` block): its chunks are gone. Compute it again
    in an open session, ``t.execute(session=ares.new_session())``."""


def shutdown() -> None:
    """Stops the runtime: workers exit, the embedded node and its store are removed, and
    every session closes. Safe to call twice. A tensor executed before it raises
    :class:`SessionClosedError` when fetched; one never computed runs in a new default
    session (starting an embedded node again, as on first use)."""
    global _default_session
    _default_session = None
    for s in list(_sessions):
        s.close()
    _native.shutdown()


def is_initialized() -> bool:
    """Whether :func:`init` has run (and :func:`shutdown` has not)."""
    return _native.is_initialized()


def node_stats() -> dict:
    """This node's object store figures (bytes and objects used, pinned, spilled)."""
    return _native.node_stats()


def _ensure_initialized() -> None:
    # Like Mars' default session: computing without init starts the embedded node.
    if not _native.is_initialized():
        init()


def _progress_shown_by_default() -> bool:
    """Progress shows where someone watches: stderr a terminal, or a Jupyter kernel's
    stream (which redraws a line on a carriage return)."""
    stream = sys.stderr
    try:
        if stream.isatty():
            return True
    except (AttributeError, ValueError):
        return False
    return type(stream).__module__.startswith("ipykernel")


class _Progress:
    """``with _Progress(show) as cb``: a progress callback for a native call (None when
    not shown), and the line ended afterwards."""

    def __init__(self, show: Optional[bool]) -> None:
        self.line = _ProgressLine() if (_progress_shown_by_default() if show is None else show) else None

    def __enter__(self) -> "Optional[_ProgressLine]":
        return self.line

    def __exit__(self, *exc: object) -> None:
        if self.line:
            self.line.end()


class _ProgressLine:
    """A one-line text progress display on stderr (no widgets, so it also shows in
    Jupyter and in logs)."""

    def __init__(self) -> None:
        self.shown = False

    def __call__(self, done: int, total: int) -> None:
        width = 30
        filled = width * done // max(total, 1)
        sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} chunk tasks")
        sys.stderr.flush()
        self.shown = True

    def end(self) -> None:
        if self.shown:
            sys.stderr.write("\n")
            sys.stderr.flush()


class Session:
    """Runs tensors. ``session.execute(a, b)`` computes them and keeps their chunks in
    the object store while the tensors live; ``session.fetch(a)`` returns a numpy array.
    Make one with :func:`new_session`; as a context manager it closes on exit (Mars').

    A tensor remembers the session that computed it: its ``fetch()`` and ``execute()``
    use that session, and raise :class:`SessionClosedError` once it is closed.
    """

    _ids = itertools.count(1)

    def __init__(self) -> None:
        _ensure_initialized()
        self.id = next(Session._ids)
        # One native session: results are cached per session, so executing in one and
        # fetching from another would compute twice.
        self._native: Optional[_native.NativeSession] = _native.NativeSession()
        _sessions.add(self)

    @property
    def closed(self) -> bool:
        """Whether the session is closed (its results are gone)."""
        return self._native is None

    def close(self) -> None:
        """Drops what the session computed; its tensors can no longer be fetched from it."""
        self._native = None
        self.__dict__.pop("_frames_native", None)

    def _open(self) -> "_native.NativeSession":
        if self._native is None:
            raise SessionClosedError(
                f"{self!r} is closed (by ares.shutdown() or its with block) and what it computed is gone; "
                "compute again in an open session: t.execute(session=ares.new_session())"
            )
        return self._native

    def execute(self, *tensors: "Tensor", show_progress: Optional[bool] = None) -> Union["Tensor", list]:
        """Computes the tensors (their chunks stay in the store while they live).

        ``show_progress`` draws a text progress line on stderr as chunk tasks finish; by
        default it shows where stderr is a terminal or a Jupyter kernel. Returns the
        tensor, or the list of tensors when given several, so
        ``session.execute(a).fetch()`` reads as in Mars.
        """
        from .tensor import Tensor

        native = self._open()
        ts = [_as_tensor(t, Tensor) for t in tensors]
        with _Progress(show_progress) as line:
            try:
                native.execute([t._t for t in ts], line)
            except AresError as e:
                raise _numeric_failure(e) from e
        for t in ts:
            t._session = self
        return tensors[0] if len(tensors) == 1 else list(tensors)

    def fetch(self, *tensors: "Tensor", show_progress: Optional[bool] = None):
        """Computes the tensors if needed and returns them as numpy arrays (one array,
        or a list for several). A 0-d result is a 0-d array. Progress shows as for
        :meth:`execute` when chunk tasks run."""
        from .tensor import Tensor

        native = self._open()
        ts = [_as_tensor(t, Tensor) for t in tensors]
        with _Progress(show_progress) as line:
            try:
                out = [native.fetch(t._t, line) for t in ts]
            except AresError as e:
                raise _numeric_failure(e) from e
        for t in ts:
            t._session = self
        return out[0] if len(out) == 1 else out

    def is_computed(self, t: "Tensor") -> bool:
        """Whether ``t`` was computed in this open session (never computes)."""
        return self._native is not None and self._native.is_computed(t._t)

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<ares.Session {self.id}{' closed' if self.closed else ''}>"


def _numeric_failure(e: AresError) -> Exception:
    """A chunk kernel's failure as numpy reports it: a singular or not positive definite
    matrix as ``numpy.linalg.LinAlgError``, an integer to a negative integer power as
    ``ValueError``, a position out of bounds as ``IndexError``; anything else
    unchanged."""
    msg = str(e)
    if "Integers to negative integer powers are not allowed" in msg:
        return ValueError(msg)
    if "is out of bounds for axis" in msg:
        return IndexError(msg)
    if "the matrix is singular" in msg or "not positive definite" in msg:
        import numpy as np

        return np.linalg.LinAlgError(msg)
    return e


def _as_tensor(t: object, cls: type) -> "Tensor":
    if not isinstance(t, cls):
        raise TypeError(f"expected an ares.tensor.Tensor, got {type(t).__name__}")
    return t  # type: ignore[return-value]


_default_session: Optional[Session] = None
# Every open session, so shutdown closes them all.
_sessions: "weakref.WeakSet[Session]" = weakref.WeakSet()


def new_session() -> Session:
    """A new session, which also becomes the default one (starting the embedded node if
    :func:`init` was not called)."""
    global _default_session
    _default_session = Session()
    return _default_session


def get_default_session() -> Session:
    """The session ``tensor.execute()`` and ``tensor.fetch()`` use (made on first use)."""
    global _default_session
    if _default_session is None or _default_session.closed or not _native.is_initialized():
        _default_session = Session()
    return _default_session


atexit.register(shutdown)

if TYPE_CHECKING:
    from .tensor import Tensor
