"""fetch() of a one-chunk result views the object store (zero copy), keeps the object
alive while the array lives, and frees it once both the tensor and the array are gone."""

import gc
import time

import numpy as np

import ares
import ares.tensor as at


def store_objects() -> int:
    return ares.node_stats()["store_objects"]


def settle(target: int) -> int:
    # Frees reach the store asynchronously: wait (bounded) for the count to come down.
    deadline = time.time() + 20
    while store_objects() > target and time.time() < deadline:
        time.sleep(0.02)
    return store_objects()


def quiet() -> int:
    """The store's count once earlier tests' frees have landed: garbage collected, then
    unchanged over ten reads in a row (bounded)."""
    gc.collect()
    deadline = time.time() + 20
    last, same = store_objects(), 0
    while same < 10 and time.time() < deadline:
        time.sleep(0.02)
        now = store_objects()
        last, same = now, (same + 1 if now == last else 0)
    return last


def test_one_chunk_result_is_a_read_only_view_of_the_store():
    base = quiet()
    # 8 MB in one chunk: stored in shared memory, not inline.
    t = (at.ones((1000, 1000), chunk_size=1000) * 2).execute()
    a, b = t.fetch(), t.fetch()
    assert np.shares_memory(a, b), "two fetches view the same stored bytes"
    assert not a.flags.writeable, "the view of a sealed object is read-only"
    np.testing.assert_array_equal(a, np.full((1000, 1000), 2.0))
    assert a.copy().flags.writeable
    assert store_objects() == base + 1

    # The arrays keep the object after the tensor is gone; it is freed after them.
    del t
    gc.collect()
    assert settle(base) == base + 1, "the arrays still view it"
    np.testing.assert_array_equal(b[-1], np.full(1000, 2.0))
    del a, b
    gc.collect()
    assert settle(base) == base


def test_a_result_of_several_chunks_is_an_array_of_its_own():
    t = at.arange(100, chunk_size=30)
    a, b = t.fetch(), t.fetch()
    assert not np.shares_memory(a, b)
    assert a.flags.writeable
    a[0] = 7  # numpy code that edits what it fetched keeps working
    np.testing.assert_array_equal(b, np.arange(100))
