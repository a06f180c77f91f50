"""np.fft.fft2 of the FFT2 workload's size (uniform float64, n × n), the peer figure for
`ares-bench tensor --workloads FFT2`: one JSON line, the median of `--repeats` runs
(generation excluded, as in ares' figure), each checked as ares' is (X[0,0] is the sum;
Parseval)."""

import argparse
import json
import time

import numpy as np

p = argparse.ArgumentParser()
p.add_argument("--n", type=int, default=8192)
p.add_argument("--repeats", type=int, default=3)
args = p.parse_args()
walls = []
for r in range(args.repeats):
    a = np.random.default_rng(r).random((args.n, args.n))
    t = time.perf_counter()
    x = np.fft.fft2(a)
    walls.append(time.perf_counter() - t)
    assert abs(x[0, 0].real - a.sum()) <= 1e-9 * a.sum()
    energy, want = (np.abs(x) ** 2).sum(), args.n * args.n * (a * a).sum()
    assert abs(energy - want) <= 1e-9 * want, (energy, want)
    del a, x
walls.sort()
print(json.dumps({"bench": "FFT2", "engine": "numpy", "n": args.n, "value": walls[len(walls) // 2], "unit": "s", "runs": walls, "numpy": np.__version__}))
