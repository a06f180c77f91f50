"""The Python API around tensors: sessions, conversions to numpy and Python values, repr,
operators with numpy arrays on the left, iteration. (The runtime is the session-wide one
of conftest.py; ``with ares.init(...)`` is not used here.)"""

from __future__ import annotations

import math
import time

import numpy as np
import numpy.testing as npt
import pytest

import ares
import ares.tensor as at


def test_runtime_is_running():
    assert ares.is_initialized()
    assert issubclass(ares.AresError, RuntimeError)


def test_init_twice_is_an_error():
    with pytest.raises(ares.AresError):
        ares.init(num_cpus=1)
    assert ares.is_initialized()


# ---------------------------------------------------------------- repr and description


def test_repr_shows_shape_dtype_and_chunks():
    t = at.ones((10, 4), chunk_size=(3, 4))
    r = repr(t)
    assert "shape=(10, 4)" in r
    assert "float64" in r
    assert "chunksize=(3, 4)" in r
    assert "chunks=4" in r
    r1 = repr(at.tensor(np.arange(10, dtype=np.int32), chunk_size=4))
    assert "shape=(10,)" in r1 and "int32" in r1 and "chunksize=(4,)" in r1 and "chunks=3" in r1
    r0 = repr(at.tensor(True))
    assert "shape=()" in r0 and "bool" in r0


def test_repr_does_not_compute():
    # 320 GB if it were computed: repr and the description only look at the expression.
    huge = (at.ones((200_000, 200_000), chunk_size=20_000) + 1).sum(axis=0)
    start = time.monotonic()
    r = repr(huge)
    assert time.monotonic() - start < 5
    assert "shape=(200000,)" in r and "float64" in r and "chunks=10" in r
    assert huge.shape == (200_000,)
    assert huge.chunks == ((20_000,) * 10,)


def test_repr_of_a_computed_tensor_shows_its_values_as_numpy_does():
    x = np.arange(12, dtype=np.int32).reshape(3, 4)
    t = at.tensor(x, chunk_size=2) * 1
    assert "tensor(" not in repr(t), "not computed: no values"
    t.execute()
    r = repr(t)
    assert r.splitlines()[0].startswith("ares.Tensor<shape=(3, 4)")
    assert r.split("\n", 1)[1] == np.array_repr(x).replace("array(", "tensor(").replace("\n      ", "\n       ")
    assert str(t) == str(x)
    # Large: elided as numpy elides, only the edges fetched, the real shape named.
    big = at.arange(10**6, chunk_size=10**5).reshape(1000, 1000).execute()
    want = np.arange(10**6).reshape(1000, 1000)
    assert str(big) == str(want)
    assert "shape=(1000, 1000)" in repr(big) and "..." in repr(big)
    assert np.array_repr(want).split("\n")[0][len("array(") :] == repr(big).split("\n")[1][len("tensor(") :]


def test_numpy_functions_build_tensors_or_name_what_is_missing():
    x = np.arange(12.0).reshape(3, 4)
    t = at.tensor(x, chunk_size=2)
    for got, want in [
        (np.concatenate([t, t]), np.concatenate([x, x])),
        (np.where(t > 3, t, 0), np.where(x > 3, x, 0)),
        (np.transpose(t), x.T),
        (np.linalg.norm(t), np.linalg.norm(x)) if hasattr(at.linalg, "norm") else (np.matmul(t, t.T), x @ x.T),
        (np.isclose(t, x + 1e-9), np.isclose(x, x + 1e-9)),
        (np.allclose(t, x), np.allclose(x, x)),
        (np.add.reduce(t, axis=1), np.add.reduce(x, axis=1)),
    ]:
        assert isinstance(got, at.Tensor), type(got)
        npt.assert_allclose(got.fetch(), want)
    assert np.shape(t) == (3, 4) and np.ndim(t) == 2 and np.size(t) == 12
    assert not np.array_equal(t, x[:2]) and bool(np.array_equal(t, x))
    for call, name in [(lambda: np.histogramdd(t), "numpy.histogramdd"), (lambda: np.einsum_path("ij,jk", t, t), "einsum_path"), (lambda: np.packbits(t > 1), "packbits")]:
        with pytest.raises(NotImplementedError, match=name) as e:
            call()
        assert isinstance(e.value, AttributeError)


