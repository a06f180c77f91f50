"""Integer-array (fancy) indexing, take, take_along_axis and item assignment against
numpy: random shapes, chunkings and positions (negative ones too); the random functions
built on gathers (choice, permutation, shuffle)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from test_numpy_parity import check, chunkings, make

import ares.tensor as at

small_shapes = st.lists(st.integers(1, 7), min_size=1, max_size=3).map(tuple)


@st.composite
def tensors(draw, shape_strategy=small_shapes):
    shape = draw(shape_strategy)
    x = draw(arrays(np.int64, shape, elements=st.integers(-1000, 1000)))
    return x, make(x, draw(chunkings(shape)))


@st.composite
def positions(draw, n, max_len=6):
    return draw(st.lists(st.integers(-n, n - 1), min_size=0, max_size=max_len))


@given(tensors(), st.data())
def test_take_and_a_single_array_index_match_numpy(xt, data):
    x, t = xt
    axis = data.draw(st.integers(0, x.ndim - 1))
    pos = data.draw(positions(x.shape[axis]))
    idx = np.array(pos, dtype=np.int64)
    check(at.take(t, idx, axis=axis), np.take(x, idx, axis=axis))
    if axis == 0:
        check(t[idx], x[idx])
    index = tuple([slice(None)] * axis + [pos])
    check(t[index], x[index])
    flat = data.draw(positions(x.size))
    check(at.take(t, np.array(flat, dtype=np.int64)), np.take(x, np.array(flat, dtype=np.int64)))


@given(tensors(st.lists(st.integers(2, 6), min_size=3, max_size=3).map(tuple)), st.data())
def test_arrays_with_integers_and_slices_place_dimensions_as_numpy(xt, data):
    x, t = xt
    p = data.draw(positions(x.shape[2], 4))
    q = data.draw(positions(x.shape[1], 4))
    for index in [(0, slice(None), p), (slice(None), 1, p), (Ellipsis, p), (slice(1, None), q, slice(None, None, -1)), (np.int64(1), q)]:
        check(t[index], x[index])


@given(tensors(st.lists(st.integers(1, 6), min_size=2, max_size=3).map(tuple)), st.data())
def test_several_arrays_on_leading_axes_and_a_row_mask(xt, data):
    x, t = xt
    k = data.draw(st.integers(2, x.ndim))
    n = data.draw(st.integers(0, 5))
    idx = tuple(np.array(data.draw(st.lists(st.integers(-d, d - 1), min_size=n, max_size=n)), dtype=np.int64) for d in x.shape[:k])
    check(t[idx], x[idx])
    rows = np.array(data.draw(st.lists(st.booleans(), min_size=x.shape[0], max_size=x.shape[0])))
    check(t[rows], x[rows], lazy_shape=False)


@given(tensors(), st.data())
def test_take_along_axis_with_argsort_sorts(xt, data):
    x, t = xt
    axis = data.draw(st.integers(0, x.ndim - 1))
    order = at.argsort(t, axis=axis)
    check(at.take_along_axis(t, order, axis=axis), np.take_along_axis(x, np.argsort(x, axis=axis, kind="stable"), axis=axis))


def test_out_of_bounds_positions_raise_index_error():
    t = at.arange(10, chunk_size=3)
    with pytest.raises(IndexError, match="out of bounds"):
        t[[1, 10]].fetch()
    with pytest.raises(IndexError, match="out of bounds"):
        at.ones((3, 4))[[0, 1], [2, 4]].fetch()
    with pytest.raises(IndexError):
        at.take(t, np.array([0.5]))


@given(tensors(), st.data())
def test_item_assignment_matches_numpy(xt, data):
    x, t = xt
    want = x.copy()
    kind = data.draw(st.sampled_from(["mask", "basic", "rows", "box"]))
    if kind == "mask":
        m = x > data.draw(st.integers(-1000, 1000))
        t[m] = 7
        want[m] = 7
    elif kind == "rows":
        rows = data.draw(positions(x.shape[0]))
        t[rows] = -3
        want[rows] = -3
    else:
        index = tuple(
            data.draw(st.one_of(st.integers(-n, n - 1), st.builds(slice, st.none() | st.integers(-n, n), st.none() | st.integers(-n, n), st.sampled_from([None, 1, 2, -1]) if kind == "basic" else st.just(None))))
            for n in x.shape
        )
        value = 5 if kind == "basic" else np.arange(want[index].size, dtype=np.int64).reshape(want[index].shape)
        t[index] = value
        want[index] = value
    check(t, want)


def test_assignment_casts_as_numpy_and_keeps_earlier_results():
    x = np.arange(6, dtype=np.int32)
    t = at.tensor(x, chunk_size=4)
    before = t + 0
    t[1:3] = 2.9
    want = x.copy()
    want[1:3] = 2.9
    check(t, want)
    check(before, x)
    with pytest.raises(OverflowError):
        t[0] = 2**40


def test_random_gathers_are_permutations_and_choices():
    p = at.random.permutation(1000, chunk_size=128, seed=3).fetch()
    assert sorted(p.tolist()) == list(range(1000))
    np.testing.assert_array_equal(p, at.random.permutation(1000, chunk_size=50, seed=3).fetch())
    x = at.arange(20, chunk_size=7) * 10
    got = at.random.permutation(x, seed=1).fetch()
    assert sorted(got.tolist()) == list(range(0, 200, 10))
    c = at.random.choice(x, size=(4, 5), seed=2).fetch()
    assert c.shape == (4, 5) and set(c.ravel().tolist()) <= set(range(0, 200, 10))
    w = at.random.choice(5, size=2000, p=[0.0, 0.5, 0.0, 0.5, 0.0], seed=4).fetch()
    assert set(w.tolist()) <= {1, 3} and 800 < (w == 1).sum() < 1200
    u = at.random.choice(50, size=50, replace=False, seed=5).fetch()
    assert sorted(u.tolist()) == list(range(50))
    s = at.arange(30, chunk_size=8)
    at.random.shuffle(s, seed=6)
    assert sorted(s.fetch().tolist()) == list(range(30))
    e = at.random.exponential(2.0, size=20000, seed=7).fetch()
    assert (e >= 0).all() and 1.9 < e.mean() < 2.1
    with pytest.raises(ValueError):
        at.random.choice(3, size=4, replace=False)


@given(st.data())
def test_integer_arrays_and_integers_on_any_axes_match_numpy(data):
    x = np.arange(60).reshape(3, 4, 5)
    t = at.tensor(x, chunk_size=data.draw(st.sampled_from([2, 3, 5])))
    index = []
    for n in x.shape:
        kind = data.draw(st.sampled_from(["array", "int", "slice"]))
        if kind == "array":
            shape = data.draw(st.sampled_from([(2,), (1, 2), (2, 1)]))
            index.append(data.draw(arrays(np.int64, shape, elements=st.integers(-n, n - 1))))
        elif kind == "int":
            index.append(data.draw(st.integers(-n, n - 1)))
        else:
            index.append(slice(data.draw(st.integers(0, n)), None, data.draw(st.sampled_from([1, 2, -1]))))
    index = tuple(index)
    try:
        want = x[index]
    except IndexError:
        return  # numpy's broadcast of the arrays failed; ours must too, checked elsewhere
    check(t[index], want)


def test_boolean_scalars_masks_in_hand_and_strided_assignment():
    x = np.arange(24.0).reshape(2, 3, 4)
    t = at.tensor(x, chunk_size=2)
    check(t[True], x[True])
    check(t[False], x[False])
    check(t[np.True_], x[np.True_])
    m = x[:, :, 0] % 8 == 0
    got = t[m]
    assert got.shape == x[m].shape  # a mask in hand: the length is known before computing
    check(got, x[m])
    np.testing.assert_array_equal(t[at.tensor(m)].fetch(), x[m])  # known once computed
    z = at.tensor(5.0)
    z[at.tensor(False)] = 1.0
    assert z.fetch() == 5.0
    z[at.tensor(True)] = 2.0
    assert z.fetch() == 2.0
    y = at.tensor(np.zeros((4, 6)), chunk_size=3)
    w = np.zeros((4, 6))
    y[1:4:2, ::-2] = np.arange(6.0).reshape(2, 3)
    w[1:4:2, ::-2] = np.arange(6.0).reshape(2, 3)
    y[m[0][:2].repeat(2)] = np.arange(6.0)
    w[m[0][:2].repeat(2)] = np.arange(6.0)
    check(y, w)
    e = at.tensor(np.zeros((1, 4), bool))
    e[0, :0:2] = at.tensor(np.zeros(0, bool))
    check(e, np.zeros((1, 4), bool))


def test_assignment_out_of_bounds_raises_as_numpy():
    x = at.zeros((3, 4))
    for index, value in [(5, [1.0, 2.0, 3.0, 4.0]), (-4, 1.0), ((0, 9), 1.0), ([5], 1.0), ([-4], 1.0)]:
        with pytest.raises(IndexError):
            x[index] = value
    y = at.zeros(3)
    y[at.tensor(np.array([5]))] = 1.0
    with pytest.raises(IndexError):
        y.fetch()
    with pytest.raises(NotImplementedError):
        x[0, True] = 5.0
    with pytest.raises(IndexError):
        x[1.0] = 1.0
    check(x, np.zeros((3, 4)))


def test_masks_among_other_indices_are_their_positions():
    x = np.arange(24.0).reshape(2, 3, 4)
    t = at.tensor(x, chunk_size=2)
    m = np.array([True, False, True])
    for index in [(slice(None), m), (slice(None), m, 1), (0, m, slice(1, 3)), (slice(None), [True, False, True]), (..., np.array([True, False, False, True]))]:
        check(t[index], x[index])
    check(t[[True, False]], x[[True, False]])
    check(t[(np.array([True, False]),)], x[(np.array([True, False]),)])
    np.testing.assert_array_equal(t[:, at.tensor(m)].fetch(), x[:, m])
    check(at.take(t, []), np.take(x, []))
