"""Mars-style tiled data frames with pandas' names: ``import ares.dataframe as ad``.

A :class:`DataFrame` is lazy: columns with known names and dtypes, rows split into
chunks. Nothing is computed until ``execute()`` or ``fetch()``; then each operation is
tiled into chunk tasks that run in Rust worker processes (polars inside), per-chunk
steps fused into one task, group-bys combined in a tree or through a hash shuffle.

    import ares.tensor as at
    import ares.dataframe as ad

    df = ad.DataFrame({"k": at.random.randint(0, 100, 10**7, chunk_size=10**6),
                       "x": at.random.rand(10**7, chunk_size=10**6)})
    df.groupby("k")[["x"]].sum().execute().fetch()      # a pandas.DataFrame

Where this differs from pandas (see docs/guide/python.md and docs/guide/dataframes.md):

- there is no row index: results fetch with a fresh ``RangeIndex`` (group-by results
  and ``value_counts`` put their keys in the index, as pandas does);
- missing values are ``null`` or ``NaN`` alike; an integer column with missing values
  fetches as ``float64`` with ``NaN``, as pandas makes it;
- shuffled results (group-bys with many groups, ``drop_duplicates`` with many distinct
  rows, merges of two large frames) come in no set row order; group-bys sort by key as
  pandas' ``sort=True`` does;
- ``df.sum()`` and the other whole-frame reductions fetch as a ``pandas.Series`` indexed
  by column, as in pandas; ``df["a"].sum()`` is lazy (``.fetch()`` gives the number).

Anything not supported raises ``NotImplementedError`` naming it.
"""

from __future__ import annotations

import itertools
import math
import numbers
import operator
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple, Union

import numpy as np

from .. import _native, _Progress, get_default_session

__all__ = ["DataFrame", "Series", "Index", "GroupBy", "Scalar", "from_pandas", "merge", "concat", "read_csv",
           "read_parquet", "to_datetime", "melt", "pivot_table", "crosstab"]

# Rows per chunk made from local data, by default: chunks of about this many bytes.
_CHUNK_BYTES = 64 << 20

_AGGS = ("sum", "mean", "count", "min", "max", "std", "var", "first", "last", "size", "nunique")


def _pandas():
    try:
        import pandas as pd
    except ImportError:  # pragma: no cover - pandas is a dependency of the tests
        raise ImportError("fetching a data frame returns pandas objects: pip install pandas") from None
    return pd


def _string_dtype(pd: Any) -> Any:
    """The dtype pandas gives a column of strings, asked of pandas itself (its string
    dtype under pandas 3 or ``future.infer_string``, else ``object``)."""
    return pd.Series(["a"]).dtype


def _zone_of(native: str) -> Optional[str]:
    """The zone of an aware datetime's native dtype name (``"datetime64[ns, UTC]"``),
    ``None`` for any other dtype."""
    if native.startswith("datetime64[") and ", " in native:
        return native[:-1].split(", ")[1]
    return None


def _dtype_of(name: str) -> Any:
    """A native dtype name as pandas shows it (strings as pandas' string dtype)."""
    if name == "list":
        return np.dtype(object)
    if _zone_of(name) is not None:
        return _pandas().DatetimeTZDtype(name[len("datetime64["):].split(",")[0], _zone_of(name))
    if name != "object":
        return np.dtype(name)
    try:
        import pandas as pd
    except ImportError:
        return np.dtype(object)
    return _string_dtype(pd)


def _session(session: Any = None):
    s = session if session is not None else get_default_session()
    frames = getattr(s, "_frames_native", None)
    if frames is None:
        # The tensor session's own: frames and tensors share one session (one graph for
        # an expression mixing both, and what either computed).
        opened = getattr(s, "_open", None)  # raises SessionClosedError for a closed session
        frames = opened().frame_session() if opened is not None else _native.NativeFrameSession()
        s._frames_native = frames
    return frames


def _execute(frames: List[Any], session: Any, show_progress: Optional[bool]) -> None:
    with _Progress(show_progress) as line:
        _session(session).execute(frames, line)


def _as_list(v: Union[str, Sequence[str], None]) -> List[str]:
    if v is None:
        return []
    if isinstance(v, str):
        return [v]
    return list(v)


def _missing(x: Any) -> bool:
    """None, NaN, NaT or pandas' NA: a missing value in an object column."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return True
    return type(x).__name__ in ("NAType", "NaTType")


def _time_values(ints: Any, unit: str) -> Any:
    """A fetched time column from its integers and unit: ``timedelta64[ns]`` as named,
    a datetime's unit (``"ns"``), or an aware one's with its zone (``"ns, UTC"``; its
    integers are UTC instants): a numpy array, or pandas' array of aware datetimes."""
    if unit.startswith("timedelta64"):
        return ints.view(unit)
    if ", " not in unit:
        return ints.view(f"datetime64[{unit}]")
    unit, tz = unit.split(", ")
    pd = _pandas()
    return pd.DatetimeIndex(ints.view(f"datetime64[{unit}]")).tz_localize("UTC").tz_convert(tz).array


def _tz_name(tz: Any) -> str:
    """A Python time zone (``zoneinfo``, ``pytz``, ``dateutil``, ``datetime.timezone``)
    as the name the engine resolves: an IANA name, ``UTC`` or an offset ``+HH:MM``."""
    import datetime as _dt
    for attr in ("key", "zone"):
        name = getattr(tz, attr, None)
        if isinstance(name, str):
            return name
    if isinstance(tz, str):
        return tz
    if tz is _dt.timezone.utc or str(tz) in ("UTC", "tzutc()"):
        return "UTC"
    off = tz.utcoffset(None)
    if off is not None:
        m = int(off.total_seconds()) // 60
        return f"{'-' if m < 0 else '+'}{abs(m) // 60:02}:{abs(m) % 60:02}"
    raise NotImplementedError(f"time zone {tz!r}: give an IANA name such as 'Europe/Paris' or a fixed offset")


def _column_for_native(name: str, v: Any) -> Any:
    """A column as the native layer takes it: a 1-d numpy array of numbers or booleans,
    ``(int64 array, unit)`` for datetimes, or a list of ``str``/``None`` (or of
    ``bool``/``None``, a boolean column with missing values)."""
    pd = None
    try:
        import pandas as pd  # noqa: F811
    except ImportError:
        pass
    if pd is not None and isinstance(v, (pd.Series, pd.Index)):
        if isinstance(v.dtype, pd.CategoricalDtype):
            raise NotImplementedError(f"column {name!r}: categorical columns are not supported")
        if isinstance(v.dtype, pd.DatetimeTZDtype):
            # UTC instants, the zone named after the unit as pandas' dtype names it.
            unit, tz = v.dtype.unit, _tz_name(v.dtype.tz)
            utc = np.asarray(v.dt.tz_convert(None) if isinstance(v, pd.Series) else v.tz_convert(None))
            if unit == "s":
                utc, unit = utc.astype("datetime64[ms]"), "ms"
            return (np.ascontiguousarray(utc.view("int64")), f"{unit}, {tz}")
        if pd.api.types.is_extension_array_dtype(v.dtype) and v.dtype.kind == "b" and v.isna().any():
            v = v.to_numpy(dtype=object, na_value=None)
        elif pd.api.types.is_extension_array_dtype(v.dtype) and v.dtype.kind in "iufb":
            v = v.to_numpy(dtype="float64" if v.isna().any() else v.dtype.numpy_dtype, na_value=np.nan)
        else:
            v = v.to_numpy()
    a = np.asarray(v)
    if a.ndim != 1:
        raise ValueError(f"column {name!r} must be 1-d, it has shape {a.shape}")
    if a.dtype.kind == "M":
        unit = np.datetime_data(a.dtype)[0]
        if unit == "s":
            a, unit = a.astype("datetime64[ms]"), "ms"
        return (np.ascontiguousarray(a.view("int64")), unit)
    if a.dtype.kind == "m":
        return (np.ascontiguousarray(a.astype("timedelta64[ns]").view("int64")), "timedelta64[ns]")
    if a.dtype.kind == "O":
        values = [None if _missing(x) else x for x in a.tolist()]
        present = [x for x in values if x is not None]
        if present and all(isinstance(x, (list, tuple, np.ndarray)) for x in present):
            # Lists (what str.split makes, and explode takes): a list column.
            return ("list", [None if x is None else list(x.tolist() if isinstance(x, np.ndarray) else x)
                             for x in values])
        if present and all(isinstance(x, (bool, np.bool_)) for x in present):
            # True/False with missing values: a boolean column with nulls.
            return [None if x is None else bool(x) for x in values]
    if a.dtype.kind in "OUS":
        out = []
        for x in a.tolist():
            if _missing(x):
                out.append(None)
            elif isinstance(x, (str, bytes)):
                out.append(x if isinstance(x, str) else x.decode())
            else:
                raise NotImplementedError(
                    f"column {name!r} holds {type(x).__name__} values beside strings or missing values: "
                    "give one kind per column (strings, numbers or booleans)"
                )
        return out
    if a.dtype.kind in "iu" and a.dtype.itemsize < 4:
        a = a.astype(np.int32 if a.dtype.kind == "i" else np.uint32)
    if a.dtype == np.float16:
        a = a.astype(np.float32)
    return np.ascontiguousarray(a)


class _Operators:
    """Python's operators on a lazy value, as its ``_bin(op, other, reflected)`` and
    ``_unary(op)`` build them (a ``Series``' column expression, a ``Scalar``'s map)."""

    def __add__(self, o): return self._bin("add", o)
    def __radd__(self, o): return self._bin("add", o, True)
    def __sub__(self, o): return self._bin("sub", o)
    def __rsub__(self, o): return self._bin("sub", o, True)
    def __mul__(self, o): return self._bin("mul", o)
    def __rmul__(self, o): return self._bin("mul", o, True)
    def __truediv__(self, o): return self._bin("div", o)
    def __rtruediv__(self, o): return self._bin("div", o, True)
    def __floordiv__(self, o): return self._bin("floordiv", o)
    def __rfloordiv__(self, o): return self._bin("floordiv", o, True)
    def __mod__(self, o): return self._bin("mod", o)
    def __rmod__(self, o): return self._bin("mod", o, True)
    def __pow__(self, o): return self._bin("pow", o)
    def __rpow__(self, o): return self._bin("pow", o, True)
    def __eq__(self, o): return self._bin("eq", o)  # type: ignore[override]
    def __ne__(self, o): return self._bin("ne", o)  # type: ignore[override]
    def __lt__(self, o): return self._bin("lt", o)
    def __le__(self, o): return self._bin("le", o)
    def __gt__(self, o): return self._bin("gt", o)
    def __ge__(self, o): return self._bin("ge", o)
    def __and__(self, o): return self._bin("and", o)
    def __rand__(self, o): return self._bin("and", o, True)
    def __or__(self, o): return self._bin("or", o)
    def __ror__(self, o): return self._bin("or", o, True)
    def __neg__(self): return self._unary("neg")
    def __abs__(self): return self._unary("abs")
    def __invert__(self): return self._unary("not")

    __hash__ = None  # type: ignore[assignment]


class Scalar(_Operators):
    """A lazy number: a reduction of one column (``df["a"].sum()``). ``fetch()`` (or
    ``float()``/``int()``/``bool()``) computes it.

    It composes lazily, as pandas' numbers do eagerly: arithmetic and comparisons with
    numbers and other scalars give scalars (``s.sum() * 0.2``), and with a column give a
    column (``df[df.a > df.a.mean()]``, ``df.a == df.a.max()``); nothing runs until the
    result is computed, and then the scalar first. It keeps its dtype in arithmetic (as
    a numpy scalar does, not as a Python number)."""

    def __init__(self, frame: "DataFrame", if_empty: Optional[bool] = None) -> None:
        self._frame = frame
        # For any/all: the answer is a bool, and this one when there is no value at all.
        self._if_empty = if_empty

    @property
    def dtype(self) -> Any:
        return _dtype_of(self._frame._f.dtypes[0])

    def _plain(self) -> Any:
        """The native frame of the value (not an any()/all(), whose missing value means
        its answer for no values)."""
        if self._if_empty is not None:
            raise NotImplementedError("arithmetic on the result of any()/all(): bool() it first")
        return self._frame._f

    def _expr(self) -> Any:
        return _native.NativeExpr.value(self._plain())

    def _bin(self, op: str, other: Any, reflected: bool = False) -> Any:
        if isinstance(other, Series):
            return NotImplemented  # the column's reflected operator makes a column
        if isinstance(other, Scalar):
            o = other._expr()
        elif isinstance(other, (bool, numbers.Number, str, np.generic)) and not isinstance(other, complex):
            o = _native.NativeExpr.lit(_py(other))
        else:
            return NotImplemented
        f = self._plain()
        mine = _native.NativeExpr.col(f.columns[0])
        e = o.binary(op, mine) if reflected else mine.binary(op, o)
        f.expr_dtype(e)  # a wrong dtype raises here, as in pandas
        return Scalar(DataFrame(_frame=f.assign([("__ares_value", e)]).select(["__ares_value"])))

    def _unary(self, op: str) -> "Scalar":
        f = self._plain()
        e = _native.NativeExpr.col(f.columns[0]).unary(op)
        f.expr_dtype(e)
        return Scalar(DataFrame(_frame=f.assign([("__ares_value", e)]).select(["__ares_value"])))

    def __bool__(self) -> bool:
        return bool(self.fetch())

    def execute(self, session: Any = None, show_progress: Optional[bool] = None) -> "Scalar":
        self._frame.execute(session=session, show_progress=show_progress)
        return self

    def fetch(self, session: Any = None, show_progress: Optional[bool] = None) -> Any:
        with _Progress(show_progress) as line:
            names, cols = _session(session).fetch(self._frame._f, line)
        v = cols[0]
        if self._if_empty is not None:
            x = v[0] if isinstance(v, list) else v[0].item()
            return self._if_empty if _missing(x) else bool(x)
        if isinstance(v, list):
            return v[0]
        if isinstance(v, tuple):
            return _time_values(v[0], v[1])[0]
        return v[0].item()

    def __float__(self) -> float:
        return float(self.fetch())

    def __int__(self) -> int:
        return int(self.fetch())

    def __repr__(self) -> str:
        return f"ares.dataframe.Scalar({self._frame._f!r})"