def test_progress_shows_on_fetch_only_while_chunk_tasks_run(capsys):
    t = at.tensor(np.arange(40.0), chunk_size=4) * 5
    npt.assert_array_equal(t.fetch(show_progress=True), np.arange(40.0) * 5)
    assert "chunk tasks" in capsys.readouterr().err
    npt.assert_array_equal(t.fetch(show_progress=True), np.arange(40.0) * 5)
    assert capsys.readouterr().err == "", "nothing ran the second time"


def test_a_closed_session_names_itself_and_others_go_on():
    x = np.arange(6.0)
    with ares.new_session() as s:
        t = (at.tensor(x, chunk_size=2) + 1).execute()
        npt.assert_array_equal(t.fetch(), x + 1)
    assert s.closed and "closed" in repr(s)
    for call in (t.fetch, t.execute, lambda: s.fetch(at.ones(2)), t.tolist):
        with pytest.raises(ares.SessionClosedError, match=f"Session {s.id} closed"):
            call()
    assert repr(t).startswith("ares.Tensor<") and "tensor(" not in repr(t)
    # The tensor computes again where asked; the default session is a new one.
    other = ares.new_session()
    npt.assert_array_equal(t.fetch(session=other), x + 1)
    npt.assert_array_equal(t.fetch(), x + 1)
    assert ares.get_default_session() is other and not other.closed


def test_repr_of_a_mask_result_shows_an_unknown_length():
    t = at.tensor(np.arange(10.0), chunk_size=4)
    r = t[t > 3]
    assert "nan" in repr(r)
    assert math.isnan(r.shape[0]) and math.isnan(r.size)


def test_properties():
    x = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
    t = at.tensor(x, chunk_size=(1, 2, 4))
    assert t.shape == (2, 3, 4)
    assert t.ndim == 3
    assert t.size == 24
    assert t.dtype == np.int32
    assert t.itemsize == 4
    assert t.nbytes == 96
    assert t.chunks == ((1, 1), (2, 1), (4,))
    assert t.T.shape == (4, 3, 2)
    assert t.T.chunks == ((4,), (2, 1), (1, 1))


def test_tensors_are_not_hashable():
    with pytest.raises(TypeError):
        hash(at.ones(3))


# ---------------------------------------------------------------- sessions


def test_new_session_execute_then_fetch():
    x = np.arange(12.0).reshape(3, 4)
    a = at.tensor(x, chunk_size=2)
    b = a * 2 + 1
    sess = ares.new_session()
    assert ares.get_default_session() is sess
    out = sess.execute(a, b)
    assert isinstance(out, list) and len(out) == 2
    assert out[0] is a and out[1] is b
    assert sess.execute(b) is b
    got = sess.fetch(a)
    assert isinstance(got, np.ndarray)
    npt.assert_array_equal(got, x)
    ga, gb = sess.fetch(a, b)
    npt.assert_array_equal(ga, x)
    npt.assert_array_equal(gb, x * 2 + 1)
    npt.assert_array_equal(b.fetch(session=sess), x * 2 + 1)
    with sess as s:
        npt.assert_array_equal(s.fetch(b), x * 2 + 1)


def test_session_rejects_non_tensors():
    sess = ares.new_session()
    with pytest.raises(TypeError):
        sess.execute(np.ones(3))
    with pytest.raises(TypeError):
        sess.fetch([1, 2])


def test_execute_returns_the_tensor_and_fetch_gives_numpy():
    x = np.arange(10.0)
    t = at.tensor(x, chunk_size=3) ** 2
    assert t.execute() is t
    assert t.execute(show_progress=False) is t
    got = t.fetch()
    assert isinstance(got, np.ndarray) and got.dtype == np.float64
    npt.assert_array_equal(got, x**2)
    # Fetching again gives the same values.
    npt.assert_array_equal(t.fetch(), x**2)


def test_progress_line_on_request(capsys):
    t = at.tensor(np.arange(40.0), chunk_size=4) * 3
    t.execute(show_progress=True)
    err = capsys.readouterr().err
    assert "chunk tasks" in err
    npt.assert_array_equal(t.fetch(), np.arange(40.0) * 3)


def test_zero_d_result_is_a_zero_d_array():
    got = at.tensor(np.arange(5), chunk_size=2).sum().fetch()
    assert isinstance(got, np.ndarray) and got.shape == () and got.dtype == np.int64
    assert got == 10


# ---------------------------------------------------------------- conversions


