"""Shared set-up for the ``ares`` Python tests.

One embedded cluster (two CPUs, a 512 MiB object store) serves the whole test session:
``ares.init`` may run only once per process, and starting workers per test would be
slow. Hypothesis runs a fixed number of examples from a seed derived from each test, so
a run is the same every time (CI never flakes on a newly drawn example); set
``HYPOTHESIS_MAX_EXAMPLES`` to run more (or fewer) examples per test.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

import ares

settings.register_profile(
    "ares",
    deadline=None,
    max_examples=int(os.environ.get("HYPOTHESIS_MAX_EXAMPLES", "25")),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=True,
    # With derandomize, a saved failing example would be replayed on the next run and
    # make runs differ: keep no database.
    database=None,
    print_blob=True,
)
settings.load_profile("ares")


@pytest.fixture(scope="session", autouse=True)
def ares_runtime():
    """The embedded runtime every test computes in, stopped when the session ends."""
    ares.init(num_cpus=2, object_store_memory="512M")
    try:
        yield
    finally:
        ares.shutdown()
