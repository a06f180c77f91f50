"""PERCENTILE: the 10th, 50th and 90th percentiles of 4·10⁸ uniform float64, by ares
(a computed tensor: selection, see docs/guide/python.md) or numpy (np.percentile, which
partitions); one JSON line, the median of `--repeats` runs, generation excluded, each
result checked (uniform data: each percentile within 1e-3 of its q)."""

import argparse
import json
import time

import numpy as np

p = argparse.ArgumentParser()
p.add_argument("--engine", choices=["ares", "numpy"], required=True)
p.add_argument("--n", type=int, default=400_000_000)
p.add_argument("--repeats", type=int, default=3)
args = p.parse_args()
q = [10, 50, 90]
walls = []
for r in range(args.repeats):
    if args.engine == "numpy":
        a = np.random.default_rng(r).random(args.n)
        t = time.perf_counter()
        v = np.percentile(a, q)
    else:
        import ares.tensor as at

        a = at.random.rand(args.n, chunk_size=10_000_000, seed=r).execute()
        t = time.perf_counter()
        v = at.percentile(a, q).fetch()
    walls.append(time.perf_counter() - t)
    assert np.allclose(v, np.array(q) / 100, atol=1e-3), v
    del a
walls.sort()
print(json.dumps({"bench": "PERCENTILE", "engine": args.engine, "n": args.n, "value": walls[len(walls) // 2], "unit": "s", "runs": walls}))