def test_np_asarray_and_to_numpy():
    x = np.arange(12, dtype=np.int64).reshape(4, 3)
    t = at.tensor(x, chunk_size=(3, 2))
    a = np.asarray(t)
    assert isinstance(a, np.ndarray) and a.dtype == np.int64
    npt.assert_array_equal(a, x)
    f = np.asarray(t, dtype=np.float32)
    assert f.dtype == np.float32
    npt.assert_array_equal(f, x.astype(np.float32))
    npt.assert_array_equal(np.array(t), x)
    n = t.to_numpy()
    assert isinstance(n, np.ndarray)
    npt.assert_array_equal(n, x)
    # numpy functions take tensors through __array__.
    assert np.sum(np.asarray(t)) == x.sum()


def test_python_scalars_from_tensors():
    t = at.tensor(np.arange(10.0), chunk_size=3)
    s = float(t.sum())
    assert isinstance(s, float) and s == 45.0
    assert int(t.sum()) == 45
    assert bool(t.sum()) is True
    assert bool(t.min()) is False
    assert t.max().item() == 9.0
    assert isinstance(at.tensor(np.arange(4)).sum().item(), int)
    assert t.tolist() == list(np.arange(10.0))
    assert list(range(10))[at.tensor(np.int64(3))] == 3
    # As numpy: the truth value of many elements is ambiguous (ValueError); only
    # one-element tensors convert to a number (TypeError otherwise).
    with pytest.raises(ValueError):
        bool(t)
    with pytest.raises(TypeError):
        float(t)
    with pytest.raises(TypeError):
        int(t)


def test_tensor_of_a_tensor():
    t = at.tensor(np.arange(6.0), chunk_size=4)
    assert at.tensor(t) is t
    assert at.asarray(t) is t
    f = at.tensor(t, dtype=np.float32)
    assert f.dtype == np.float32
    r = at.tensor(t, chunk_size=2)
    assert r.chunks == ((2, 2, 2),)
    npt.assert_array_equal(r.fetch(), np.arange(6.0))
    l = at.array([[1, 2], [3, 4]])
    assert l.dtype == np.int64 and l.shape == (2, 2)
    npt.assert_array_equal(l.fetch(), [[1, 2], [3, 4]])


# ---------------------------------------------------------------- numpy operands


@pytest.mark.parametrize(
    "op",
    [
        lambda u, v: u + v,
        lambda u, v: u - v,
        lambda u, v: u * v,
        lambda u, v: u / v,
        lambda u, v: u**v,
        lambda u, v: u < v,
        lambda u, v: u >= v,
        lambda u, v: u == v,
        lambda u, v: u != v,
    ],
    ids=["add", "sub", "mul", "div", "pow", "lt", "ge", "eq", "ne"],
)
def test_numpy_array_on_the_left_gives_a_tensor(op):
    x = np.arange(1.0, 13.0).reshape(3, 4)
    y = np.linspace(0.5, 2.0, 4)
    t = at.tensor(y, chunk_size=3)
    r = op(x, t)
    assert isinstance(r, at.Tensor)
    expected = op(x, y)
    assert r.dtype == expected.dtype and r.shape == expected.shape
    npt.assert_allclose(r.fetch(), expected, rtol=1e-12)


def test_numpy_matrix_at_tensor():
    x = np.arange(6.0).reshape(2, 3)
    t = at.tensor(np.arange(12.0).reshape(3, 4), chunk_size=2)
    r = x @ t
    assert isinstance(r, at.Tensor)
    npt.assert_allclose(r.fetch(), x @ np.arange(12.0).reshape(3, 4))


def test_numpy_scalar_operands():
    t = at.tensor(np.arange(4, dtype=np.int64), chunk_size=3)
    r = np.int64(2) * t
    assert isinstance(r, at.Tensor)
    npt.assert_array_equal(r.fetch(), np.arange(4) * 2)
    r = t + np.float64(0.5)
    assert r.dtype == np.float64
    npt.assert_array_equal(r.fetch(), np.arange(4) + 0.5)


# ---------------------------------------------------------------- iteration and len


def test_iteration_over_a_vector():
    x = np.arange(7.0) * 1.5
    t = at.tensor(x, chunk_size=3)
    assert len(t) == 7
    items = list(t)
    assert len(items) == 7
    for item, v in zip(items, x):
        assert isinstance(item, at.Tensor)
        assert item.shape == ()
        assert float(item) == v
    assert [float(v) for v in t] == x.tolist()


def test_iteration_over_a_matrix_gives_rows():
    x = np.arange(12).reshape(4, 3)
    t = at.tensor(x, chunk_size=(3, 2))
    rows = list(t)
    assert len(rows) == len(t) == 4
    for row, xr in zip(rows, x):
        assert row.shape == (3,)
        npt.assert_array_equal(row.fetch(), xr)


