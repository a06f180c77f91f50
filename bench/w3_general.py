#!/usr/bin/env python3
"""numpy's W3_general beside `ares-bench tensor --workloads W3G`: (a @ b.T - a).std() with
a and b two different 5000 x 5000 random float64 matrices, so no engine can use the
symmetry of a @ a.T (numpy's syrk; Ares' upper-triangle blocks). Timing covers data
generation and compute, as tensor_workloads.py does; one JSON line per run set.
Usage: python w3_general.py [--n 5000] [--repeats 3] [--out file.jsonl]"""
import argparse, json, statistics, time

import numpy as np

ap = argparse.ArgumentParser()
ap.add_argument("--n", type=int, default=5000)
ap.add_argument("--repeats", type=int, default=3)
ap.add_argument("--out", default=None)
args = ap.parse_args()
runs, result = [], None
for _ in range(args.repeats):
    t = time.perf_counter()
    a = np.random.rand(args.n, args.n)
    b = np.random.rand(args.n, args.n)
    result = float((a @ b.T - a).std())
    runs.append(time.perf_counter() - t)
    del a, b
# Two independent uniform matrices: each entry of a @ b.T has mean n/4 and variance
# n/144 + ..., so the std is about sqrt(n * 7/144); check the order of magnitude.
expected = (args.n * 7 / 144) ** 0.5
assert abs(result - expected) < 0.05 * expected, f"std {result}, expected about {expected}"
line = json.dumps({"bench": "W3G", "engine": "numpy", "value": statistics.median(runs), "unit": "s",
                   "runs": runs, "result": result, "threads": "numpy default (OpenBLAS)"})
print(line)
if args.out:
    with open(args.out, "a") as f:
        f.write(line + "\n")
