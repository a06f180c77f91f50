"""np.sort of the SORT workload's size (uniform float64), the peer figure for
`ares-bench tensor --workloads SORT`: one JSON line, the median of `--repeats` runs
(generation excluded, as in ares' figure), the result checked for order and sum."""

import argparse
import json
import time

import numpy as np

p = argparse.ArgumentParser()
p.add_argument("--n", type=int, default=400_000_000)
p.add_argument("--repeats", type=int, default=3)
args = p.parse_args()
walls = []
for r in range(args.repeats):
    a = np.random.default_rng(r).random(args.n)
    t = time.perf_counter()
    s = np.sort(a)
    walls.append(time.perf_counter() - t)
    assert (s[1:] >= s[:-1]).all() and abs(s.sum() - a.sum()) <= 1e-9 * abs(a.sum())
    del a, s
walls.sort()
print(json.dumps({"bench": "SORT", "engine": "numpy", "value": walls[len(walls) // 2], "unit": "s", "runs": walls, "numpy": np.__version__}))
