"""TPC-H's 22 queries, written as a pandas user writes them (``tpch_queries.py``), on
Parquet data from ``tpchgen-cli`` with its decimal and date columns as generated: each
gives DuckDB's answer to the specification's SQL (``tpch_sql.py``)."""

from __future__ import annotations

import os
import subprocess
import sys

import duckdb
import pandas as pd
import pytest

import ares.dataframe as ad
from tpch_queries import QUERIES, assert_same, normal
from tpch_sql import SQL

TABLES = ("lineitem", "orders", "customer", "part", "partsupp", "supplier", "nation", "region")
SCALE = 0.1


@pytest.fixture(scope="module")
def tpch(tmp_path_factory):
    """The tables at ``SCALE`` and a DuckDB connection with a view of each."""
    out = tmp_path_factory.mktemp("tpch")
    gen = os.path.join(os.path.dirname(sys.executable), "tpchgen-cli")
    subprocess.run([gen, "parquet", "-s", str(SCALE), f"--output-dir={out}"], check=True, capture_output=True)
    con = duckdb.connect()
    for t in TABLES:
        con.execute(f"create view {t} as select * from read_parquet('{out / t}.parquet')")
    yield out, con
    con.close()


@pytest.mark.parametrize("q", sorted(QUERIES))
def test_query_gives_duckdbs_answer(tpch, q):
    path, con = tpch
    want = normal(con.execute(SQL[q]).df())
    assert len(want) > 0, "a query with an empty answer checks little: change its parameters"
    r = QUERIES[q](lambda name: ad.read_parquet(path / f"{name}.parquet"))
    got = pd.DataFrame({"value": [float(r)]}) if isinstance(r, ad.Scalar) else r.fetch()
    assert_same(normal(got), want)
