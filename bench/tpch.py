"""TPC-H's 22 queries on Ares frames, DuckDB, polars and pandas in one run (JSON lines).

    OUT=bench/results/$(date +%Y%m%d-%H%M)-tpch-sf1 && mkdir -p $OUT
    python bench/tpch.py --scale 1 --repeats 3 > $OUT/tpch.jsonl

The data is made once by ``tpchgen-cli`` (Parquet, decimals and dates as generated) under
``--data``. Every engine's answer to every query is checked against DuckDB's; a wrong
answer stops the run. What each engine does in a query's time:

- Ares: the pandas-style queries of ``python/tests/tpch_queries.py`` on
  ``ad.read_parquet`` frames, reading the Parquet files inside each query (only the
  columns a query uses), answer fetched as pandas;
- DuckDB: the specification's SQL (``python/tests/tpch_sql.py``) over Parquet views,
  reading inside each query, answer as pandas (``.df()``);
- polars: the same SQL through ``polars.SQLContext`` over ``scan_parquet``;
- pandas (``pandas``): the same pandas-style queries, reading the Parquet files inside
  each query as Ares and DuckDB do, only the columns the query names (found in its
  source), decimals cast to float64 as Ares reads them and dates to datetime64;
- pandas in memory (``pandas-mem``): the same queries on tables loaded once before
  timing: no reading in its time, less work than every other engine does.

Each engine gets the machine's 2 CPUs (DuckDB ``threads``, ``POLARS_MAX_THREADS``, Ares
``num_cpus``); pandas uses one. Lines: one per (query, engine) with the median of the
repeats, then one total per engine (sum of the medians) and the ratios to DuckDB and pandas.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "python" / "tests"))

TABLES = ("lineitem", "orders", "customer", "part", "partsupp", "supplier", "nation", "region")


def emit(**fields) -> None:
    print(json.dumps(fields), flush=True)


def generate(data: Path, scale: float) -> Path:
    out = data / f"sf{scale:g}"
    if not all((out / f"{t}.parquet").exists() for t in TABLES):
        out.mkdir(parents=True, exist_ok=True)
        gen = Path(sys.executable).parent / "tpchgen-cli"
        subprocess.run([str(gen), "parquet", "-s", str(scale), f"--output-dir={out}"], check=True)
    return out


def timed(run, repeats: int):
    """The median of ``repeats`` runs' seconds, every run's, and the last answer."""
    times, answer = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        answer = run()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), times, answer


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--data", type=Path, default=HERE.parent / "target" / "tpch")
    ap.add_argument("--engines", default="duckdb,ares,polars,pandas,pandas-mem")
    ap.add_argument("--queries", default="1-22", help="such as 1-22 or 3,5,9")
    ap.add_argument("--store", default="8G", help="Ares' object store size")
    args = ap.parse_args()
    if "-" in args.queries:
        lo, hi = args.queries.split("-")
        queries = list(range(int(lo), int(hi) + 1))
    else:
        queries = [int(q) for q in args.queries.split(",")]
    engines = args.engines.split(",")
    os.environ.setdefault("POLARS_MAX_THREADS", "2")

    import duckdb
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq
    from tpch_queries import QUERIES, assert_same, normal
    from tpch_sql import SQL

    path = generate(args.data, args.scale)
    con = duckdb.connect()
    con.execute("set threads = 2")
    for t in TABLES:
        con.execute(f"create view {t} as select * from read_parquet('{path / t}.parquet')")
    want = {q: normal(con.execute(SQL[q]).df()) for q in queries}

    def as_frame(r):
        if hasattr(r, "fetch") and hasattr(r, "columns"):
            return r.fetch()
        if isinstance(r, pd.DataFrame):
            return r
        return pd.DataFrame({"value": [float(r)]})

    runners = {}
    if "duckdb" in engines:
        runners["duckdb"] = lambda q: con.execute(SQL[q]).df()
    if "ares" in engines:
        import ares
        import ares.dataframe as ad

        ares.init(num_cpus=2, object_store_memory=args.store)
        runners["ares"] = lambda q: as_frame(QUERIES[q](lambda n: ad.read_parquet(path / f"{n}.parquet")))
    if "polars" in engines:
        import polars as pl

        ctx = pl.SQLContext({t: pl.scan_parquet(path / f"{t}.parquet") for t in TABLES})
        runners["polars"] = lambda q: ctx.execute(SQL[q]).collect().to_pandas()
    def pandas_table(t, columns=None):
        tab = pq.read_table(path / f"{t}.parquet", columns=columns)
        # As Ares reads them: decimals as float64, dates as datetime64 (pyarrow would
        # make objects of datetime.date, which pandas cannot compare with a Timestamp).
        schema = pa.schema([pa.field(f.name, pa.float64()) if pa.types.is_decimal(f.type)
                            else pa.field(f.name, pa.timestamp("ms")) if pa.types.is_date32(f.type) else f
                            for f in tab.schema])
        return tab.cast(schema).to_pandas()

    if "pandas" in engines:
        import inspect
        import re

        # The columns each query names, per table (TPC-H's column names carry their
        # table's prefix, so a name found in the source belongs to one table).
        used = {}
        for q in queries:
            words = set(re.findall(r"\b[a-z]+_[a-z]+\b", inspect.getsource(QUERIES[q])))
            used[q] = {t: [c for c in pq.read_schema(path / f"{t}.parquet").names if c in words] for t in TABLES}

        def pandas_run(q):
            return as_frame(QUERIES[q](lambda n: pandas_table(n, used[q][n] or None)))

        runners["pandas"] = pandas_run
    if "pandas-mem" in engines:
        tables = {t: pandas_table(t) for t in TABLES}
        runners["pandas-mem"] = lambda q: as_frame(QUERIES[q](lambda n: tables[n]))

    totals = {}
    for engine, run in runners.items():
        total = 0.0
        for q in queries:
            median, times, answer = timed(lambda: run(q), args.repeats)
            assert_same(normal(answer), want[q])
            emit(bench=f"tpch_q{q}", engine=engine, scale=args.scale, value=median, unit="s", runs=times,
                 checked="same answer as DuckDB's SQL")
            total += median
        totals[engine] = total
        emit(bench="tpch_total", engine=engine, scale=args.scale, value=total, unit="s", queries=len(queries))
    for base in ("duckdb", "pandas", "pandas-mem"):
        if "ares" in totals and base in totals:
            emit(bench=f"tpch_ares_over_{base}", value=totals["ares"] / totals[base], unit="x")


if __name__ == "__main__":
    main()