class DataFrame:
    """A lazy, chunked data frame with pandas' names.

    ``DataFrame(data, chunk_size=None)``: ``data`` is a dict of column name to a 1-d
    ``ares.tensor`` tensor (all chunked alike: the frame's chunks are theirs), a numpy
    array, a list or a pandas Series; or a ``pandas.DataFrame``. ``chunk_size`` is the
    rows per chunk for local data (default: chunks of about 64 MiB).
    """

    def __init__(self, data: Any = None, chunk_size: Optional[int] = None, *, _frame: Any = None,
                 _index: Sequence[str] = (), _kind: str = "frame", _rows: Any = None) -> None:
        # `_kind` says how `fetch` presents the result: a frame, a row of reductions
        # (a Series by column), or one column (a Series, `_index` columns as its index).
        self._index = list(_index)
        self._kind = _kind
        # Column labels that are not strings (a pivot's values) and the columns' name, as
        # fetch shows them: {native name: label}, name.
        self._labels: Optional[Tuple[Dict[str, Any], Any]] = None
        # A frame made of this one's native frame plus columns (a group scan's), with the
        # same rows: a column of it can be set on a frame whose native frame is that one.
        self._extends: Any = None
        # Frames with the same rows (one made from another by adding, converting,
        # selecting or renaming columns) share this token: a column expression of one
        # can be used in the other.
        self._rows = _rows if _rows is not None else object()
        if _frame is not None:
            self._f = _frame
            return
        if data is None:
            raise ValueError("DataFrame() needs data: a dict of columns, or a pandas.DataFrame")
        pd = None
        try:
            import pandas as pd  # noqa: F811
        except ImportError:
            pass
        if pd is not None and isinstance(data, pd.DataFrame):
            data = {str(c): data[c] for c in data.columns}
        if not isinstance(data, dict) or not data:
            raise TypeError("DataFrame(data): give a non-empty dict of column name to values, or a pandas.DataFrame")
        from ..tensor import Tensor

        names = [str(k) for k in data]
        values = list(data.values())
        if all(isinstance(v, Tensor) for v in values):
            if chunk_size is not None:
                values = [v.rechunk(chunk_size) for v in values]
            self._f = _native.frame_from_tensors(names, [v._t for v in values])
            return
        if any(isinstance(v, Tensor) for v in values):
            raise NotImplementedError("mixing tensor columns with local columns: make them all tensors, or fetch them")
        cols = [_column_for_native(n, v) for n, v in zip(names, values)]
        rows = len(cols[0][0]) if isinstance(cols[0], tuple) else len(cols[0])
        if chunk_size is None:
            row_bytes = sum(8 if not isinstance(c, list) else 32 for c in cols)
            chunk_size = max(1, min(max(rows, 1), _CHUNK_BYTES // row_bytes))
        if chunk_size < 1:
            raise ValueError(f"chunk_size must be at least 1, got {chunk_size}")
        self._f = _native.frame_from_columns(names, cols, int(chunk_size))

    def _wrap(self, native: Any, index: Sequence[str] = (), kind: str = "frame", same_rows: bool = False) -> "DataFrame":
        return DataFrame(_frame=native, _index=index, _kind=kind, _rows=self._rows if same_rows else None)

    # ----- metadata -----------------------------------------------------------------

    @property
    def columns(self) -> List[str]:
        """Column names (index columns of a group-by result left out, as in pandas)."""
        return [c for c in self._f.columns if c not in self._index]

    @property
    def dtypes(self):
        """Each column's dtype (a pandas Series, as in pandas)."""
        pd = _pandas()
        types = dict(zip(self._f.columns, self._f.dtypes))
        return pd.Series({c: _dtype_of(types[c]) for c in self.columns}, dtype=object)

    @property
    def shape(self) -> Tuple[float, int]:
        """``(rows, columns)``; rows are NaN until the frame is executed (as in Mars)."""
        rows = _session().rows_if_computed(self._f)
        return (math.nan if rows is None else int(rows), len(self.columns))

    def __len__(self) -> int:
        self.execute(show_progress=False)
        return int(_session().rows_if_computed(self._f))

    @property
    def method(self) -> Optional[str]:
        """How a group-by, drop_duplicates or merge was computed ('tree', 'shuffle' or
        'broadcast'), once executed: Mars' ``auto`` choice, recorded in the plan."""
        return _session().method(self._f)

    def explain(self) -> str:
        """The plan as it will run, one operator a line with its inputs indented below
        (as polars' ``explain``), after the rewrites made as the frame was built: filters
        moved below merges, merges reordered, group-bys cut to the keys a merge keeps."""
        return self._f.explain()

    def __repr__(self) -> str:
        cols = ", ".join(f"{c}: {t}" for c, t in zip(self._f.columns, self._f.dtypes))
        rows = _session().rows_if_computed(self._f) if _native.is_initialized() else None
        return f"ares.dataframe.DataFrame<{cols}; rows={'?' if rows is None else rows}>"

    # ----- running --------------------------------------------------------------------

    def execute(self, session: Any = None, show_progress: Optional[bool] = None) -> "DataFrame":
        """Computes the frame; its chunks stay in the object store while it lives."""
        _execute([self._f], session, show_progress)
        return self

    def fetch(self, session: Any = None, show_progress: Optional[bool] = None):
        """Computes the frame if needed and returns it as pandas: a ``pandas.DataFrame``
        (a ``pandas.Series`` for reductions and single columns). Progress shows as for
        :meth:`execute` when chunk tasks run."""
        pd = _pandas()
        with _Progress(show_progress) as line:
            names, cols = _session(session).fetch(self._f, line)
        types = dict(zip(self._f.columns, self._f.dtypes))
        strings = _string_dtype(pd)
        data = {}
        for n, c in zip(names, cols):
            if isinstance(c, tuple) and isinstance(c[0], str) and c[0] == "list":
                data[n] = pd.Series(c[1], dtype=object)
            elif isinstance(c, tuple):
                data[n] = _time_values(c[0], c[1])
            elif isinstance(c, list):
                # Strings, or booleans with missing values (object, as pandas has them).
                data[n] = pd.Series(c, dtype=strings if types.get(n) == "object" else object)
            else:
                data[n] = c
        out = pd.DataFrame(data, columns=names)

        def relabel(frame: Any) -> None:
            labels, name = self._labels
            shown = [labels.get(c, c) for c in frame.columns]
            if isinstance(name, list):
                frame.columns = pd.MultiIndex.from_tuples(shown, names=name)
            else:
                frame.columns = pd.Index(shown, name=name)

        if self._labels is not None and not self._index:
            relabel(out)
        if self._kind == "row":
            return out.iloc[0].rename(None) if len(out) else pd.Series(dtype=float)
        if self._index:
            out = out.set_index(self._index)
            if self._labels is not None:
                relabel(out)
        if self._kind in ("describe", "describe_series"):
            # The statistics' names as pandas makes them (its default string dtype).
            out.index = pd.Index(list(out.index))
        if self._kind in ("series", "describe_series"):
            s = out[out.columns[0]]
            return s.rename(None) if s.name == "__ares_value" else s
        return out

    to_pandas = fetch

    # ----- columns --------------------------------------------------------------------

    def _col(self, name: str) -> "Series":
        """A column or an index column (``query`` and ``merge`` read both, as pandas)."""
        if name not in self._f.columns:
            raise KeyError(name)
        return Series(self, _native.NativeExpr.col(name), name)

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            if key in self._index:
                raise KeyError(f"{key!r} is the index, not a column: reset_index() makes it one")
            return self._col(key)
        if isinstance(key, Series):
            return self._wrap(self._f.filter(self._own(key)._e), self._index)
        if isinstance(key, (list, tuple)):
            cols = [str(k) for k in key]
            missing = [c for c in cols if c not in self.columns]
            if missing:
                raise KeyError(f"{missing} not in columns {self.columns}")
            return self._wrap(self._f.select(self._index + [c for c in cols if c not in self._index]), self._index,
                              same_rows=True)
        if isinstance(key, slice):
            if key.start in (None, 0) and key.step in (None, 1) and isinstance(key.stop, int) and key.stop >= 0:
                return self.head(key.stop)
            raise NotImplementedError("row slices other than df[:n] (use head / tail)")
        raise NotImplementedError(f"indexing a DataFrame with {type(key).__name__}")

    @property
    def loc(self) -> "_Loc":
        """Label-based selection as far as frames without an index allow it:
        ``df.loc[mask]``, ``df.loc[mask, "a"]``, ``df.loc[mask, ["a", "b"]]``,
        ``df.loc[:, cols]``."""
        return _Loc(self)

    @property
    def iloc(self) -> "_ILoc":
        """Position-based rows: ``df.iloc[:n]`` (the first n) and ``df.iloc[-n:]`` (the
        last n), optionally with column positions: ``df.iloc[:n, [0, 2]]``."""
        return _ILoc(self)

    def query(self, expr: str, **kwargs: Any) -> "DataFrame":
        """pandas' ``query``: the rows where a boolean expression over the columns holds
        (comparisons, ``and``/``or``/``not``, ``&``/``|``/``~``, arithmetic, numbers and
        strings, ``@name`` for a variable given in ``local_dict``/``global_dict`` or of
        the caller). Runs as a filter fused into the frame's tasks."""
        import inspect

        scope: Dict[str, Any] = {}
        frame = inspect.currentframe()
        if frame is not None and frame.f_back is not None:
            scope.update(frame.f_back.f_globals)
            scope.update(frame.f_back.f_locals)
        scope.update(kwargs.pop("global_dict", None) or {})
        scope.update(kwargs.pop("local_dict", None) or {})
        if kwargs.pop("inplace", False):
            raise NotImplementedError("query(inplace=True): use the returned frame")
        if kwargs:
            raise NotImplementedError(f"query({', '.join(kwargs)}=...)")
        return self[_query_mask(self, expr, scope)]

    def copy(self, deep: bool = True) -> "DataFrame":
        """The same lazy frame (frames are never changed in place, but for columns set with
        ``df[name] = ...``, which a copy does not see)."""
        return self._wrap(self._f, self._index, self._kind, same_rows=True)

    def to_numpy(self, dtype: Any = None) -> np.ndarray:
        """Computes the frame and returns its values as one numpy array (pandas'
        ``to_numpy``); ``to_tensor()`` keeps them in the cluster instead."""
        return self.fetch().to_numpy(dtype=dtype)

    @property
    def values(self) -> np.ndarray:
        return self.to_numpy()

    def __getattr__(self, name: str) -> "Series":
        if name.startswith("_"):
            raise AttributeError(name)
        if name in self.columns:
            return self[name]
        raise AttributeError(f"'DataFrame' object has no attribute {name!r}")

    def __setitem__(self, key: str, value: Any) -> None:
        self._f = self.assign(**{str(key): value})._f

    def explode(self, column: Any, ignore_index: bool = False) -> "DataFrame":
        """Each element of ``column``'s lists a row of its own, the other columns repeated
        (an empty or missing list: one row with a missing value), rows in order."""
        cols = _as_list(column)
        if len(cols) != 1:
            raise NotImplementedError("explode of several columns at once: explode one, then the next")
        if cols[0] not in self.columns:
            raise KeyError(cols[0])
        return self._wrap(self._f.explode(cols[0]), self._index)

    def _scan_columns(self, kind: str, periods: int = 1, min_periods: int = 0, then: Any = None) -> "DataFrame":
        """Each column's running ``kind`` over the rows in order (see ``Series._scan``),
        ``then(column, scanned)`` applied when given; index columns kept."""
        f = self._f
        for c in self.columns:
            f = f.group_scan([], c, kind, f"__ares_{kind}_{c}", periods, min_periods)
        base = DataFrame(_frame=f, _index=self._index, _rows=self._rows)
        exprs = []
        for c in self.columns:
            e = Series(base, _native.NativeExpr.col(f"__ares_{kind}_{c}"), c)
            if then is not None:
                e = then(Series(base, _native.NativeExpr.col(c), c), e)
            exprs.append((f"__ares_out_{c}", e._e))
        out = f.assign(exprs).select(self._index + [n for n, _ in exprs])
        return self._wrap(out.rename([(n, c) for (n, _), c in zip(exprs, self.columns)]), self._index, same_rows=True)

    def cumsum(self) -> "DataFrame":
        """Running sums of every column in row order (numeric columns)."""
        return self._scan_columns("cumsum")

    def cummin(self) -> "DataFrame":
        return self._scan_columns("cummin")

    def cummax(self) -> "DataFrame":
        return self._scan_columns("cummax")

    def shift(self, periods: int = 1, fill_value: Any = None) -> "DataFrame":
        """Every column's value ``periods`` rows before (after, for negative periods;
        missing where there is none, or ``fill_value``)."""
        if fill_value is None:
            return self._scan_columns(*_shift_of(periods, "shift"))
        out = self
        for c in self.columns:
            # One at a time: each extends the frame the one before made.
            out = out.assign(**{c: out[c].shift(periods, fill_value)})
        return out

    def diff(self, periods: int = 1) -> "DataFrame":
        return self._scan_columns(*_shift_of(periods, "diff"), then=lambda v, other: v - other)

    def pct_change(self, periods: int = 1) -> "DataFrame":
        return self._scan_columns(*_shift_of(periods, "pct_change"), then=lambda v, other: v / other - 1)

    def rank(self, method: str = "average", ascending: bool = True, na_option: str = "keep", pct: bool = False,
             numeric_only: bool = False, axis: Any = 0) -> "DataFrame":
        """Every column's ranks (see ``Series.rank``); ``numeric_only`` keeps the numeric
        columns only."""
        _rank_options(na_option, axis)
        cols = [c for c in self.columns
                if not numeric_only or _native_numeric(dict(zip(self._f.columns, self._f.dtypes))[c])]
        out = self[cols] if cols != self.columns else self
        for c in cols:
            # One at a time: each rank extends the frame the one before made.
            out = out.assign(**{c: out[c].rank(method, ascending, na_option, pct)})
        return out

    def rolling(self, window: int, min_periods: Optional[int] = None, center: bool = False,
                win_type: Any = None, on: Any = None, closed: Any = None) -> "Rolling":
        """A window of ``window`` rows ending at each row, over every column (numeric
        ones): ``.sum()``, ``.mean()``, ``.min()``, ``.max()``."""
        return Rolling(self, window, min_periods, center, win_type, on, closed)

    def _adopting(self, value: Any) -> "DataFrame":
        """This frame, or the frame ``value`` (a column of a group scan of this frame, as
        ``df.groupby(k)[c].cumsum()``) is an extension of: its native frame then serves,
        the extra columns dropped after the assignment."""
        if (isinstance(value, Series) and value._base is not self and value._base._rows is self._rows
                and value._base._extends is not None and value._base._extends is self._f):
            return value._base
        return self

    def _settable(self, name: str) -> str:
        if name in self._index:
            raise NotImplementedError(
                f"a column named like the index {name!r} (a frame here cannot hold both): reset_index() first"
            )
        return name

    def _own(self, s: "Series") -> "Series":
        if s._base._rows is not self._rows:
            raise NotImplementedError(
                "using a column of another frame (pandas would align the two by index): "
                "build the mask or values from this frame's columns"
            )
        return s

    def _expr(self, value: Any):
        if isinstance(value, Series):
            return self._own(value)._e
        if isinstance(value, (bool, numbers.Number, str)) and not isinstance(value, complex):
            return _native.NativeExpr.lit(_py(value))
        raise NotImplementedError(f"setting a column to a {type(value).__name__} (give a column or a scalar)")

    def assign(self, **columns: Any) -> "DataFrame":
        """Columns set to values (a column of this frame, a scalar, or a callable of the
        frame), in order: pandas' ``assign``."""
        out = self
        for name, v in columns.items():
            if callable(v):
                v = v(out)
            src = out._adopting(v)
            f = src._f.assign([(out._settable(name), src._expr(v))])
            if src is not out:
                # Only this frame's columns and the new one: the scan's own go.
                f = f.select(out._f.columns if name in out._f.columns else out._f.columns + [name])
            out = out._wrap(f, out._index, same_rows=True)
        return out

    def astype(self, dtype: Union[str, type, Dict[str, Any]]) -> "DataFrame":
        """Columns converted: one dtype for all, or ``{column: dtype}``."""
        spec = dtype if isinstance(dtype, dict) else {c: dtype for c in self.columns}
        types = dict(zip(self._f.columns, self._f.dtypes))
        for c in spec:
            if c not in self.columns:
                raise KeyError(c)
        pairs = [(c, _cast(_native.NativeExpr.col(c), types[c], t)) for c, t in spec.items()]
        return self._wrap(self._f.assign(pairs), self._index, same_rows=True)

    def fillna(self, value: Any) -> "DataFrame":
        """Missing values replaced: by one value (in the columns of its kind), or per
        column with ``{column: value}``."""
        if isinstance(value, dict):
            pairs = [(c, _native.NativeExpr.col(c).fill_na(_py(v))) for c, v in value.items()]
            return self._wrap(self._f.assign(pairs), self._index)
        # The index's labels are not values: only the other columns are filled.
        return self._wrap(self._f.fillna(_py(value), self._values()), self._index)

    def dropna(self, subset: Union[str, Sequence[str], None] = None, how: str = "any") -> "DataFrame":
        if how not in ("any", "all"):
            raise ValueError(f"invalid how option: {how}")
        cols = self.columns if subset is None else _as_list(subset)
        return self._wrap(self._f.dropna(cols, how), self._index) if cols else self

    def _values(self) -> Optional[List[str]]:
        """The columns that hold values, for native calls that would otherwise touch
        the index's labels too; None (all of them) without an index."""
        return self.columns if self._index else None

    def isna(self) -> "DataFrame":
        return self._wrap(self._f.isna(self._values()), self._index)

    isnull = isna

    def notna(self) -> "DataFrame":
        return self._wrap(self._f.notna(self._values()), self._index)

    notnull = notna

    def rename(self, columns: Optional[Dict[str, str]] = None, **kwargs: Any) -> "DataFrame":
        if kwargs:
            raise NotImplementedError(f"rename({', '.join(kwargs)}=...): only columns= is supported")
        # As pandas' rename(columns=): the index's name is not a column's.
        pairs = [(a, b) for a, b in (columns or {}).items() if a in self.columns]
        return self._wrap(self._f.rename(pairs), self._index, same_rows=True)

    def drop(self, columns: Union[str, Sequence[str], None] = None, **kwargs: Any) -> "DataFrame":
        if kwargs.get("axis") in (1, "columns") and columns is None:
            columns = kwargs.pop("labels", None)
        kwargs.pop("axis", None)
        if kwargs or columns is None:
            raise NotImplementedError("drop: only drop(columns=...) is supported (there is no row index)")
        missing = [c for c in _as_list(columns) if c not in self.columns]
        if missing:
            raise KeyError(f"{missing} not found in axis")
        return self._wrap(self._f.drop(_as_list(columns)), self._index, same_rows=True)

    def reset_index(self, drop: bool = False, name: Any = None) -> "DataFrame":
        """The index columns (set with ``set_index``, or a group-by's keys) back as
        ordinary columns, or dropped. ``name=`` (a Series' only, as in pandas) names the
        value column of the frame this makes: ``df.groupby("k")["v"].sum()
        .reset_index(name="total")``."""
        if name is not None and self._kind != "series":
            raise TypeError("DataFrame.reset_index() got an unexpected keyword argument 'name'")
        if drop:
            return self._wrap(self._f.drop(self._index)) if self._index else self
        f = self._f
        if name is not None:
            value = [c for c in f.columns if c not in self._index][0]
            if name != value and name in f.columns:
                raise ValueError(f"cannot insert {name}, already exists")
            f = f.rename([(value, str(name))])
        return self._wrap(f)

    def set_index(self, keys: Union[str, Sequence[str]], drop: bool = True, append: bool = False) -> "DataFrame":
        """Columns as the row labels (pandas' ``set_index``): they are kept as the frame's
        index columns, shown as the index when fetched, and used by ``sort_index``."""
        if not drop:
            raise NotImplementedError("set_index(drop=False): a column cannot also stay a column here")
        cols = _as_list(keys)
        for c in cols:
            if c not in self._f.columns:
                raise KeyError(c)
        index = (self._index if append else []) + cols
        f = self._f if append or not self._index else self._f.drop(self._index)
        ordered = index + [c for c in f.columns if c not in index]
        return self._wrap(f.select(ordered), index, same_rows=True)

    @property
    def index(self) -> "Index":
        """The row labels: the index columns, or positions (a ``RangeIndex``) when the
        frame has none."""
        return Index(self)

    def sort_index(self, ascending: Union[bool, Sequence[bool]] = True, **kwargs: Any) -> "DataFrame":
        """Rows sorted by the index columns (a stable sample sort)."""
        if kwargs:
            raise NotImplementedError(f"sort_index({', '.join(kwargs)}=...)")
        if not self._index:
            raise NotImplementedError(
                "sort_index of a frame without index columns (rows keep no positions once sorted): "
                "set_index first, or sort_values"
            )
        asc = [ascending] * len(self._index) if isinstance(ascending, bool) else list(ascending)
        return self._wrap(self._f.sort_values(self._index, asc), self._index, self._kind)

    # ----- reductions -----------------------------------------------------------------

    def _reduce(self, how: str, numeric_only: bool) -> "DataFrame":
        f = self._f.select(self.columns) if self._index else self._f
        return self._wrap(f.reduce(how, numeric_only), kind="row")

    def sum(self, numeric_only: bool = False) -> "DataFrame":
        return self._reduce("sum", numeric_only)

    def mean(self, numeric_only: bool = False) -> "DataFrame":
        return self._reduce("mean", numeric_only)

    def count(self) -> "DataFrame":
        return self._reduce("count", False)

    def min(self, numeric_only: bool = False) -> "DataFrame":
        return self._reduce("min", numeric_only)

    def max(self, numeric_only: bool = False) -> "DataFrame":
        return self._reduce("max", numeric_only)

    def std(self, numeric_only: bool = False, ddof: int = 1) -> "DataFrame":
        _ddof(ddof)
        return self._reduce("std", numeric_only)

    def var(self, numeric_only: bool = False, ddof: int = 1) -> "DataFrame":
        _ddof(ddof)
        return self._reduce("var", numeric_only)

    def agg(self, func: Any) -> "DataFrame":
        """Whole-frame aggregations: a function name for every column, or
        ``{column: name}`` (a row of results, fetched as a Series)."""
        if isinstance(func, str):
            name = _agg_name(func)
            return self.nunique() if name == "nunique" else self._reduce(name, False)
        if isinstance(func, dict):
            pairs = []
            for c, f in func.items():
                if _agg_name(f) == "nunique":
                    raise NotImplementedError("agg({column: 'nunique'}) on a whole frame: use df[column].nunique()")
                if not isinstance(f, str):
                    raise NotImplementedError("agg({column: [functions]}) on a whole frame: give one function per column")
                pairs.append((c, _agg_name(f)))
            return self._wrap(self._f.agg(pairs), kind="row")
        raise NotImplementedError(f"agg({type(func).__name__})")

    aggregate = agg

    def describe(self, percentiles: Optional[Sequence[float]] = None, include: Any = None,
                 exclude: Any = None) -> "DataFrame":
        """count, mean, std, min, percentiles (25%, 50%, 75% by default) and max of every
        numeric column, as pandas' ``describe()`` (booleans and strings left out).
        Percentiles are exact (numpy's linear interpolation), found in two passes over
        the chunks without sorting the frame."""
        if include is not None or exclude is not None:
            raise NotImplementedError("describe(include=, exclude=): only the numeric columns are described")
        f = self._f.select(self.columns) if self._index else self._f
        return self._wrap(f.describe(_percentiles(percentiles)), ["statistic"], kind="describe")

    def nunique(self) -> "DataFrame":
        """Distinct present values per column (a row of counts, fetched as a Series)."""
        f = self._f.select(self.columns) if self._index else self._f
        return self._wrap(f.nunique(), kind="row")

    # ----- grouping, ordering, rows -------------------------------------------------------

    def groupby(self, by: Union[str, Sequence[str]], as_index: bool = True, sort: bool = True,
                dropna: bool = True, method: str = "auto") -> "GroupBy":
        """Groups rows by key columns (rows with a missing key dropped: ``dropna=True``).
        ``method`` is Mars': 'auto' chooses a tree or a shuffle from the first chunk."""
        if not dropna:
            raise NotImplementedError("groupby(dropna=False)")
        if not sort:
            raise NotImplementedError("groupby(sort=False): groups come sorted by key")
        keys = _as_list(by)
        for k in keys:
            if k not in self._f.columns:
                raise KeyError(k)
        return GroupBy(self, keys, [c for c in self.columns if c not in keys], as_index, method, None)

    def sort_values(self, by: Union[str, Sequence[str]], ascending: Union[bool, Sequence[bool]] = True,
                    na_position: str = "last", kind: Any = None, ignore_index: bool = False) -> "DataFrame":
        """Rows sorted by columns (a stable sample sort; missing values last)."""
        if na_position != "last":
            raise NotImplementedError("sort_values(na_position='first')")
        by = _as_list(by)
        asc = [ascending] * len(by) if isinstance(ascending, bool) else list(ascending)
        if len(asc) != len(by):
            raise ValueError(f"Length of ascending ({len(asc)}) != length of by ({len(by)})")
        out = self._wrap(self._f.sort_values(by, asc), self._index)
        return out.reset_index(drop=True) if ignore_index and self._index else out

    def head(self, n: int = 5) -> "DataFrame":
        return self._wrap(self._f.head(_count(n, "head")), self._index, self._kind if self._kind != "row" else "frame")

    def tail(self, n: int = 5) -> "DataFrame":
        return self._wrap(self._f.tail(_count(n, "tail")), self._index, self._kind if self._kind != "row" else "frame")

    def nlargest(self, n: int, columns: Union[str, Sequence[str]], keep: str = "first") -> "DataFrame":
        _keep(keep)
        return self._wrap(self._f.nlargest(int(n), _as_list(columns)), self._index)

    def nsmallest(self, n: int, columns: Union[str, Sequence[str]], keep: str = "first") -> "DataFrame":
        _keep(keep)
        return self._wrap(self._f.nsmallest(int(n), _as_list(columns)), self._index)

    def drop_duplicates(self, subset: Union[str, Sequence[str], None] = None, keep: str = "first",
                        method: str = "auto") -> "DataFrame":
        _keep(keep)
        return self._wrap(self._f.drop_duplicates(_as_list(subset) or self.columns, method), self._index)

    def value_counts(self, subset: Union[str, Sequence[str], None] = None) -> "DataFrame":
        cols = _as_list(subset) or self.columns
        if len(cols) != 1:
            raise NotImplementedError("value_counts of several columns (give one column)")
        return self[cols[0]].value_counts()

    def melt(self, id_vars: Any = None, value_vars: Any = None, var_name: Any = None,
             value_name: str = "value") -> "DataFrame":
        """pandas' ``melt`` (see the module's ``melt``)."""
        return melt(self, id_vars=id_vars, value_vars=value_vars, var_name=var_name, value_name=value_name)

    def pivot_table(self, values: Any = None, index: Any = None, columns: Any = None, aggfunc: Any = "mean",
                    fill_value: Any = None, **kwargs: Any) -> "DataFrame":
        """pandas' ``pivot_table`` (see the module's ``pivot_table``)."""
        return pivot_table(self, values=values, index=index, columns=columns, aggfunc=aggfunc,
                           fill_value=fill_value, **kwargs)

    def merge(self, right: "DataFrame", how: str = "inner", on: Union[str, Sequence[str], None] = None,
              left_on: Any = None, right_on: Any = None, suffixes: Tuple[str, str] = ("_x", "_y"),
              indicator: Union[bool, str] = False, validate: Optional[str] = None) -> "DataFrame":
        """pandas' ``merge`` (see the module's ``merge``)."""
        return merge(self, right, how=how, on=on, left_on=left_on, right_on=right_on, suffixes=suffixes,
                     indicator=indicator, validate=validate)

    def join(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("DataFrame.join joins on the index, which ares frames do not have: use merge(on=...)")

    def to_tensor(self, session: Any = None):
        """The values as a 2-d ``ares.tensor`` tensor (rows × columns) of the columns'
        common dtype, as ``to_numpy()`` gives (index columns left out). The frame is
        computed first: its chunks' row counts make the tensor's row chunks, as Dask's
        ``to_dask_array(lengths=True)`` does. Integer and boolean columns must have no
        missing values (a float tensor holds them as NaN)."""
        from ..tensor import Tensor

        f = self._f.select(self.columns) if self._index else self._f
        return Tensor(_session(session).to_tensor(f))

    def to_csv(self, path: Any, sep: str = ",", index: bool = False, session: Any = None) -> None:
        """Writes one CSV file with a header line: each chunk's text is made by a worker
        task, and they are appended in order. There is no index to write (``index=True``
        writes the group-by keys of a result that has them, as columns)."""
        import os

        f = self._f if (index or not self._index) else self._f.drop(self._index)
        _session(session).to_csv(f, os.fspath(path), sep)

    def to_parquet(self, path: Any, index: bool = False, session: Any = None) -> None:
        """Writes one Parquet file, a row group per chunk (no index, as for to_csv)."""
        import os

        f = self._f if (index or not self._index) else self._f.drop(self._index)
        _session(session).to_parquet(f, os.fspath(path))


def _percentiles(percentiles: Optional[Sequence[float]]) -> List[float]:
    """describe's percentiles as the installed pandas takes them: 25/50/75% by default;
    those given, and the median too under pandas 2 (pandas 3 no longer adds it)."""
    if percentiles is None:
        return [0.25, 0.5, 0.75]
    qs = [float(q) for q in percentiles]
    try:
        import pandas as pd

        major = int(pd.__version__.split(".")[0])
    except (ImportError, ValueError):
        major = 3
    if major < 3 and 0.5 not in qs:
        qs.append(0.5)
    return qs


def _count(n: Any, name: str) -> int:
    """A row count for head/tail: a negative one (all but the last/first n) is refused."""
    n = int(n)
    if n < 0:
        raise NotImplementedError(f"{name}(n) with n < 0 (rows have no positions before they run)")
    return n


def _ddof(ddof: int) -> None:
    if ddof != 1:
        raise NotImplementedError(f"ddof={ddof} (only pandas' default ddof=1)")


def _keep(keep: str) -> None:
    if keep != "first":
        raise NotImplementedError(f"keep={keep!r} (only keep='first')")


def _agg_name(f: Any) -> str:
    name = f if isinstance(f, str) else getattr(f, "__name__", repr(f))
    name = {"amin": "min", "amax": "max", "average": "mean", "len": "size"}.get(name, name)
    if name not in _AGGS:
        raise NotImplementedError(f"aggregation {name!r} (supported: {', '.join(_AGGS)})")
    return name


def _temporal_literal(v: Any, native: str) -> Any:
    """A date or time literal (``datetime.date``/``datetime``, ``pd.Timestamp``,
    ``np.datetime64``, an ISO string, ``NaT``) met by a column of native dtype ``native``
    (``datetime64[D]`` for dates): a constant of the column's kind, or of nanoseconds
    when it has a time of day a date column cannot hold (compared then as instants, a
    date being its midnight, as pandas compares them). ``None`` for anything else."""
    import datetime as _dt
    if not isinstance(v, (str, _dt.date, np.datetime64)) and type(v).__name__ not in ("Timestamp", "NaTType"):
        return None
    tz = _zone_of(native)

    def missing() -> Any:
        return _missing_of(native)

    if isinstance(v, np.datetime64):
        if np.isnat(v):
            return missing()
        ns = v.astype("datetime64[ns]")
        if ns.astype("datetime64[D]") != v.astype("datetime64[D]"):
            raise OverflowError(f"{v!r} is outside the range of nanosecond timestamps")
        v = ns
    pd = _pandas()
    try:
        ts = pd.Timestamp(v)
    except (ValueError, TypeError) as e:
        raise TypeError(f"cannot compare a {native} column with {v!r}: {e}") from None
    if ts is pd.NaT:
        return missing()
    if ts.tzinfo is None and tz is not None and isinstance(v, str):
        # pandas reads text without an offset in an aware column's zone.
        ts = ts.tz_localize(tz)
    if ts.tzinfo is not None:
        # An instant (in an aware column's zone, so that where/fillna keep it); compared
        # with a naive column, the engine refuses it as pandas does.
        e = _native.NativeExpr.const(int(ts.value), "datetime64[ns]").tz_localize("UTC")
        return e.tz_convert(tz) if tz is not None else e
    if native == "datetime64[D]" and ts == ts.normalize():
        return _native.NativeExpr.const(int(ts.value // 86_400_000_000_000), "datetime64[D]")
    return _native.NativeExpr.const(int(ts.value), "datetime64[ns]")


def _missing_of(native: str) -> Any:
    """A missing constant of native dtype ``native`` (an aware datetime's too)."""
    tz = _zone_of(native)
    if tz is not None:
        return _native.NativeExpr.const(None, "datetime64[ns]").tz_localize(tz)
    return _native.NativeExpr.const(None, native)


def _timedelta_literal(v: Any) -> Any:
    """A duration (``pd.Timedelta``, ``datetime.timedelta``, ``np.timedelta64``, a fixed
    offset such as ``pd.offsets.Day(2)``) as a nanosecond constant; ``None`` for anything
    else."""
    import datetime as _dt
    if isinstance(v, np.timedelta64):
        if np.isnat(v):
            return _native.NativeExpr.const(None, "timedelta64[ns]")
        return _native.NativeExpr.const(int(v.astype("timedelta64[ns]").astype(np.int64)), "timedelta64[ns]")
    if isinstance(v, _dt.timedelta):
        return _native.NativeExpr.const(int(_pandas().Timedelta(v).value), "timedelta64[ns]")
    if _is_offset(v) and _is_tick(v):
        return _native.NativeExpr.const(int(v.nanos), "timedelta64[ns]")
    return None


def _is_offset(v: Any) -> bool:
    """Whether ``v`` is a pandas date offset (``pd.DateOffset``, ``pd.offsets.*``)."""
    return any(c.__name__ == "BaseOffset" and c.__module__.startswith("pandas") for c in type(v).__mro__)


def _is_tick(v: Any) -> bool:
    """A fixed-length offset (``Day``, ``Hour``, …): a duration."""
    return any(c.__name__ == "Tick" for c in type(v).__mro__)


# pd.DateOffset's relative keywords that are fixed durations.
_OFFSET_DURATIONS = ("weeks", "days", "hours", "minutes", "seconds", "milliseconds", "microseconds", "nanoseconds")


def _offset_parts(offset: Any) -> Tuple[int, Any]:
    """A date offset as (calendar months, the rest as a ``pd.Timedelta``)."""
    pd = _pandas()
    if _is_tick(offset):
        return 0, pd.Timedelta(offset.nanos, unit="ns")
    if type(offset).__name__ == "Day":
        # A calendar day (pandas 3): 24 hours in time-zone naive values.
        return 0, pd.Timedelta(days=int(offset.n))
    if type(offset).__name__ != "DateOffset":
        raise NotImplementedError(
            f"adding a {type(offset).__name__} offset (anchored offsets are not supported): "
            "use pd.DateOffset(months=..., days=...) or pd.Timedelta"
        )
    kwds = dict(offset.kwds)
    absolute = [k for k in kwds if k not in ("years", "months") + _OFFSET_DURATIONS]
    if absolute:
        raise NotImplementedError(f"pd.DateOffset({', '.join(absolute)}=...): only relative fields "
                                  "(years, months, weeks, days, hours, ...) are supported")
    n = int(offset.n)
    months = n * (int(kwds.pop("years", 0)) * 12 + int(kwds.pop("months", 0)))
    if not kwds and not months:
        return 0, pd.Timedelta(days=n)  # pd.DateOffset(n) is n days
    nanos = kwds.pop("nanoseconds", 0)
    rest = pd.Timedelta(**kwds) if kwds else pd.Timedelta(0)
    return months, n * (rest + pd.Timedelta(nanos, unit="ns"))


def _py(v: Any) -> Any:
    """numpy scalars as Python ones."""
    if isinstance(v, np.generic):
        return v.item()
    return v


def _cast(e: Any, source: str, t: Any) -> Any:
    """``e`` (of native dtype ``source``) converted to ``t`` as pandas' astype does."""
    target = _dtype_name(t)
    if target == "object":
        target = "str"
    if target == "str" and source != "object" and not (t is str or t == "str"):
        raise NotImplementedError(
            f"astype({t!r}) of a {source} column: object columns hold strings here (astype(str) makes them)"
        )
    e2 = e.cast(target)
    if target == "str" and source == "bool":
        # Python's spelling of booleans, as pandas writes them.
        e2 = e2.str_replace("true", "True", False).str_replace("false", "False", False)
    return e2


def _dtype_name(t: Any) -> str:
    if t is str or t == "str":
        return "str"
    if isinstance(t, str) and t in ("object", "string"):
        return "str"
    return np.dtype(t).name


# numpy ufuncs a column computes, as the operator methods that compute them.
_UFUNC_OPERATORS = {
    "add": "__add__", "subtract": "__sub__", "multiply": "__mul__", "true_divide": "__truediv__",
    "divide": "__truediv__", "floor_divide": "__floordiv__", "remainder": "__mod__", "power": "__pow__",
    "equal": "__eq__", "not_equal": "__ne__", "less": "__lt__", "less_equal": "__le__",
    "greater": "__gt__", "greater_equal": "__ge__", "logical_and": "__and__", "logical_or": "__or__",
    "bitwise_and": "__and__", "bitwise_or": "__or__", "negative": "__neg__", "absolute": "__abs__",
    "invert": "__invert__", "logical_not": "__invert__", "isnan": "isna",
}


# Comparisons with the column on the right, as the column's own comparisons.
_MIRRORED = {"__eq__": "__eq__", "__ne__": "__ne__", "__lt__": "__gt__", "__le__": "__ge__",
             "__gt__": "__lt__", "__ge__": "__le__"}


def _np_where(cond: Any, x: Any, y: Any) -> "Series":
    """numpy's ``where(cond, x, y)`` with a boolean column ``cond``: ``x`` where it is
    true, else ``y`` (either a column of the same frame or a value)."""
    if not isinstance(cond, Series):
        raise NotImplementedError("np.where with series needs a boolean Series as its condition")
    if isinstance(x, Series):
        return x.where(cond, y)
    if isinstance(y, Series):
        return y.mask(cond, x)
    # Two values: a column of the first, then the second where cond is false.
    return Series(cond._base, cond._base._expr(_py(x)), None).where(cond, y)


class Series(_Operators):
    """One column of a frame, or an expression of its columns (``df["a"] * 2``). It
    stays tied to its frame: combining columns of two different frames is not
    supported (pandas would align them by index)."""

    def __init__(self, base: DataFrame, expr: Any, name: Optional[str]) -> None:
        self._base = base
        self._e = expr
        self.name = name
        self._as_frame: Optional[DataFrame] = None

    @property
    def dtype(self) -> Any:
        return _dtype_of(self._base._f.expr_dtype(self._e))

    def __repr__(self) -> str:
        return f"ares.dataframe.Series<name={self.name!r}, dtype={self._base._f.expr_dtype(self._e)}>"

    def _frame(self) -> DataFrame:
        if self._as_frame is None:
            name = self.name if self.name is not None else "__ares_value"
            f = self._base._f.assign([(name, self._e)]).select([name])
            self._as_frame = DataFrame(_frame=f, _kind="series")
        return self._as_frame

    def execute(self, session: Any = None, show_progress: Optional[bool] = None) -> "Series":
        self._frame().execute(session=session, show_progress=show_progress)
        return self

    def _rows(self) -> Tuple[Any, List[str], str]:
        """The column beside its frame's index columns, for operations that keep rows
        (and so their labels): the native frame, the index columns, the value's column."""
        index = self._base._index
        if not index:
            f = self._frame()._f
            return f, [], f.columns[0]
        name = self.name if self.name is not None else "__ares_value"
        if name in index:
            raise NotImplementedError(f"a Series named like its frame's index column {name!r}: rename it first")
        return self._base._f.assign([(name, self._e)]).select(index + [name]), list(index), name

    def _keeping_rows(self, f: Any, index: List[str]) -> DataFrame:
        return DataFrame(_frame=f, _index=index, _kind="series")

    def fetch(self, session: Any = None):
        """Computes the column and returns it as a ``pandas.Series`` (indexed by its
        frame's index columns, when it has some)."""
        f, index, _ = self._rows()
        return self._keeping_rows(f, index).fetch(session)

    to_pandas = fetch

    def to_frame(self) -> DataFrame:
        f, index, _ = self._rows()
        return DataFrame(_frame=f, _index=index)

    def to_numpy(self, dtype: Any = None) -> np.ndarray:
        return self.fetch().to_numpy(dtype=dtype)

    @property
    def values(self) -> np.ndarray:
        return self.to_numpy()

    def tolist(self) -> List[Any]:
        return self.fetch().tolist()

    to_list = tolist

    def to_tensor(self, session: Any = None):
        """The column as a 1-d ``ares.tensor`` tensor (see ``DataFrame.to_tensor``)."""
        from ..tensor import Tensor

        f = self._frame()._f
        return Tensor(_session(session).to_tensor(f, f.columns[0]))

    # ----- numpy's protocols -----------------------------------------------------------

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        """``np.asarray(s)`` fetches the column (as pandas gives its values)."""
        return self.to_numpy(dtype=dtype)

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        """numpy's arithmetic, comparison and sign ufuncs on a column give a lazy column,
        as its operators do (``np.add(s, 1)``, ``np.negative(s)``, ``np.abs(s)``); others
        raise ``NotImplementedError`` naming the ufunc rather than compute in numpy."""
        name = _UFUNC_OPERATORS.get(ufunc.__name__)
        if method != "__call__" or kwargs or name is None or len(inputs) != ufunc.nin:
            raise NotImplementedError(
                f"numpy.{ufunc.__name__} of an ares Series is not supported: use its methods, "
                "or fetch() it to compute in numpy"
            )
        if ufunc.nin == 1:
            return getattr(inputs[0], name)()
        a, b = inputs
        if isinstance(a, (Series, Scalar)):
            return getattr(a, name)(b)
        # The column on the right: the reflected operator (comparisons mirrored).
        return getattr(b, _MIRRORED.get(name, "__r" + name[2:]))(a)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        """``np.where(cond, x, y)`` with series gives a lazy column (``x.where(cond, y)``);
        other numpy functions raise ``NotImplementedError`` naming themselves."""
        if func is np.where and len(args) == 3 and not kwargs:
            return _np_where(*args)
        raise NotImplementedError(
            f"numpy.{func.__name__} of an ares Series is not supported: use its methods, "
            "or fetch() it to compute in numpy"
        )

    # ----- operators ------------------------------------------------------------------

    def _other(self, other: Any):
        if isinstance(other, Scalar):
            return other._expr()
        td = _timedelta_literal(other)
        if td is not None:
            return td
        native = self._base._f.expr_dtype(self._e)
        if native.startswith(("datetime64[", "timedelta64[")):
            # A duration column meets a date or time as a nanosecond instant.
            t = _temporal_literal(other, native if native.startswith("datetime64[") else "datetime64[ns]")
            if t is not None:
                return t
        if isinstance(other, Series):
            if other._base._rows is not self._base._rows:
                raise NotImplementedError(
                    "combining columns of two different frames (pandas would align them by index)"
                )
            return other._e
        if isinstance(other, (bool, numbers.Number, str, np.generic)) and not isinstance(other, complex):
            return _native.NativeExpr.lit(_py(other))
        return NotImplemented

    def _bin(self, op: str, other: Any, reflected: bool = False) -> Any:
        if _is_offset(other):
            if op not in ("add", "sub") or (reflected and op == "sub"):
                raise TypeError(f"unsupported operand: a date offset with {op}")
            return self._offset(other, -1 if op == "sub" else 1)
        o = self._other(other)
        if o is NotImplemented:
            if op in ("eq", "ne"):
                # Python would answer with one bool (identity), never a column.
                hint = " (isna()/notna() test for missing values)" if other is None else ""
                raise NotImplementedError(f"comparing a column with a {type(other).__name__} value{hint}")
            return NotImplemented
        e = o.binary(op, self._e) if reflected else self._e.binary(op, o)
        # Checked at once (a wrong dtype raises here, as in pandas), over the frame that
        # has every column it reads: either operand's (they have the same rows).
        bases = [self._base] + ([other._base] if isinstance(other, Series) else [])
        for i, b in enumerate(bases):
            try:
                b._f.expr_dtype(e)
                return Series(b, e, self.name)
            except KeyError:
                if i == len(bases) - 1:
                    raise
        raise AssertionError("unreachable")

    def _offset(self, offset: Any, sign: int) -> "Series":
        """Dates and times moved by a ``pd.DateOffset``: its years and months in calendar
        months (the day clipped to the month's last), then the rest as a duration."""
        tz = _zone_of(self._base._f.expr_dtype(self._e))
        if tz is not None:
            # An aware column moves by calendar on its wall times (pandas' way), which
            # are then read in its zone again.
            return self.dt.tz_localize(None)._offset(offset, sign).dt.tz_localize(tz)
        months, rest = _offset_parts(offset)
        out = self
        if months:
            e = self._e.add_months(sign * months)
            self._base._f.expr_dtype(e)
            out = Series(self._base, e, self.name)
        if rest or not months:
            out = out + rest if sign > 0 else out - rest
        return out

    def abs(self) -> "Series":
        """Absolute values (numpy's: the most negative integer stays itself)."""
        return self._unary("abs")

    def round(self, decimals: int = 0) -> "Series":
        """Rounded half to even, as numpy and pandas round."""
        e = self._e.round(int(decimals))
        self._base._f.expr_dtype(e)
        return Series(self._base, e, self.name)

    def clip(self, lower: Any = None, upper: Any = None) -> "Series":
        """Values below ``lower`` or above ``upper`` set to them (missing values stay)."""
        for b in (lower, upper):
            if b is not None and not isinstance(b, (numbers.Number, np.generic)):
                raise NotImplementedError("clip with bounds other than numbers (per-row bounds)")
        e = self._e.clip(None if lower is None else _py(lower), None if upper is None else _py(upper))
        self._base._f.expr_dtype(e)
        return Series(self._base, e, self.name)

    def __bool__(self) -> bool:
        raise ValueError("the truth value of a Series is ambiguous: use &, |, ~ and .any() / .all()")

    def _unary(self, op: str) -> "Series":
        e = self._e.unary(op)
        self._base._f.expr_dtype(e)
        return Series(self._base, e, self.name)

    def isna(self) -> "Series":
        return self._unary("isna")

    isnull = isna

    def notna(self) -> "Series":
        return self._unary("notna")

    notnull = notna

    def fillna(self, value: Any) -> "Series":
        native = self._base._f.expr_dtype(self._e)
        if native.startswith("datetime64[") and _temporal_literal(value, native) is not None:
            # A date or time: the column where present, else that instant.
            return self.where(self.notna(), value)
        e = self._e.fill_na(_py(value))
        self._base._f.expr_dtype(e)
        return Series(self._base, e, self.name)

    def astype(self, dtype: Any) -> "Series":
        e = _cast(self._e, self._base._f.expr_dtype(self._e), dtype)
        self._base._f.expr_dtype(e)
        return Series(self._base, e, self.name)

    def isin(self, values: Iterable[Any]) -> "Series":
        """Whether each value is among ``values`` (never missing: a missing value is in
        them when they hold one, as pandas'). ``values`` may be another frame's column
        (``orders.o_custkey``): a semi-join, lazy; its distinct values are computed
        first and sent to every task (up to 256 MiB of them; beyond, merge instead).
        ``~s.isin(other)`` is the anti-join."""
        if isinstance(values, Series):
            f = values._frame()._f
            distinct = f.drop_duplicates([f.columns[0]], "auto")
            e = self._e.is_in(distinct)
            self._base._f.expr_dtype(e)  # a wrong dtype raises here
            return Series(self._base, e, self.name)
        if isinstance(values, (DataFrame, Scalar)):
            raise NotImplementedError(f"isin with a {type(values).__name__} (give a Series or a list)")
        if isinstance(values, (str, bytes)):
            raise TypeError(f"only list-like objects are allowed to be passed to isin(), you passed a "
                            f"{type(values).__name__}")
        values = list(values)
        # A missing value in the list matches the column's missing values, as pandas'.
        present = [v for v in values if not _missing(v)]
        out = self.isna() if len(present) < len(values) else self.isna() & self.notna()
        for v in present:
            out = out | (self == v)
        return out

    def where(self, cond: Any, other: Any = np.nan) -> "Series":
        """This column where ``cond`` (a boolean column of this frame) is true, else
        ``other`` (a number, string, lazy scalar, or column of this frame; missing by
        default, which makes integers float64 as in pandas). A missing ``cond`` counts
        as false."""
        if not isinstance(cond, Series):
            raise NotImplementedError(f"where with a {type(cond).__name__} condition (give a boolean column)")
        c = self._other(cond)
        if other is None or (isinstance(other, float) and math.isnan(other)):
            native = self._base._f.expr_dtype(self._e)
            o = (_native.NativeExpr.lit(math.nan) if native not in ("object", "bool") and
                 not native.startswith("datetime64[") else _missing_of(native))
        else:
            o = self._other(other)
            if o is NotImplemented:
                raise NotImplementedError(f"where with other={type(other).__name__}")
        e = self._e.where_(c, o)
        self._base._f.expr_dtype(e)  # a wrong dtype raises here
        return Series(self._base, e, self.name)

    def mask(self, cond: Any, other: Any = np.nan) -> "Series":
        """This column where ``cond`` is false, else ``other`` (``where`` of ``~cond``;
        a missing ``cond`` keeps the value, as pandas')."""
        if not isinstance(cond, Series):
            raise NotImplementedError(f"mask with a {type(cond).__name__} condition (give a boolean column)")
        return self.where(~cond.fillna(False), other)

    def between(self, left: Any, right: Any, inclusive: str = "both") -> "Series":
        if inclusive not in ("both", "neither", "left", "right"):
            raise ValueError("Inclusive has to be either string of 'both','left', 'right', or 'neither'.")
        lo = self >= left if inclusive in ("both", "left") else self > left
        hi = self <= right if inclusive in ("both", "right") else self < right
        return lo & hi

    def explode(self, ignore_index: bool = False) -> "Series":
        """Each element of the lists a row of its own (see ``DataFrame.explode``)."""
        name = self.name if self.name is not None else "__ares_value"
        f = self._base._f.assign([(name, self._e)]).select([name]).explode(name)
        return Series(DataFrame(_frame=f), _native.NativeExpr.col(name), self.name)

    def _appended(self, kind: str, step: Any) -> "Series":
        """This column computed as ``step(native frame with it as a column, its name,
        result name)`` appends a column (keeping the frame's rows and chunks), as a Series
        that can be set on the frame. The names are fresh, so that a result can be
        computed on again (``s.rank().rank()``)."""
        k = next(_FRESH)
        src, name = f"__ares_source_{k}", f"__ares_{kind}_{k}"
        try:
            f = step(self._base._f.assign([(src, self._e)]), src, name)
        except (TypeError, ValueError, NotImplementedError) as e:
            # Named as the user named the column, not by the helper column.
            raise type(e)(str(e).replace(repr(src).replace("'", '"'), repr(self.name).replace("'", '"'))) from None
        base = DataFrame(_frame=f, _index=self._base._index, _rows=self._base._rows)
        base._extends = self._base._f
        return Series(base, _native.NativeExpr.col(name), self.name)

    def _scan(self, kind: str, periods: int = 1, min_periods: int = 0) -> "Series":
        """A running ``kind`` of this column over its frame's rows in order (each chunk's
        task reads what the chunks before it left)."""
        return self._appended(kind, lambda f, src, name: f.group_scan([], src, kind, name, periods, min_periods))

    def rank(self, method: str = "average", ascending: bool = True, na_option: str = "keep", pct: bool = False,
             numeric_only: bool = False, axis: Any = 0) -> "Series":
        """Each row's rank (float64; ties by ``method``: average, min, max, first,
        dense), missing for a missing value; ``pct`` divides by the values counted."""
        _rank_options(na_option, axis)
        return self._appended("rank", lambda f, src, name: f.rank([], src, method, bool(ascending), bool(pct), name))

    def cumsum(self) -> "Series":
        """Running sums in row order (missing values give missing results and are
        skipped, as pandas' ``skipna=True``)."""
        return self._scan("cumsum")

    def cummin(self) -> "Series":
        return self._scan("cummin")

    def cummax(self) -> "Series":
        return self._scan("cummax")

    def shift(self, periods: int = 1, fill_value: Any = None) -> "Series":
        """Each row's value ``periods`` rows before (after, for negative periods; missing
        where there is none, or ``fill_value``: a missing value shifted in stays missing,
        as pandas')."""
        kind, n = _shift_of(periods, "shift")
        if fill_value is None:
            return self._scan(kind, n)
        one = _native.NativeExpr.lit(True)
        out = self._appended(kind, lambda f, src, name: f.assign([(name + "_one", one)])
                             .group_scan([], src, kind, name, n).group_scan([], name + "_one", kind, name + "_has", n))
        # The step appended the marks last.
        has = Series(out._base, _native.NativeExpr.col(out._base._f.columns[-1]), None)
        return out.where(has.notna(), fill_value)

    def diff(self, periods: int = 1) -> "Series":
        """Each row's value minus the value ``periods`` rows before (after, if negative)."""
        return self - self._scan(*_shift_of(periods, "diff"))

    def pct_change(self, periods: int = 1) -> "Series":
        """Each row's change from the value ``periods`` rows before, as a fraction of it."""
        return self / self._scan(*_shift_of(periods, "pct_change")) - 1

    def rolling(self, window: int, min_periods: Optional[int] = None, center: bool = False,
                win_type: Any = None, on: Any = None, closed: Any = None) -> "Rolling":
        """A window of ``window`` rows ending at each row, in row order (pandas'
        ``rolling``): ``.sum()``, ``.mean()``, ``.min()``, ``.max()``."""
        return Rolling(self, window, min_periods, center, win_type, on, closed)

    @property
    def str(self) -> "_StrAccessor":
        return _StrAccessor(self)

    @property
    def dt(self) -> "_DtAccessor":
        return _DtAccessor(self)

    # ----- reductions and rows ----------------------------------------------------------

    def _reduce(self, how: str) -> Scalar:
        return Scalar(DataFrame(_frame=self._frame()._f.reduce(how, False)))

    def sum(self) -> Scalar: return self._reduce("sum")
    def mean(self) -> Scalar: return self._reduce("mean")
    def count(self) -> Scalar: return self._reduce("count")
    def min(self) -> Scalar: return self._reduce("min")
    def max(self) -> Scalar: return self._reduce("max")

    def std(self, ddof: int = 1) -> Scalar:
        _ddof(ddof)
        return self._reduce("std")

    def var(self, ddof: int = 1) -> Scalar:
        _ddof(ddof)
        return self._reduce("var")

    def any(self) -> Scalar:
        # Missing values are skipped, as pandas' skipna: they count as False here.
        truth = self.fillna(False) if self.dtype == np.bool_ else (self != 0) & self.notna()
        return Scalar(truth.astype("int64").max()._frame, if_empty=False)

    def all(self) -> Scalar:
        # ... and as True here.
        truth = self.fillna(True) if self.dtype == np.bool_ else (self != 0) | self.isna()
        return Scalar(truth.astype("int64").min()._frame, if_empty=True)

    def nunique(self) -> Scalar:
        f = self._frame()._f
        name = f.columns[0]
        return Scalar(DataFrame(_frame=f.drop_duplicates([name], "auto").dropna([name], "any").reduce("count", False)))

    def value_counts(self) -> DataFrame:
        """Counts of each value, most frequent first: a Series indexed by value, named
        ``count`` (pandas 2)."""
        f = self._frame()._f
        return DataFrame(_frame=f.value_counts(f.columns[0]), _index=[f.columns[0]], _kind="series")

    def unique(self) -> DataFrame:
        f = self._frame()._f
        return DataFrame(_frame=f.drop_duplicates([f.columns[0]], "auto"), _kind="series")

    def drop_duplicates(self) -> DataFrame:
        return self.unique()

    def sort_values(self, ascending: bool = True, ignore_index: bool = False) -> DataFrame:
        f, index, name = self._rows()
        out = self._keeping_rows(f.sort_values([name], [ascending]), index)
        return out.reset_index(drop=True) if ignore_index and index else out

    def head(self, n: int = 5) -> DataFrame:
        f, index, _ = self._rows()
        return self._keeping_rows(f.head(_count(n, "head")), index)

    def tail(self, n: int = 5) -> DataFrame:
        f, index, _ = self._rows()
        return self._keeping_rows(f.tail(_count(n, "tail")), index)

    def nlargest(self, n: int = 5, keep: str = "first") -> DataFrame:
        _keep(keep)
        f, index, name = self._rows()
        return self._keeping_rows(f.nlargest(int(n), [name]), index)

    def nsmallest(self, n: int = 5, keep: str = "first") -> DataFrame:
        _keep(keep)
        f, index, name = self._rows()
        return self._keeping_rows(f.nsmallest(int(n), [name]), index)

    def dropna(self) -> DataFrame:
        f, index, name = self._rows()
        return self._keeping_rows(f.dropna([name], "any"), index)

    def describe(self, percentiles: Optional[Sequence[float]] = None) -> DataFrame:
        """pandas' ``Series.describe()`` of a numeric column (a Series indexed by
        statistic, named as the column)."""
        return DataFrame(_frame=self._frame()._f.describe(_percentiles(percentiles)), _index=["statistic"],
                         _kind="describe_series")


class _StrAccessor:
    """``series.str``: string tests and lengths."""

    def __init__(self, s: Series) -> None:
        self._s = s

    def _test(self, op: str, pat: str) -> Series:
        e = self._s._e.str_test(op, pat)
        self._s._base._f.expr_dtype(e)
        return Series(self._s._base, e, self._s.name)

    def contains(self, pat: str, case: bool = True, regex: bool = True, na: Any = None) -> Series:
        if not case:
            pat, regex = "(?i)" + (pat if regex else _re_escape(pat)), True
        out = self._test("contains" if regex else "contains_literal", pat)
        return out.fillna(bool(na)) if na is not None else out

    def startswith(self, pat: str) -> Series:
        return self._test("startswith", pat)

    def endswith(self, pat: str) -> Series:
        return self._test("endswith", pat)

    def len(self) -> Series:
        return self._s._unary("str_len")

    def split(self, pat: Optional[str] = None, n: int = -1, expand: bool = False,
              regex: Optional[bool] = None) -> Series:
        """Each string's list of the parts between ``pat`` (runs of whitespace when
        None; a regular expression when ``regex``, or when it is longer than one
        character and ``regex`` is None, as pandas decides), for ``explode``."""
        if expand:
            raise NotImplementedError("str.split(expand=True): the parts' count is known only once computed; "
                                      "split, then explode")
        if n not in (-1, 0, None):
            raise NotImplementedError(f"str.split(n={n}): only every split (n=-1)")
        if pat is None:
            op = "split_whitespace"
        elif regex or (regex is None and len(pat) > 1):
            op = "split_regex"
        else:
            op = "split_literal"
        return self._test(op, pat or "")

    def _expr(self, e: Any) -> Series:
        self._s._base._f.expr_dtype(e)  # a wrong dtype raises here
        return Series(self._s._base, e, self._s.name)

    def slice(self, start: Optional[int] = None, stop: Optional[int] = None, step: Optional[int] = None) -> Series:
        """Each string's ``v[start:stop:step]``, by characters (missing stays missing)."""
        ints = [None if b is None else operator.index(b) for b in (start, stop, step)]
        if ints[2] == 0:
            raise ValueError("slice step cannot be zero")
        return self._expr(self._s._e.str_slice(*ints))

    def get(self, i: int) -> Series:
        """Each string's character ``i`` (negative from the end); missing where there is
        none, as pandas'."""
        return self._expr(self._s._e.str_get(operator.index(i)))

    def __getitem__(self, key: Any) -> Series:
        if isinstance(key, slice):
            return self.slice(key.start, key.stop, key.step)
        return self.get(key)

    def lower(self) -> Series:
        return self._s._unary("str_lower")

    def upper(self) -> Series:
        return self._s._unary("str_upper")

    def strip(self, to_strip: Optional[str] = None) -> Series:
        return self._s._unary("str_strip") if to_strip is None else _no_strip_chars("strip")

    def lstrip(self, to_strip: Optional[str] = None) -> Series:
        return self._s._unary("str_lstrip") if to_strip is None else _no_strip_chars("lstrip")

    def rstrip(self, to_strip: Optional[str] = None) -> Series:
        return self._s._unary("str_rstrip") if to_strip is None else _no_strip_chars("rstrip")

    def replace(self, pat: str, repl: str, n: int = -1, case: Optional[bool] = None, flags: int = 0,
                regex: bool = False) -> Series:
        """Every occurrence of ``pat`` replaced by ``repl`` (a regular expression when
        ``regex=True``, pandas' default since 2.0 being a literal)."""
        if n != -1 or flags:
            raise NotImplementedError("str.replace(n=, flags=)")
        if not isinstance(repl, str):
            raise NotImplementedError("str.replace with a callable replacement")
        if case is False:
            # A case-blind match needs the regex engine; a literal replacement stays literal.
            repl = _regex_template(repl) if regex else repl.replace("$", "$$")
            pat, regex = "(?i)" + (pat if regex else _re_escape(pat)), True
        elif regex:
            repl = _regex_template(repl)
        e = self._s._e.str_replace(pat, repl, bool(regex))
        self._s._base._f.expr_dtype(e)
        return Series(self._s._base, e, self._s.name)


class Index:
    """A frame's row labels, lazy as the frame: its index columns (``set_index``, a
    group-by's keys), or positions when it has none (a ``RangeIndex`` once computed)."""

    def __init__(self, frame: DataFrame) -> None:
        self._frame = frame

    @property
    def names(self) -> List[Optional[str]]:
        return list(self._frame._index) or [None]

    @property
    def name(self) -> Optional[str]:
        names = self.names
        return names[0] if len(names) == 1 else None

    @property
    def nlevels(self) -> int:
        return len(self.names)

    @property
    def dtype(self) -> Any:
        if len(self._frame._index) != 1:
            return np.dtype(object) if self._frame._index else np.dtype(np.int64)
        types = dict(zip(self._frame._f.columns, self._frame._f.dtypes))
        return _dtype_of(types[self._frame._index[0]])

    def __len__(self) -> int:
        return len(self._frame)

    def fetch(self, session: Any = None):
        """Computes the labels: a ``pandas.Index`` (a ``MultiIndex`` for several columns)."""
        pd = _pandas()
        if not self._frame._index:
            return pd.RangeIndex(len(self._frame))
        cols = self._frame._index
        return DataFrame(_frame=self._frame._f.select(cols), _index=cols).fetch(session).index

    def to_numpy(self) -> np.ndarray:
        return self.fetch().to_numpy()

    def tolist(self) -> List[Any]:
        return self.fetch().tolist()

    def __repr__(self) -> str:
        return f"ares.dataframe.Index<names={self.names}, dtype={self.dtype}>"


def _rows_and_columns(key: Any) -> Tuple[Any, Any]:
    """``loc``/``iloc``'s key as (rows, columns): every column when only rows are given."""
    return key if isinstance(key, tuple) and len(key) == 2 else (key, slice(None))


class _Loc:
    """``df.loc[...]``: a boolean mask and/or column labels."""

    def __init__(self, df: DataFrame) -> None:
        self._df = df

    def __getitem__(self, key: Any) -> Any:
        rows, cols = _rows_and_columns(key)
        df = self._df
        if isinstance(rows, Series):
            df = df[rows]
        elif not (isinstance(rows, slice) and rows == slice(None)):
            raise NotImplementedError("loc with row labels (frames have no index): use a boolean mask")
        if isinstance(cols, slice) and cols == slice(None):
            return df
        if isinstance(cols, str):
            return df[cols]
        if isinstance(cols, (list, tuple)):
            return df[list(cols)]
        raise NotImplementedError(f"loc with columns given as {type(cols).__name__}")


class _ILoc:
    """``df.iloc[:n]`` and ``df.iloc[-n:]`` (with optional column positions)."""

    def __init__(self, df: DataFrame) -> None:
        self._df = df

    def __getitem__(self, key: Any) -> Any:
        rows, cols = _rows_and_columns(key)
        df = self._df
        one = None
        if not (isinstance(cols, slice) and cols == slice(None)):
            names = df.columns
            if isinstance(cols, (numbers.Integral, np.integer)):
                one = names[int(cols)]
                picked = [one]
            elif isinstance(cols, slice):
                picked = names[cols]
            else:
                cols = np.asarray(cols)
                if cols.dtype == np.bool_:
                    if cols.shape != (len(names),):
                        raise IndexError(f"iloc: a boolean mask of {cols.shape[0]} for {len(names)} columns")
                    picked = [n for n, m in zip(names, cols) if m]
                elif cols.dtype.kind in "iu" and cols.ndim == 1:
                    picked = [names[int(i)] for i in cols]
                else:
                    raise IndexError(f"iloc: columns given as {cols.dtype} (give positions or a boolean mask)")
            df = df[picked]
        out = self._rows(df, rows)
        return out[one] if one is not None else out

    @staticmethod
    def _rows(df: DataFrame, rows: Any) -> DataFrame:
        if not isinstance(rows, slice) or rows.step not in (None, 1):
            raise NotImplementedError("iloc with rows other than a slice [:n] or [-n:]")
        if rows.start in (None, 0) and rows.stop is None:
            return df
        if rows.start in (None, 0) and isinstance(rows.stop, int) and rows.stop >= 0:
            return df.head(rows.stop)
        if isinstance(rows.start, int) and rows.start < 0 and rows.stop is None:
            return df.tail(-rows.start)
        raise NotImplementedError("iloc with rows other than [:n] or [-n:] (frames have no positions before they run)")


def _query_mask(df: DataFrame, expr: str, scope: Dict[str, Any]) -> Series:
    """The boolean column a ``query`` string means over ``df``'s columns."""
    import ast
    import operator as op

    ops = {ast.Add: op.add, ast.Sub: op.sub, ast.Mult: op.mul, ast.Div: op.truediv, ast.FloorDiv: op.floordiv,
           ast.Mod: op.mod, ast.Pow: op.pow, ast.BitAnd: op.and_, ast.BitOr: op.or_}
    cmps = {ast.Eq: op.eq, ast.NotEq: op.ne, ast.Lt: op.lt, ast.LtE: op.le, ast.Gt: op.gt, ast.GtE: op.ge}
    import io
    import tokenize

    # As pandas parses it: `&` and `|` bind as `and` and `or` (below the comparisons;
    # `~` stays an operator, as in Python), `==`/`!=` with a list mean `in`/`not in`, and
    # `@name` is a variable (made a valid Python name here).
    words = {"&": "and", "|": "or"}
    parts = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(expr.strip()).readline):
            if tok.type == tokenize.OP and tok.string in words:
                parts.append((tokenize.NAME, words[tok.string]))
            elif tok.type == tokenize.OP and tok.string == "@":
                parts.append((tokenize.NAME, "__ares_var_"))
            else:
                parts.append((tok.type, tok.string))
    except (tokenize.TokenError, IndentationError) as e:
        raise ValueError(f"query: {expr!r} is not an expression ({e})") from None
    source = tokenize.untokenize(parts).replace("__ares_var_ ", "__ares_var_")

    def ev(node: Any) -> Any:
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.BoolOp):
            vals = [ev(v) for v in node.values]
            out = vals[0]
            for v in vals[1:]:
                out = out & v if isinstance(node.op, ast.And) else out | v
            return out
        if isinstance(node, ast.UnaryOp):
            v = ev(node.operand)
            if isinstance(node.op, (ast.Not, ast.Invert)):
                return ~v
            if isinstance(node.op, ast.USub):
                return -v
            return v
        if isinstance(node, ast.BinOp) and type(node.op) in ops:
            return ops[type(node.op)](ev(node.left), ev(node.right))
        if isinstance(node, ast.Compare):
            out, left = None, ev(node.left)
            for o, c in zip(node.ops, node.comparators):
                right = ev(c)
                if isinstance(o, (ast.In, ast.NotIn)) or (
                        isinstance(o, (ast.Eq, ast.NotEq)) and isinstance(right, list)):
                    m = left.isin(right)
                    m = ~m if isinstance(o, (ast.NotIn, ast.NotEq)) else m
                elif type(o) in cmps:
                    m = cmps[type(o)](left, right)
                else:
                    raise NotImplementedError(f"query: the comparison {type(o).__name__}")
                out = m if out is None else out & m
                left = right
            return out
        if isinstance(node, ast.Name):
            if node.id.startswith("__ares_var_"):
                name = node.id[len("__ares_var_"):]
                if name not in scope:
                    raise NameError(f"query: name '@{name}' is not defined")
                return scope[name]
            return df._col(node.id)
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, (ast.List, ast.Tuple)):
            return [ev(e) for e in node.elts]
        raise NotImplementedError(f"query: {ast.dump(node)[:60]}")

    try:
        tree = ast.parse(source.strip(), mode="eval")
    except SyntaxError as e:
        raise ValueError(f"query: {expr!r} is not an expression ({e.msg})") from None
    mask = ev(tree)
    if not isinstance(mask, Series):
        raise ValueError(f"query: {expr!r} does not depend on the frame's columns")
    if mask.dtype != np.bool_:
        raise ValueError(f"query: {expr!r} is not a boolean condition")
    return mask


def _regex_template(repl: str) -> str:
    """A replacement as Python's ``re.sub`` reads it (``\\1``, ``\\g<name>``, ``\\n``, ``\\\\``,
    octal escapes) written for the regex crate (``${1}``, ``${name}``, the characters
    themselves; ``$`` doubled). A bad escape raises as Python's does."""
    simple = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v", "\\": "\\"}
    out, i = [], 0
    while i < len(repl):
        c = repl[i]
        if c != "\\":
            out.append("$$" if c == "$" else c)
            i += 1
            continue
        if i + 1 == len(repl):
            raise ValueError("str.replace: bad escape (end of pattern) in the replacement")
        d = repl[i + 1]
        three = repl[i + 1:i + 4]
        if d == "g":
            end = repl.find(">", i + 2)
            if repl[i + 2:i + 3] != "<" or end < 0 or end == i + 3:
                raise ValueError(f"str.replace: bad group reference in the replacement {repl!r}")
            out.append("${" + repl[i + 3:end] + "}")
            i = end + 1
        elif d == "0" or (len(three) == 3 and all(x in "01234567" for x in three)):
            # An octal escape: \0 with up to two more digits, or three digits.
            j = i + 2
            while j < i + 4 and j < len(repl) and repl[j] in "01234567":
                j += 1
            out.append(chr(int(repl[i + 1:j], 8)))
            i = j
        elif d.isdigit():
            n = 2 if repl[i + 2:i + 3].isdigit() else 1
            out.append("${" + repl[i + 1:i + 1 + n] + "}")
            i += 1 + n
        elif d in simple:
            out.append(simple[d])
            i += 2
        elif d.isascii() and d.isalpha():
            raise ValueError(f"str.replace: bad escape \\{d} in the replacement {repl!r}")
        else:
            # Python keeps an unknown non-letter escape as it is.
            out.append("\\" + ("$$" if d == "$" else d))
            i += 2
    return "".join(out)


def _no_strip_chars(name: str) -> Any:
    raise NotImplementedError(f"str.{name}(to_strip): only whitespace is stripped")


def _re_escape(s: str) -> str:
    import re

    return re.escape(s)


class _DtAccessor:
    """``series.dt``: calendar fields of dates and datetimes, rounding down, formatting,
    and the parts of durations."""

    def __init__(self, s: Series) -> None:
        self._s = s
        native = s._base._f.expr_dtype(s._e)
        self._duration = native.startswith("timedelta64")
        if not (self._duration or native.startswith("datetime64[")):
            raise AttributeError("Can only use .dt accessor with datetimelike values")

    def _field(self, op: str) -> Series:
        if self._duration:
            raise AttributeError(f"'TimedeltaProperties' object has no attribute {op!r}")
        return self._s._unary(op)

    year = property(lambda self: self._field("year"))
    month = property(lambda self: self._field("month"))
    day = property(lambda self: self._field("day"))
    dayofweek = day_of_week = weekday = property(lambda self: self._field("dayofweek"))
    dayofyear = day_of_year = property(lambda self: self._field("dayofyear"))
    quarter = property(lambda self: self._field("quarter"))
    hour = property(lambda self: self._field("hour"))
    minute = property(lambda self: self._field("minute"))
    second = property(lambda self: self._field("second"))
    microsecond = property(lambda self: self._field("microsecond"))
    nanosecond = property(lambda self: self._field("nanosecond"))
    days_in_month = daysinmonth = property(lambda self: self._field("days_in_month"))
    is_month_start = property(lambda self: self._field("is_month_start"))
    is_month_end = property(lambda self: self._field("is_month_end"))
    is_quarter_start = property(lambda self: self._field("is_quarter_start"))
    is_quarter_end = property(lambda self: self._field("is_quarter_end"))
    is_year_start = property(lambda self: self._field("is_year_start"))
    is_year_end = property(lambda self: self._field("is_year_end"))
    is_leap_year = property(lambda self: self._field("is_leap_year"))

    @property
    def date(self) -> Series:
        """The calendar dates (a date column; pandas gives ``datetime.date`` objects)."""
        return self._field("date")

    def normalize(self) -> Series:
        """Midnight of each date and time."""
        return self.floor("D")

    def _rounded(self, freq: Any, how: str) -> Series:
        if self._duration:
            raise NotImplementedError(f"{how} of durations")
        pd = _pandas()
        try:
            nanos = int(pd.tseries.frequencies.to_offset(freq).nanos)
        except ValueError as e:
            raise ValueError(f"{how}({freq!r}): {e}") from None
        e = self._s._e.dt_floor(nanos, how)
        self._s._base._f.expr_dtype(e)
        return Series(self._s._base, e, self._s.name)

    def floor(self, freq: Any) -> Series:
        """Rounded down to a multiple of a fixed frequency (``"D"``, ``"h"``, ``"15min"``,
        ``"s"``, ``pd.Timedelta``), counted from the epoch as pandas counts it (an aware
        column on its wall times, localized again)."""
        return self._rounded(freq, "floor")

    def ceil(self, freq: Any) -> Series:
        """Rounded up to a multiple of a fixed frequency (see ``floor``)."""
        return self._rounded(freq, "ceil")

    def round(self, freq: Any) -> Series:
        """Rounded to the nearest multiple of a fixed frequency, halves to the even
        multiple, as pandas rounds (see ``floor``)."""
        return self._rounded(freq, "round")

    def strftime(self, date_format: str) -> Series:
        """Each date or time as text, by Python's ``strftime`` directives (in the C
        locale); an unsupported directive raises naming it."""
        if self._duration:
            raise AttributeError("'TimedeltaProperties' object has no attribute 'strftime'")
        e = self._s._e.strftime(str(date_format))
        self._s._base._f.expr_dtype(e)
        return Series(self._s._base, e, self._s.name)

    def isocalendar(self) -> DataFrame:
        """The ISO 8601 year, week (1 to 53) and day (Monday 1) of each date or time,
        a frame of columns ``year``, ``week``, ``day`` (int32: pandas makes them
        ``UInt32``)."""
        if self._duration:
            raise AttributeError("'TimedeltaProperties' object has no attribute 'isocalendar'")
        s = self._s
        cols = [("year", s._unary("iso_year")._e), ("week", s._unary("iso_week")._e),
                ("day", (s._unary("dayofweek") + 1)._e)]
        index = list(s._base._index)
        return DataFrame(_frame=s._base._f.assign(cols).select(index + ["year", "week", "day"]), _index=index)

    @property
    def tz(self) -> Any:
        """The column's time zone (a ``zoneinfo.ZoneInfo``, or ``datetime.timezone`` for
        a fixed offset), ``None`` when naive."""
        tz = None if self._duration else _zone_of(self._s._base._f.expr_dtype(self._s._e))
        return None if tz is None else _pandas().DatetimeTZDtype("ns", tz).tz

    def _zone(self, e: Any) -> Series:
        if self._duration:
            raise AttributeError("'TimedeltaProperties' object has no attribute 'tz_localize'")
        self._s._base._f.expr_dtype(e)
        return Series(self._s._base, e, self._s.name)

    def tz_localize(self, tz: Any, ambiguous: Any = "raise", nonexistent: Any = "raise") -> Series:
        """Naive wall times read in zone ``tz``; ``None`` drops an aware column's zone,
        keeping its wall times. A wall time the zone shows twice takes ``ambiguous``:
        ``"raise"`` (fail when computed), ``"NaT"``, ``True`` (the summer-time instant)
        or ``False`` (the standard-time one); one it skips takes ``nonexistent``:
        ``"raise"``, ``"NaT"``, ``"shift_forward"`` (the first time after the gap) or
        ``"shift_backward"`` (the last before it), as pandas has them."""
        if isinstance(ambiguous, (bool, np.bool_)):
            ambiguous = "earlier" if ambiguous else "later"
        if not isinstance(ambiguous, str) or ambiguous not in ("raise", "NaT", "earlier", "later"):
            raise NotImplementedError(
                f"tz_localize(ambiguous={ambiguous!r}): give 'raise', 'NaT', True or False "
                "(one choice for every row; 'infer' and per-row arrays are not supported)")
        if not isinstance(nonexistent, str) or nonexistent not in ("raise", "NaT", "shift_forward", "shift_backward"):
            raise NotImplementedError(
                f"tz_localize(nonexistent={nonexistent!r}): give 'raise', 'NaT', 'shift_forward' or 'shift_backward'")
        name = None if tz is None else _tz_name(tz)
        return self._zone(self._s._e.tz_localize(name, ambiguous, nonexistent))

    def tz_convert(self, tz: Any) -> Series:
        """The same instants shown in zone ``tz``; ``None`` gives naive UTC times."""
        return self._zone(self._s._e.tz_convert(None if tz is None else _tz_name(tz)))

    def month_name(self) -> Series:
        return self.strftime("%B")

    def day_name(self) -> Series:
        return self.strftime("%A")

    # Durations: pandas' components (days floored, seconds and below within the day).

    def _duration_only(self, name: str) -> None:
        if not self._duration:
            raise AttributeError(f"'DatetimeProperties' object has no attribute {name!r}")

    @property
    def days(self) -> Series:
        self._duration_only("days")
        return self._s // _pandas().Timedelta(days=1)

    @property
    def seconds(self) -> Series:
        self._duration_only("seconds")
        pd = _pandas()
        return (self._s % pd.Timedelta(days=1)) // pd.Timedelta(seconds=1)

    @property
    def microseconds(self) -> Series:
        self._duration_only("microseconds")
        pd = _pandas()
        return (self._s % pd.Timedelta(seconds=1)) // pd.Timedelta(microseconds=1)

    @property
    def nanoseconds(self) -> Series:
        self._duration_only("nanoseconds")
        pd = _pandas()
        return (self._s % pd.Timedelta(microseconds=1)) // pd.Timedelta(nanoseconds=1)

    def total_seconds(self) -> Series:
        self._duration_only("total_seconds")
        return self._s / _pandas().Timedelta(seconds=1)


class GroupBy:
    """``df.groupby(keys)``: select columns with ``[...]``, then aggregate."""

    def __init__(self, frame: DataFrame, keys: List[str], selected: List[str], as_index: bool, method: str,
                 single: Optional[str]) -> None:
        self._frame, self._keys, self._selected = frame, keys, selected
        self._as_index, self._method, self._single = as_index, method, single

    def __getitem__(self, key: Union[str, Sequence[str]]) -> "GroupBy":
        cols = _as_list(key)
        for c in cols:
            if c not in self._frame._f.columns:
                raise KeyError(c)
        single = key if isinstance(key, str) else None
        return GroupBy(self._frame, self._keys, cols, self._as_index, self._method, single)

    def __getattr__(self, name: str) -> "GroupBy":
        # ``g.col`` is ``g["col"]``, as in pandas (dunder and private names stay errors,
        # so copy and pickle see an ordinary object).
        if name.startswith("_") or name not in self._frame._f.columns:
            raise AttributeError(f"'GroupBy' object has no attribute {name!r}")
        return self[name]

    def _run(self, aggs: List[Tuple[str, str, str]], series: bool = False) -> DataFrame:
        # nunique is its own pipeline (distinct (keys, column) rows counted per group),
        # merged on the keys with the other aggregations and sorted by them.
        distinct = [(c, out) for c, f, out in aggs if f == "nunique"]
        rest = [a for a in aggs if a[1] != "nunique"]
        f = self._frame._f.groupby_agg(self._keys, rest, self._method) if rest else None
        if distinct:
            d = self._frame._f.groupby_nunique(self._keys, distinct, self._method)
            f = d if f is None else f.merge(d, self._keys, "inner").sort_values(self._keys, [True])
            names = self._keys + [out for _, _, out in aggs]
            f = f.select(names)
        index = self._keys if self._as_index else []
        return DataFrame(_frame=f, _index=index, _kind="series" if series and self._as_index else "frame")

    def _each(self, how: str) -> DataFrame:
        if not self._selected:
            raise ValueError("no columns to aggregate: every column is a key")
        return self._run([(c, how, c) for c in self._selected], series=self._single is not None)

    def sum(self) -> DataFrame: return self._each("sum")
    def mean(self) -> DataFrame: return self._each("mean")
    def count(self) -> DataFrame: return self._each("count")
    def min(self) -> DataFrame: return self._each("min")
    def max(self) -> DataFrame: return self._each("max")
    def first(self) -> DataFrame: return self._each("first")
    def last(self) -> DataFrame: return self._each("last")

    def std(self, ddof: int = 1) -> DataFrame:
        _ddof(ddof)
        return self._each("std")

    def var(self, ddof: int = 1) -> DataFrame:
        _ddof(ddof)
        return self._each("var")

    def _scan(self, kind: str, columns: List[str], periods: int = 1, step: Any = None) -> Any:
        """Running ``kind`` of ``columns`` within the groups (or ``step(native, column,
        name)``, a rank), aligned with the frame's rows: a frame holding the frame's
        columns and the results (the frame's rows and chunks), and the results' names
        there."""
        if self._frame._index:
            raise NotImplementedError(f"groupby(...).{kind}() of a frame with an index: reset_index() first")
        f = self._frame._f
        names = []
        for c in columns:
            name = f"__ares_{kind}_{c}"
            f = step(f, c, name) if step is not None else f.group_scan(self._keys, c, kind, name, periods)
            names.append(name)
        base = DataFrame(_frame=f, _rows=self._frame._rows)
        base._extends = self._frame._f
        return base, names

    def _scans(self, kind: str, periods: int = 1, then: Any = None, step: Any = None) -> Any:
        """``kind`` of each selected column (a Series for one), ``then(column, scanned)``
        applied to each when given (``diff``)."""
        cols = [c for c in self._selected if c not in self._keys]
        if not cols:
            raise ValueError(f"{kind}: no columns to scan (every column is a key)")
        base, names = self._scan(kind, cols, periods, step)
        out = [Series(base, _native.NativeExpr.col(n), c) for n, c in zip(names, cols)]
        if then is not None:
            out = [then(base[c], s) for c, s in zip(cols, out)]
        if self._single is not None:
            out[0].name = self._single
            return out[0]
        exprs = [(f"__ares_out_{c}", s._e) for c, s in zip(cols, out)]
        f = base._f.assign(exprs).select([n for n, _ in exprs]).rename([(n, c) for (n, _), c in zip(exprs, cols)])
        return base._wrap(f, same_rows=True)

    def shift(self, periods: int = 1, fill_value: Any = None) -> Any:
        """Each row's value ``periods`` rows before it in its group (after it, for
        negative periods; missing where there is none, or ``fill_value``), aligned with
        the frame's rows; any dtype."""
        kind, n = _shift_of(periods, "shift")
        if fill_value is None:
            return self._scans(kind, n)
        one = _native.NativeExpr.lit(True)
        # Only rows with no row `periods` away take the fill (a missing value shifted in
        # stays missing, as pandas'): a shift of a column of True marks the others.
        return self._scans(
            kind, n,
            step=lambda f, c, name: f.assign([(name + "_one", one)]).group_scan(self._keys, c, kind, name, n)
            .group_scan(self._keys, name + "_one", kind, name + "_has", n),
            then=lambda v, s: s.where(Series(s._base, _native.NativeExpr.col(f"__ares_{kind}_{v.name}_has"),
                                             None).notna(), fill_value))

    def diff(self, periods: int = 1) -> Any:
        """Each row's value minus the value ``periods`` rows before it in its group (after
        it, if negative; missing where there is none), aligned with the frame's rows."""
        return self._scans(*_shift_of(periods, "diff"), then=lambda v, other: v - other)

    def rank(self, method: str = "average", ascending: bool = True, na_option: str = "keep",
             pct: bool = False, axis: Any = 0) -> Any:
        """Each row's rank within its group (float64; ties by ``method``: average, min,
        max, first, dense), aligned with the frame's rows; missing values and keys get
        none."""
        _rank_options(na_option, axis)
        return self._scans("rank", step=lambda f, c, name: f.rank(self._keys, c, method, bool(ascending), bool(pct),
                                                                  name))

    def cumsum(self) -> Any:
        """Running sums within each group, in row order, aligned with the frame's rows (a
        Series for one selected column, else a frame of the selected columns): what
        ``df["c"] = df.groupby("k")["v"].cumsum()`` assigns. Missing values (and rows
        with a missing key) give missing results and are skipped."""
        return self._scans("cumsum")

    def cummin(self) -> Any:
        """Running least values within each group (see ``cumsum``)."""
        return self._scans("cummin")

    def cummax(self) -> Any:
        """Running greatest values within each group (see ``cumsum``)."""
        return self._scans("cummax")

    def cumcount(self, ascending: bool = True) -> "Series":
        """Each row's number within its group, from 0, in row order (a Series aligned with
        the frame's rows)."""
        if not ascending:
            raise NotImplementedError("cumcount(ascending=False)")
        base, names = self._scan("cumcount", [self._keys[0]])
        return Series(base, _native.NativeExpr.col(names[0]), None)

    def size(self) -> DataFrame:
        """Rows per group: a Series indexed by key (a frame with a ``size`` column when
        ``as_index=False``)."""
        # pandas' size() Series is named as the selected column, if one was, else unnamed;
        # with as_index=False the column is "size".
        name = (self._single or "__ares_value") if self._as_index else "size"
        return self._run([(self._keys[0], "size", name)], series=True)

    def nunique(self) -> DataFrame:
        if not self._selected:
            raise ValueError("no columns to count: every column is a key")
        f = self._frame._f.groupby_nunique(self._keys, [(c, c) for c in self._selected], self._method)
        index = self._keys if self._as_index else []
        return DataFrame(_frame=f, _index=index, _kind="series" if self._single and self._as_index else "frame")

    def agg(self, func: Any = None, **named: Any) -> DataFrame:
        """``agg("sum")``, ``agg(["sum", "mean"])`` (columns named ``col_func``: there are
        no MultiIndex columns), ``agg({column: func or [funcs]})``, or named aggregation
        ``agg(total=("col", "sum"))``."""
        aggs: List[Tuple[str, str, str]] = []
        if named and func is not None:
            raise TypeError("agg: give either a function, a list or a dict, or named aggregations, not both")
        if isinstance(func, dict) and self._single is not None:
            raise NotImplementedError("agg({column: ...}) of one selected column (pandas raises SpecificationError)")
        if isinstance(func, str) and func == "size":
            return self.size()
        if named:
            for out, spec in named.items():
                if isinstance(spec, tuple):
                    col, f = spec
                elif self._single is not None and (isinstance(spec, str) or callable(spec)):
                    col, f = self._single, spec
                else:
                    col, f = spec.column, spec.aggfunc
                aggs.append((col, _agg_name(f), out))
        elif isinstance(func, (str,)) or callable(func):
            return self._each(_agg_name(func))
        elif isinstance(func, (list, tuple)):
            for c in self._selected:
                for f in func:
                    # One selected column: the functions' names, as pandas names them.
                    out = _agg_name(f) if self._single is not None else f"{c}_{_agg_name(f)}"
                    aggs.append((c, _agg_name(f), out))
        elif isinstance(func, dict):
            for c, fs in func.items():
                if isinstance(fs, (list, tuple)):
                    aggs.extend((c, _agg_name(f), f"{c}_{_agg_name(f)}") for f in fs)
                else:
                    aggs.append((c, _agg_name(fs), c))
        else:
            raise NotImplementedError(f"agg({type(func).__name__})")
        return self._run(aggs)

    aggregate = agg


# Fresh numbers for the helper columns a Series computation appends.
_FRESH = itertools.count()


def _native_numeric(dtype: str) -> bool:
    """Whether a native dtype name is of numbers."""
    return dtype.startswith(("int", "uint", "float"))


def _rank_options(na_option: str, axis: Any) -> None:
    if na_option != "keep":
        raise NotImplementedError(f"rank(na_option={na_option!r}): only 'keep' (missing values get no rank)")
    if axis not in (0, "index", "rows"):
        raise NotImplementedError("rank along columns (axis=1)")


def _shift_of(periods: Any, what: str) -> Tuple[str, int]:
    """The scan a shift of ``periods`` rows is: ``shift`` looks back, ``lead`` ahead."""
    if not isinstance(periods, (int, np.integer)) or isinstance(periods, bool):
        raise TypeError(f"{what}: periods must be an integer")
    if periods == 0:
        raise NotImplementedError(f"{what}(periods=0): a shift of no rows is the column itself")
    return ("shift", int(periods)) if periods > 0 else ("lead", -int(periods))


class Rolling:
    """A window of rows ending at each row of a column or frame (pandas' ``Rolling``):
    fixed row counts only; missing values are skipped, and a window with fewer than
    ``min_periods`` values (default: the window) gives a missing result."""

    def __init__(self, of: Any, window: Any, min_periods: Optional[int], center: bool, win_type: Any,
                 on: Any, closed: Any) -> None:
        if not isinstance(window, (int, np.integer)) or isinstance(window, bool):
            raise NotImplementedError(f"rolling({window!r}): only a number of rows (time windows such as '7D' "
                                      "are not supported)")
        if window < 1:
            raise NotImplementedError(f"rolling({window}): give a window of at least 1 row")
        if center or win_type is not None or on is not None or closed is not None:
            raise NotImplementedError("rolling with center, win_type, on or closed")
        least = window if min_periods is None else min_periods
        if not isinstance(least, (int, np.integer)) or least < 0:
            raise ValueError("min_periods must be >= 0")
        if least > window:
            raise ValueError(f"min_periods {least} must be <= window {window}")
        self._of, self._window, self._least = of, int(window), int(least)

    def _run(self, kind: str) -> Any:
        if isinstance(self._of, Series):
            return self._of._scan(f"rolling_{kind}", self._window, self._least)
        return self._of._scan_columns(f"rolling_{kind}", self._window, self._least)

    def sum(self) -> Any:
        return self._run("sum")

    def mean(self) -> Any:
        return self._run("mean")

    def min(self) -> Any:
        return self._run("min")

    def max(self) -> Any:
        return self._run("max")


def from_pandas(data: Any, chunk_size: Optional[int] = None) -> DataFrame:
    """A frame holding a pandas DataFrame's columns (its index is dropped)."""
    return DataFrame(data, chunk_size=chunk_size)


def merge(left: DataFrame, right: DataFrame, how: str = "inner", on: Union[str, Sequence[str], None] = None,
          left_on: Any = None, right_on: Any = None, suffixes: Tuple[str, str] = ("_x", "_y"),
          indicator: Union[bool, str] = False, validate: Optional[str] = None) -> DataFrame:
    """pandas' ``merge`` on equal key columns: ``on``, every column both frames have, or
    ``left_on``/``right_on`` (then both key columns are kept, as pandas does), for
    ``how`` inner, left, right, outer or cross. Overlapping other columns get
    ``suffixes``; missing keys match each other. ``indicator`` adds a ``_merge`` column
    (strings, where pandas makes a categorical); ``validate`` checks the keys' uniqueness
    first (which computes both frames) and raises pandas' ``MergeError``."""
    if how not in ("inner", "left", "right", "outer", "cross"):
        raise ValueError(f"how={how!r}: give 'inner', 'left', 'right', 'outer' or 'cross'")
    if len(tuple(suffixes)) != 2:
        raise ValueError("suffixes must be a pair, such as ('_x', '_y')")
    if how == "cross":
        if on is not None or left_on is not None or right_on is not None:
            raise _merge_error("Can not pass on, right_on, left_on or set right_index=True or left_index=True")
        # Every row meets every row: one constant key on both sides.
        k = "__ares_cross"
        out = merge(left.assign(**{k: 0}), right.assign(**{k: 0}), on=k, suffixes=suffixes, indicator=indicator)
        return out.drop(columns=k)
    if left_on is not None or right_on is not None:
        if on is not None:
            raise _merge_error('Can only pass argument "on" OR "left_on" and "right_on", not a combination of both.')
        lk, rk = _as_list(left_on), _as_list(right_on)
        if len(lk) != len(rk) or not lk:
            raise ValueError("left_on and right_on must name as many columns (at least one)")
    else:
        lk = rk = _as_list(on) or [c for c in left.columns if c in right.columns]
        if not lk:
            raise _merge_error("No common columns to perform merge on: give on=")
    _merge_keys(left, lk)
    _merge_keys(right, rk)
    if validate is not None:
        _validate_merge(left, right, lk, rk, validate)
    label = "_merge" if indicator is True else (indicator or None)
    if label is not None and (label in left.columns or label in right.columns):
        raise ValueError(f"Cannot use name of an existing column for indicator column: {label!r}")
    # Marker columns say which side a row came from: for the indicator, and for the left's
    # key columns of a right or outer merge on left_on/right_on (missing where no left row
    # matched, as pandas has them).
    copied = [(l, r) for l, r in zip(lk, rk) if l != r]
    mark = label is not None or (bool(copied) and how in ("right", "outer"))
    ml, mr = "__ares_left_row", "__ares_right_row"
    if mark:
        left, right = left.assign(**{ml: True}), right.assign(**{mr: True})
    if copied:
        # The right side's keys copied under the left's names: matched rows have equal
        # keys, so the merged key columns are the left's, and the right's stay as columns.
        taken = [l for l, _ in copied if l in right._f.columns]
        if taken:
            raise NotImplementedError(f"merge(left_on=, right_on=) where the right frame also has {taken}")
        right = right.assign(**{l: right._col(r) for l, r in copied})
    out = _merge_on(left, right, how, lk, suffixes)
    if not mark:
        return out
    in_left, in_right = out[ml].notna(), out[mr].notna()
    if copied and how in ("right", "outer"):
        for l, _ in copied:
            out[l] = out[l].where(in_left)
    if label is not None:
        out[label] = "both"
        out[label] = out[label].where(in_right, "left_only").where(in_left, "right_only")
    return out.drop(columns=[ml, mr])


def _merge_on(left: DataFrame, right: DataFrame, how: str, keys: List[str], suffixes: Tuple[str, str]) -> DataFrame:
    """The merge on key columns both frames name alike."""
    sx, sy = (s or "" for s in suffixes)
    # As pandas' merge on columns: the result has no index (the frames' index columns
    # are left out).
    lf = left._f.drop(left._index) if left._index else left._f
    rf = right._f.drop(right._index) if right._index else right._f
    # Columns on both sides (other than the keys) take their suffixes before the merge,
    # so that no name can meet another one afterwards.
    both = [c for c in lf.columns if c in rf.columns and c not in keys]
    if both:
        if sx == sy:
            raise ValueError(f"columns overlap but the suffixes are the same: {both}")
        lf = lf.rename([(c, c + sx) for c in both if sx])
        rf = rf.rename([(c, c + sy) for c in both if sy])
        names = [c for c in lf.columns] + [c for c in rf.columns if c not in keys]
        dups = sorted({c for c in names if names.count(c) > 1})
        if dups:
            raise ValueError(f"suffixes {tuple(suffixes)} would make duplicate columns {dups}: choose others")
    out = lf.merge(rf, keys, how)
    # pandas' column order (the left's columns, then the right's others) whatever the
    # method, and an outer merge's rows sorted by key, as pandas sorts them.
    out = out.select(list(lf.columns) + [c for c in rf.columns if c not in keys])
    if how == "outer":
        out = out.sort_values(keys, [True] * len(keys))
    return DataFrame(_frame=out)


def _merge_error(message: str) -> Exception:
    """pandas' ``MergeError`` (a ``ValueError``), or a ``ValueError`` without pandas."""
    try:
        from pandas.errors import MergeError
    except ImportError:  # pragma: no cover - pandas is a dependency of the tests
        return ValueError(message)
    return MergeError(message)


_VALIDATE = {"one_to_one": (True, True), "1:1": (True, True), "one_to_many": (True, False),
             "1:m": (True, False), "many_to_one": (False, True), "m:1": (False, True),
             "many_to_many": (False, False), "m:m": (False, False)}


def _validate_merge(left: DataFrame, right: DataFrame, lk: List[str], rk: List[str], validate: str) -> None:
    """pandas' ``validate=``: the keys of a "one" side are unique (computes both frames)."""
    if validate not in _VALIDATE:
        raise ValueError(f'"{validate}" is not a valid argument. Valid arguments are:\n'
                         + "\n".join(f'- "{v}"' for v in _VALIDATE))
    kind = {(True, True): "one-to-one", (True, False): "one-to-many", (False, True): "many-to-one"}
    need_left, need_right = _VALIDATE[validate]
    for need, df, keys, side in ((need_left, left, lk, "left"), (need_right, right, rk, "right")):
        if need and len(df[keys].drop_duplicates()) != len(df):
            what = kind[(need_left, need_right)]
            raise _merge_error(f"Merge keys are not unique in {side} dataset; not a {what} merge")


def melt(frame: DataFrame, id_vars: Any = None, value_vars: Any = None, var_name: Any = None,
         value_name: str = "value") -> DataFrame:
    """pandas' ``melt``: one row per row and value column (all rows of the first value
    column, then of the next, as pandas orders them), the identifier columns repeated, the
    value column's name in ``var_name`` (``"variable"``) and its value in ``value_name``.
    The value columns take numpy's common dtype (numbers with numbers, strings with
    strings)."""
    ids = _as_list(id_vars)
    frame[ids]  # raises KeyError naming a missing column
    vals = _as_list(value_vars) if value_vars is not None else [c for c in frame.columns if c not in ids]
    if not vals:
        raise ValueError("melt: no value columns (every column is an identifier)")
    var = "variable" if var_name is None else str(var_name)
    if var in ids or value_name in ids or var == value_name:
        raise ValueError(f"melt: var_name {var!r} and value_name {value_name!r} must differ from the "
                         "identifiers and from each other")
    parts = [frame.assign(**{var: v, "__ares_melt": frame[v]})[ids + [var, "__ares_melt"]] for v in vals]
    out = concat(parts, ignore_index=True) if len(parts) > 1 else parts[0]
    return out.rename(columns={"__ares_melt": value_name})


# pivot_table's aggregations by name.
_PIVOT_AGGS = ("mean", "sum", "count", "min", "max", "size", "std", "var", "first", "last")


def pivot_table(data: DataFrame, values: Any = None, index: Any = None, columns: Any = None,
                aggfunc: Any = "mean", fill_value: Any = None, **kwargs: Any) -> DataFrame:
    """pandas' ``pivot_table`` of ``values`` columns: rows by ``index`` (the result's
    index), a column per value of ``columns`` (sorted, found by computing that column's
    distinct values first, as pandas is eager; for a list of values columns, one per
    values column and value, as pandas' two-level columns), each cell ``aggfunc`` of the rows of its
    pair (NaN where the pair has no row, or ``fill_value``). One group-by computes every
    cell: each column value's cells are the aggregation of the values masked to it."""
    if kwargs.get("margins"):
        raise NotImplementedError("pivot_table(margins=True)")
    kwargs.pop("margins", None)
    kwargs.pop("observed", None)
    if kwargs.pop("sort", True) is not True or kwargs.pop("dropna", True) is not True or kwargs:
        raise NotImplementedError(f"pivot_table with {', '.join(kwargs) or 'sort=False or dropna=False'}")
    keys, cols = _as_list(index), _as_list(columns)
    if not keys or len(cols) != 1:
        raise NotImplementedError("pivot_table: give index= (one or more columns) and one columns= column")
    vals = _as_list(values)
    how = _agg_name(aggfunc)
    if how not in _PIVOT_AGGS:
        raise NotImplementedError(f"pivot_table(aggfunc={aggfunc!r}): give one of {', '.join(_PIVOT_AGGS)}")
    if not vals:
        if how != "size":
            raise ValueError("pivot_table: give values= (the column to aggregate)")
        vals = [keys[0]]
    several = isinstance(values, (list, tuple)) and how != "size"
    col = cols[0]
    data[list(dict.fromkeys(keys + cols + vals))]  # raises KeyError naming a missing column
    # As pandas: pairs whose aggregate is NaN are left out (dropna=True), so a column
    # value with no other value is no column; the values found by computing, as pandas.
    nan_out = how in ("mean", "min", "max", "std", "var", "first", "last")
    if several:
        # pandas sorts the two-level columns: the values columns by name too.
        vals = sorted(vals)
    if nan_out:
        counts = data.groupby(col)[vals].count().fetch()
        found = {v: sorted(k for k, n in counts[v].items() if n > 0 and not _missing(k)) for v in vals}
        if fill_value is not None:
            # A label some values column has keeps its column for every one, filled.
            every = sorted(set().union(*found.values()))
            found = {v: every for v in vals}
    else:
        every = sorted(v for v in data[col].drop_duplicates().fetch().tolist() if not _missing(v))
        found = {v: every for v in vals}
    # One output column per (values column, label); several values columns make pandas'
    # two-level columns (values column, label).
    cells_of = [(v, label) for v in vals for label in found[v]]
    if not cells_of:
        return data[keys].head(0).set_index(keys)
    names = [f"__ares_pivot_{i}" for i in range(len(cells_of))]
    # Per cell: the values where the row has its label (missing elsewhere), and how many
    # rows have it (a pair without rows is NaN, as pandas leaves it).
    masked: Dict[str, Any] = {}
    for name, (v, label) in zip(names, cells_of):
        hit = data[col] == label
        masked[name] = data[v].where(hit) if how != "size" else hit.astype("int64")
        masked[name + "_n"] = (hit & data[v].notna() if nan_out else hit).astype("int64")
    wide = data.assign(**masked)
    agg = "sum" if how == "size" else how
    spec = {n: agg for n in names}
    spec.update({n + "_n": "sum" for n in names})
    out = wide.groupby(keys)[list(spec)].agg(spec)
    # Index keys with no pair left go, as the pairs do.
    present = [out[n + "_n"] > 0 for n in names]
    keep = present[0]
    for p in present[1:]:
        keep = keep | p
    out = out[keep]
    cells = {}
    for name in names:
        has = out[name + "_n"] > 0
        cells[name] = out[name].where(has) if fill_value is None else out[name].where(has, fill_value)
    out = out.assign(**cells)[names]
    if several:
        out._labels = (dict(zip(names, cells_of)), [None, col])
    else:
        out._labels = (dict(zip(names, (label for _, label in cells_of))), col)
    return out


def crosstab(index: Series, columns: Series, values: Optional[Series] = None, aggfunc: Any = None,
             **kwargs: Any) -> DataFrame:
    """pandas' ``crosstab`` of two columns of one frame: how many rows have each pair (0
    where none), or ``aggfunc`` of ``values`` per pair (NaN where none)."""
    if kwargs:
        raise NotImplementedError(f"crosstab with {', '.join(kwargs)}=...")
    if (values is None) != (aggfunc is None):
        raise ValueError("aggfunc cannot be used without values, and values need an aggfunc")
    series = [index, columns] + ([values] if values is not None else [])
    if not all(isinstance(s, Series) for s in series):
        raise NotImplementedError("crosstab of columns of an ares frame (give Series)")
    base = index._base
    if any(s._base._rows is not base._rows for s in series):
        raise NotImplementedError("crosstab of columns of different frames")
    names = ["__ares_row", "__ares_col", "__ares_val"][:len(series)]
    frame = base.assign(**dict(zip(names, series)))
    if values is None:
        out = pivot_table(frame, index="__ares_row", columns="__ares_col", aggfunc="size", fill_value=0)
    else:
        out = pivot_table(frame, values="__ares_val", index="__ares_row", columns="__ares_col", aggfunc=aggfunc)
    # Named as the columns were (pandas' row_0 and col_0 when unnamed): the index by the
    # first, the column labels by the second.
    labels = out._labels[0] if out._labels is not None else {}
    row = index.name if index.name is not None else "row_0"
    named = DataFrame(_frame=out._f.rename([("__ares_row", str(row))]), _index=[str(row)])
    named._labels = (labels, columns.name if columns.name is not None else "col_0")
    return named


def _merge_keys(df: DataFrame, keys: List[str]) -> None:
    for k in keys:
        if k in df._index:
            raise NotImplementedError(f"merge on the index level {k!r}: reset_index() first")
        if k not in df._f.columns:
            raise KeyError(k)


def concat(objs: Sequence[Any], axis: Any = 0, join: str = "outer", ignore_index: bool = False,
           **kwargs: Any) -> Any:
    """pandas' ``concat`` of frames (or of Series) along the rows: every frame must have
    the same columns (in any order; the first's is kept), a column of several numeric
    dtypes takes numpy's common one. The result's chunks are the frames' chunks (nothing
    is copied). Index columns must be the same in all (``ignore_index`` drops them)."""
    if axis not in (0, "index", "rows"):
        raise NotImplementedError("concat(axis=1): only rows are concatenated")
    if kwargs:
        raise NotImplementedError(f"concat({', '.join(kwargs)}=...)")
    if join not in ("outer", "inner"):
        raise ValueError(f"join={join!r}: give 'outer' or 'inner'")
    objs = list(objs)
    if not objs:
        raise ValueError("No objects to concatenate")
    if all(isinstance(o, Series) for o in objs):
        rows = [o._rows() for o in objs]
        index = [] if ignore_index else rows[0][1]
        if ignore_index:
            rows = [(f.drop(i) if i else f, [], n) for f, i, n in rows]
        elif any(i != index for _, i, _ in rows):
            raise NotImplementedError("concat of Series with different index columns (reset_index first)")
        if len({o.name for o in objs}) != 1:
            rows = [(f.rename([(n, "__ares_value")]), i, "__ares_value") for f, i, n in rows]
        return DataFrame(_frame=_native.frame_concat([f for f, _, _ in rows]), _index=index, _kind="series")
    if not all(isinstance(o, DataFrame) for o in objs):
        raise NotImplementedError("concat of frames with Series (give frames, or Series)")
    if ignore_index:
        objs = [o.reset_index(drop=True) for o in objs]
    index = objs[0]._index
    if any(o._index != index for o in objs):
        raise NotImplementedError("concat of frames with different index columns (reset_index first)")
    cols = [set(o._f.columns) for o in objs]
    if any(c != cols[0] for c in cols):
        if join == "inner":
            common = [c for c in objs[0]._f.columns if all(c in s for s in cols)]
            objs = [o._wrap(o._f.select(common), index) for o in objs]
        else:
            raise NotImplementedError(
                "concat of frames with different columns (pandas fills the missing ones with NaN): "
                "give them the same columns, or join='inner'"
            )
    return DataFrame(_frame=_native.frame_concat([o._f for o in objs]), _index=index)


def to_datetime(arg: Any, format: Optional[str] = None, **kwargs: Any) -> Any:
    """pandas' ``to_datetime``: a column of ISO 8601 strings (``2024-01-31``,
    ``2024-01-31 12:00:00``, ``2024-01-31T12:00:00.5``) or of dates becomes a lazy
    ``datetime64[ns]`` column (a text that is not a date fails the computation, as
    pandas raises); a datetime column stays itself. With ``utc=True`` the result is
    ``datetime64[ns, UTC]``: text with a UTC offset (``Z``, ``+05:30``) is read as its
    instant, text without one as UTC, naive datetimes as UTC. Anything else (one value, a list)
    is pandas' own ``to_datetime``."""
    if not isinstance(arg, Series):
        return _pandas().to_datetime(arg, format=format, **kwargs)
    if kwargs.pop("utc", False):
        # Instants in UTC: text's offsets applied, naive values read as UTC, aware ones
        # converted.
        if arg._base._f.expr_dtype(arg._e) == "object" and not kwargs and format in (None, "ISO8601"):
            e = arg._e.tz_read("UTC")
            arg._base._f.expr_dtype(e)
            return Series(arg._base, e, arg.name)
        out = to_datetime(arg, format=format, **kwargs)
        aware = _zone_of(out._base._f.expr_dtype(out._e)) is not None
        return out.dt.tz_convert("UTC") if aware else out.dt.tz_localize("UTC")
    if kwargs:
        raise NotImplementedError(f"to_datetime of a column with {', '.join(kwargs)}=...")
    if format not in (None, "ISO8601", "%Y-%m-%d", "%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S"):
        raise NotImplementedError(f"to_datetime(format={format!r}): columns parse ISO 8601 text only")
    native = arg._base._f.expr_dtype(arg._e)
    if native.startswith("datetime64[") and native != "datetime64[D]":
        return arg
    if native not in ("object", "datetime64[D]"):
        raise NotImplementedError(f"to_datetime of a {native} column (give text or dates)")
    return arg.astype("datetime64[ns]")


def read_csv(path: Any, sep: str = ",", dtype: Optional[Dict[str, Any]] = None,
             usecols: Optional[Sequence[str]] = None, chunk_bytes: int = 64 << 20,
             parse_dates: Optional[Sequence[str]] = None, **kwargs: Any) -> DataFrame:
    """A CSV file with a header line, read in byte ranges of ``chunk_bytes`` by worker
    tasks (pandas' NA strings are missing values; dtypes inferred from the first 10 000
    lines unless given in ``dtype``). Only the columns used downstream are parsed, and
    filters run in the reading tasks. ``parse_dates`` names columns of ISO 8601 text read
    as ``datetime64[ns]`` (see ``to_datetime``). A quoted field holding a newline cannot
    be split: give such a file a ``chunk_bytes`` larger than itself."""
    import os

    if kwargs:
        raise NotImplementedError(f"read_csv({', '.join(kwargs)}=...)")
    types = [(str(c), _dtype_name(t)) for c, t in (dtype or {}).items()]
    df = DataFrame(_frame=_native.read_csv(os.fspath(path), sep, types, int(chunk_bytes)))
    if parse_dates is not None:
        if isinstance(parse_dates, bool) or not all(isinstance(c, str) for c in parse_dates):
            raise NotImplementedError("parse_dates: give a list of column names")
        df = df.assign(**{c: to_datetime(df[c]) for c in parse_dates})
    if usecols is None:
        return df
    df[list(usecols)]  # raises KeyError naming a column the file does not have
    # In the file's order, as pandas' usecols.
    return df[[c for c in df.columns if c in set(usecols)]]


def read_parquet(path: Any, columns: Optional[Sequence[str]] = None, **kwargs: Any) -> DataFrame:
    """A Parquet file, a chunk per row group read by a worker task. Only the columns used
    downstream are read (their column chunks alone), and filters run in the reading
    tasks.

    Differs from pandas: ``decimal(p, s)`` columns are read as ``float64`` (pandas with
    pyarrow makes ``object`` columns of exact ``Decimal`` values), 8- and 16-bit integers
    as 32-bit ones. A column of a type frames do not hold (lists, structs, binary,
    times of day, timestamps in an unknown time zone, …) raises ``TypeError`` naming it and its type unless
    ``columns=`` leaves it out."""
    import os

    if kwargs:
        raise NotImplementedError(f"read_parquet({', '.join(kwargs)}=...)")
    cols = list(columns) if columns is not None else None
    df = DataFrame(_frame=_native.read_parquet(os.fspath(path), cols))
    return df[cols] if cols is not None else df