def test_len():
    assert len(at.ones((5, 2))) == 5
    assert len(at.zeros(0)) == 0
    with pytest.raises(TypeError):
        len(at.tensor(3.0))
    t = at.tensor(np.arange(10), chunk_size=3)
    m = t[t > 6]
    with pytest.raises(TypeError):
        len(m)  # the length is known only after it runs
    m.execute()
    assert len(m) == 3
    npt.assert_array_equal(m.fetch(), [7, 8, 9])


def test_numpy_names_not_built_here_raise_not_implemented_naming_them():
    t = at.ones((3, 3), chunk_size=2)
    for call, name in [
        (lambda: at.histogramdd(t), "histogramdd"),
        (lambda: t.partition(1), "partition"),
        (lambda: at.einsum_path("ij,jk", t, t), "einsum_path"),
        (lambda: at.random.zipf(2.0), "zipf"),
        (lambda: at.packbits(t > 1), "packbits"),
    ]:
        with pytest.raises(NotImplementedError, match=name):
            call()
    with pytest.raises(AttributeError):
        at.not_a_numpy_function
    with pytest.raises(AttributeError):
        t.not_an_ndarray_attribute
    assert at.pi == np.pi and np.isnan(at.nan) and at.inf == np.inf


def test_numpy_idioms_a_converted_program_uses():
    x = np.arange(12.0).reshape(3, 4)
    t = at.tensor(x, chunk_size=2)
    # numpy's functions on a tensor build tensors (__array_function__); one without a
    # tiled form raises naming it rather than computing in numpy on fetched data.
    assert isinstance(np.sum(t), at.Tensor) and isinstance(np.concatenate([t, x]), at.Tensor)
    assert float(np.sum(t)) == x.sum() and float(np.mean(t)) == x.mean()
    npt.assert_array_equal(np.where(t > 3, t, 0), np.where(x > 3, x, 0))
    with pytest.raises(NotImplementedError, match="numpy.histogramdd"):
        np.histogramdd(t)
    npt.assert_array_equal(np.partition(np.asarray(t), 1), np.partition(x, 1))
    # np.array(t) is a writable copy even when fetch() would be a view of the store.
    one = at.ones((4, 4), chunk_size=4) * 2
    a = np.array(one)
    a[0, 0] = 7
    assert a.flags.writeable and one.fetch()[0, 0] == 2
    # Formatting and rounding of 0-d results, indexing with a 0-d integer result.
    assert f"{t.mean():.2f}" == f"{x.mean():.2f}" and round(t.mean(), 1) == round(x.mean(), 1)
    assert float(t.ravel()[t.argmax()]) == x.max()
    # int @ float promotes as numpy does; an explicit reduction dtype is the result's.
    npt.assert_allclose((at.tensor(x.astype(np.int64)).T @ at.ones(3)).fetch(), x.T @ np.ones(3))
    assert at.tensor(x.astype(np.int32)).sum(dtype=np.int32).dtype == np.int32
    assert t.copy() is t and at.int_ is np.int64
    npt.assert_allclose(at.linalg.svd(t, compute_uv=False).fetch(), np.linalg.svd(x, compute_uv=False), atol=1e-9)


def test_a_mask_that_selects_nothing_has_no_minimum():
    x = at.tensor(np.array([1.0, 2.0, 3.0]), chunk_size=2)
    with pytest.raises(ValueError, match="no identity"):
        x[x > 5].max().fetch()
    assert float(x[x > 5].sum()) == 0.0


def test_python_ints_beyond_int32_do_not_wrap():
    # numpy 2: compared, they answer; in arithmetic they overflow (no silent wrap).
    x = at.tensor(np.arange(3, dtype=np.int32))
    npt.assert_array_equal((x > 2**32).fetch(), np.zeros(3, dtype=bool))
    with pytest.raises(OverflowError, match="out of bounds for int32"):
        x + 2**40


def test_linspace_ends_at_stop_and_floors_for_integer_dtypes():
    for start, stop, num in [(0, 1, 50), (0.1, 0.7, 7), (-1, 0, 3), (0, 1, 1), (3, -2, 11)]:
        npt.assert_array_equal(at.linspace(start, stop, num, chunk_size=4).fetch(), np.linspace(start, stop, num))
        for dt in (np.int64, np.int32):
            got = at.linspace(start, stop, num, dtype=dt, chunk_size=4).fetch()
            npt.assert_array_equal(got, np.linspace(start, stop, num, dtype=dt))
            assert got.dtype == dt
