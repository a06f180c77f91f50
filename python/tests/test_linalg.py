"""numpy.linalg's determinants, symmetric eigenproblems, norms, least squares and
stacks of matrices, against numpy over random shapes and chunkings."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from test_numpy_parity import check, chunkings, make

import ares.tensor as at

finite = st.floats(-10, 10, allow_subnormal=False)


@st.composite
def square(draw, max_n=7, dtype=np.float64):
    n = draw(st.integers(1, max_n))
    a = draw(arrays(dtype, (n, n), elements=finite if dtype == np.float64 else st.integers(-9, 9)))
    return a, make(a, draw(chunkings((n, n))))


@given(square())
def test_det_and_slogdet_match_numpy(at_):
    a, t = at_
    want = np.linalg.det(a)
    # The determinant's error grows with the matrix's condition: scale by its norms.
    tol = 1e-9 * max(1.0, np.prod(np.linalg.norm(a, axis=1)))
    check(at.linalg.det(t), want, rtol=1e-7, atol=tol)
    sign, log = at.linalg.slogdet(t)
    ws, wl = np.linalg.slogdet(a)
    if abs(want) > tol:
        check(sign, ws)
        check(log, wl, rtol=1e-7, atol=1e-7)
    check(np.linalg.det(t), want, rtol=1e-7, atol=tol)


def test_det_of_integers_singular_and_float32():
    a = np.array([[2, 1, 0], [1, 3, 1], [0, 1, 4]])
    check(at.linalg.det(at.tensor(a, chunk_size=2)), np.linalg.det(a), rtol=1e-12)
    s = np.array([[1.0, 2.0], [2.0, 4.0]])
    sign, log = at.linalg.slogdet(at.tensor(s, chunk_size=1))
    assert sign.fetch() == 0 and log.fetch() == -np.inf
    f = np.array([[1.5, 2.0], [0.5, 3.0]], dtype=np.float32)
    d = at.linalg.det(at.tensor(f))
    assert d.dtype == np.float32
    check(d, np.linalg.det(f), rtol=1e-6)
    with pytest.raises(np.linalg.LinAlgError):
        at.linalg.det(at.ones((2, 3)))


@given(square(max_n=8), st.sampled_from(["L", "U"]))
def test_eigh_diagonalises_the_triangle_it_reads(at_, uplo):
    a, _ = at_
    n = a.shape[0]
    sym = np.tril(a) + np.tril(a, -1).T if uplo == "L" else np.triu(a) + np.triu(a, 1).T
    t = at.tensor(a)
    w, v = at.linalg.eigh(t, UPLO=uplo)
    ww, vv = w.fetch(), v.fetch()
    np.testing.assert_allclose(ww, np.linalg.eigvalsh(sym), rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(sym @ vv, vv * ww, atol=1e-8)
    np.testing.assert_allclose(vv.T @ vv, np.eye(n), atol=1e-9)
    check(at.linalg.eigvalsh(t, UPLO=uplo), np.linalg.eigvalsh(a, UPLO=uplo), rtol=1e-9, atol=1e-9)


@given(st.data())
def test_stacks_of_matrices_are_taken_one_by_one(data):
    stack = tuple(data.draw(st.lists(st.integers(0, 3), min_size=1, max_size=2)))
    n = data.draw(st.integers(1, 4))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    a = rng.standard_normal(stack + (n, n)) + 4 * np.eye(n)
    t = make(a, data.draw(chunkings(a.shape)))
    check(at.linalg.det(t), np.linalg.det(a), rtol=1e-8, atol=1e-8)
    check(at.linalg.inv(t), np.linalg.inv(a), rtol=1e-8, atol=1e-8)
    b = rng.standard_normal(stack + (n, 2))
    check(at.linalg.solve(t, make(b, data.draw(chunkings(b.shape)))), np.linalg.solve(a, b), rtol=1e-7, atol=1e-8)
    bv = rng.standard_normal(n)
    check(at.linalg.solve(t, at.tensor(bv)), np.linalg.solve(a, bv), rtol=1e-7, atol=1e-8)
    spd = a @ np.swapaxes(a, -1, -2)
    check(at.linalg.cholesky(make(spd, data.draw(chunkings(spd.shape)))), np.linalg.cholesky(spd), rtol=1e-7, atol=1e-8)
    check(at.linalg.svd(t, compute_uv=False), np.linalg.svd(a, compute_uv=False), rtol=1e-8, atol=1e-8)
    check(at.linalg.matrix_norm(t, ord="nuc"), np.linalg.matrix_norm(a, ord="nuc"), rtol=1e-8, atol=1e-8)
    check(at.linalg.eigvalsh(make(spd, data.draw(chunkings(spd.shape)))), np.linalg.eigvalsh(spd), rtol=1e-8, atol=1e-8)
    q, r = at.linalg.qr(t)
    np.testing.assert_allclose((q @ r).fetch(), a, atol=1e-9)


@given(st.data())
def test_norm_takes_every_order_and_axis_numpy_does(data):
    shape = tuple(data.draw(st.lists(st.integers(1, 5), min_size=1, max_size=3)))
    x = data.draw(arrays(np.float64, shape, elements=finite))
    t = make(x, data.draw(chunkings(shape)))
    tol = dict(rtol=1e-9, atol=1e-9)
    keep = data.draw(st.booleans())
    check(at.linalg.norm(t, keepdims=keep), np.linalg.norm(x, keepdims=keep), **tol)
    ax = data.draw(st.integers(-len(shape), len(shape) - 1))
    for ord in (None, 1, 2, np.inf, -np.inf, 0, 3):
        check(at.linalg.norm(t, ord=ord, axis=ax, keepdims=keep), np.linalg.norm(x, ord=ord, axis=ax, keepdims=keep), **tol)
    if len(shape) >= 2:
        pair = tuple(data.draw(st.permutations(range(len(shape))))[:2])
        for ord in (None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf):
            check(at.linalg.norm(t, ord=ord, axis=pair, keepdims=keep), np.linalg.norm(x, ord=ord, axis=pair, keepdims=keep), **tol)
    if len(shape) == 2:
        check(at.linalg.norm(t, ord=1), np.linalg.norm(x, ord=1), **tol)


def test_lstsq_cond_multi_dot_and_tensor_solves():
    rng = np.random.default_rng(5)
    a = rng.standard_normal((9, 3))
    b = rng.standard_normal((9, 2))
    x, res, rank, s = at.linalg.lstsq(at.tensor(a, chunk_size=4), at.tensor(b, chunk_size=4))
    wx, wres, wrank, ws = np.linalg.lstsq(a, b)
    check(x, wx, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(res.fetch(), wres, rtol=1e-9)
    assert int(rank.fetch()) == wrank
    check(s, ws, rtol=1e-9)
    low = np.column_stack([a[:, 0], a[:, 0], a[:, 1]])
    x, res, rank, _ = at.linalg.lstsq(at.tensor(low, chunk_size=4), at.tensor(b[:, 0]))
    assert int(rank.fetch()) == 2 and res.fetch().shape == (0,)
    check(x, np.linalg.lstsq(low, b[:, 0])[0], rtol=1e-8, atol=1e-9)
    sq = rng.standard_normal((5, 5)) + 3 * np.eye(5)
    for p in (None, 2, -2, 1, -1, np.inf, "fro", "nuc"):
        check(at.linalg.cond(at.tensor(sq, chunk_size=2), p), np.linalg.cond(sq, p), rtol=1e-8)
    mats = [rng.standard_normal(s) for s in [(4,), (4, 7), (7, 2), (2, 6), (6,)]]
    check(at.linalg.multi_dot([at.tensor(m, chunk_size=3) for m in mats]), np.linalg.multi_dot(mats), rtol=1e-9)
    check(at.linalg.multi_dot([at.tensor(m) for m in mats[1:4]]), np.linalg.multi_dot(mats[1:4]), rtol=1e-9)
    t4 = (np.eye(6) * 3 + rng.standard_normal((6, 6))).reshape(6, 2, 3)
    check(at.linalg.tensorinv(at.tensor(t4), ind=1), np.linalg.tensorinv(t4, ind=1), rtol=1e-8, atol=1e-9)
    rhs = rng.standard_normal(6)
    check(at.linalg.tensorsolve(at.tensor(t4), at.tensor(rhs)), np.linalg.tensorsolve(t4, rhs), rtol=1e-8, atol=1e-9)
    moved = np.moveaxis(t4, 0, 2).copy()
    check(at.linalg.tensorsolve(at.tensor(moved), at.tensor(rhs), axes=(0, 1)), np.linalg.tensorsolve(moved, rhs, axes=(0, 1)), rtol=1e-8, atol=1e-9)
    with pytest.raises(np.linalg.LinAlgError):
        at.linalg.tensorsolve(at.tensor(moved), at.tensor(rhs))


def test_stacked_tolerances_cholesky_upper_and_powers():
    rng = np.random.default_rng(8)
    a = rng.standard_normal((3, 4, 4))
    a[1, :, 3] = a[1, :, 0]  # rank 3
    t = at.tensor(a, chunk_size=2)
    rtol = np.array([1e-12, 1e-12, 0.5])
    check(at.linalg.matrix_rank(t, rtol=rtol), np.linalg.matrix_rank(a, rtol=rtol))
    check(at.linalg.matrix_rank(t), np.linalg.matrix_rank(a))
    check(at.linalg.pinv(t), np.linalg.pinv(a), rtol=1e-6, atol=1e-6)
    check(at.linalg.pinv(t, rtol=at.tensor(rtol)), np.linalg.pinv(a, rtol=rtol), rtol=1e-6, atol=1e-6)
    spd = a @ np.swapaxes(a, -1, -2) + 4 * np.eye(4)
    check(at.linalg.cholesky(at.tensor(spd), upper=True), np.linalg.cholesky(spd, upper=True), rtol=1e-9, atol=1e-9)
    check(at.linalg.matrix_power(at.tensor(spd), -2), np.linalg.matrix_power(spd, -2), rtol=1e-7, atol=1e-9)
    assert at.linalg.matrix_power(at.zeros((0, 2, 2)), 3).shape == (0, 2, 2)


def test_pinv_cutoffs_are_numpys():
    a = np.diag([1.0, 5e-16])
    check(at.linalg.pinv(at.tensor(a)), np.linalg.pinv(a))
    check(at.linalg.pinv(at.tensor(a), rtol=None), np.linalg.pinv(a, rtol=None))
    check(at.linalg.pinv(at.tensor(a), rcond=1e-20), np.linalg.pinv(a, rcond=1e-20))


@given(st.integers(1, 6), st.integers(1, 6), st.sampled_from([np.float64, np.float32, np.complex128]), st.data())
def test_full_svd_completes_both_bases_as_numpy(m, n, dtype, data):
    rng = np.random.default_rng(m * 10 + n)
    a = rng.normal(size=(m, n))
    if np.dtype(dtype).kind == "c":
        a = a + 1j * rng.normal(size=(m, n))
    a = a.astype(dtype)
    u, s, vh = at.linalg.svd(make(a, data.draw(chunkings((m, n)))))
    want_u, want_s, want_vh = np.linalg.svd(a)
    tol = 1e-4 if dtype == np.float32 else 1e-9
    assert u.shape == want_u.shape and vh.shape == want_vh.shape
    check(s, want_s, rtol=tol, atol=tol)
    uu, vv = u.fetch(), vh.fetch()
    assert u.dtype == want_u.dtype and vh.dtype == want_vh.dtype and s.dtype == want_s.dtype
    # Bases are unique only up to phases (and completions): check the identities instead.
    np.testing.assert_allclose(uu.conj().T @ uu, np.eye(m), atol=tol * 10)
    np.testing.assert_allclose(vv @ vv.conj().T, np.eye(n), atol=tol * 10)
    sigma = np.zeros((m, n), dtype=want_s.dtype)
    sigma[np.arange(min(m, n)), np.arange(min(m, n))] = s.fetch()
    np.testing.assert_allclose(uu @ sigma @ vv, a, atol=tol * 10)


@given(st.integers(1, 6), st.sampled_from([np.float64, np.float32, np.complex128]), st.data())
def test_eig_of_a_general_matrix_satisfies_its_definition(n, dtype, data):
    rng = np.random.default_rng(n)
    a = rng.normal(size=(n, n))
    if np.dtype(dtype).kind == "c":
        a = a + 1j * rng.normal(size=(n, n))
    a = a.astype(dtype)
    w, v = at.linalg.eig(make(a, data.draw(chunkings((n, n)))))
    want = np.complex64 if dtype == np.float32 else np.complex128
    assert w.dtype == want and v.dtype == want, "always complex, as the Array API's eig"
    tol = 1e-3 if dtype == np.float32 else 1e-8
    ww, vv = w.fetch(), v.fetch()
    # Eigenvalues in any order: compare sorted; eigenvectors by A v = w v and unit norm.
    npt_w = np.sort_complex(np.linalg.eigvals(a).astype(np.complex128))
    np.testing.assert_allclose(np.sort_complex(ww.astype(np.complex128)), npt_w, rtol=tol, atol=tol)
    np.testing.assert_allclose(a @ vv, vv * ww[None, :], rtol=tol, atol=tol * 10)
    np.testing.assert_allclose(np.linalg.norm(vv, axis=0), 1.0, rtol=tol)
    check(at.linalg.eigvals(make(a, (n, n))), ww, rtol=tol, atol=tol)
