"""numpy's single-threaded OpenBLAS GEMM on n x n float64, the peer of `ares-bench gemm`.

Prints one JSON line like ares-bench: value is the median seconds of `a @ b`.
"""
import os
import sys

os.environ["OPENBLAS_NUM_THREADS"] = "1"  # before numpy loads OpenBLAS
os.environ["OMP_NUM_THREADS"] = "1"
import json  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 7
rng = np.random.default_rng(0)
a, b = rng.random((n, n)), rng.random((n, n))
a @ b  # warm-up
runs = []
for _ in range(repeats):
    t = time.perf_counter()
    a @ b
    runs.append(time.perf_counter() - t)
med = sorted(runs)[len(runs) // 2]
print(json.dumps({"bench": "gemm", "engine": "numpy-1thread", "n": n, "value": med, "unit": "s",
                  "gflops": 2 * n**3 / med / 1e9, "runs": runs, "numpy": np.__version__}))
