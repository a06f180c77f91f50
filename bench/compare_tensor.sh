#!/usr/bin/env bash
# Runs the tensor workloads of ../shared/peers/tensor_workloads.py on numpy, Dask, Xorbits
# and Mars, then `ares-bench tensor`, back to back on this machine, into
# bench/results/<date>-<time>/ (tensor_peers.jsonl, ares_tensor.jsonl, and
# ares_python.jsonl: the same workloads through the Python package).
#   WORKLOADS (default W1,W2) and REPEATS (default 3) select what runs.
#   PEERS_VENVS defaults to ~/.cache/ares-peers (made by ../shared/peers/setup_venvs.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
PEERS_VENVS=${PEERS_VENVS:-$HOME/.cache/ares-peers}
PEERS=${PEERS:-../shared/peers}
WORKLOADS=${WORKLOADS:-W1,W2}
REPEATS=${REPEATS:-3}
OUT=bench/results/$(date +%Y%m%d-%H%M)-tensor
mkdir -p "$OUT"
cargo build --release -p ares-bench
for engine in numpy dask; do
  timeout 900 "$PEERS_VENVS/main/bin/python" "$PEERS/tensor_workloads.py" --engine $engine \
    --workloads "$WORKLOADS" --repeats "$REPEATS" --out "$OUT/tensor_peers.jsonl"
done
timeout 900 "$PEERS_VENVS/xorbits/bin/python" "$PEERS/tensor_workloads.py" --engine xorbits \
  --workloads "$WORKLOADS" --repeats "$REPEATS" --out "$OUT/tensor_peers.jsonl"
timeout 900 "$PEERS_VENVS/pymars/bin/python" "$PEERS/tensor_workloads.py" --engine mars \
  --workloads "$WORKLOADS" --repeats "$REPEATS" --out "$OUT/tensor_peers.jsonl"
# W3G (a @ b.T - a with two different matrices) has no peer in tensor_workloads.py:
# bench/w3_general.py runs it on numpy.
if [[ ",$WORKLOADS," == *,W3G,* ]]; then
  timeout 900 "$PEERS_VENVS/main/bin/python" bench/w3_general.py --repeats "$REPEATS" --out "$OUT/tensor_peers.jsonl"
fi
timeout 900 target/release/ares-bench tensor --workloads "$WORKLOADS" --repeats "$REPEATS" | tee "$OUT/ares_tensor.jsonl"
# The same workloads driven from Python, as a Mars user writes them (the peer script's
# `--engine ares`), from a venv where `pip install ./python` was done: ARES_VENV, by
# default the one scripts/test-all makes. Skipped when there is none.
ARES_VENV=${ARES_VENV:-${CARGO_TARGET_DIR:-target}/pyvenv}
PY_WORKLOADS=$(echo ",$WORKLOADS," | sed 's/,W3G,/,/g; s/^,//; s/,$//')
if [[ -x "$ARES_VENV/bin/python" && -n "$PY_WORKLOADS" ]]; then
  "$ARES_VENV/bin/pip" install --quiet --disable-pip-version-check psutil
  timeout 900 "$ARES_VENV/bin/python" "$PEERS/tensor_workloads.py" --engine ares \
    --workloads "$PY_WORKLOADS" --repeats "$REPEATS" --out "$OUT/ares_python.jsonl"
  # The peer script records results without judging them: check ours against their
  # expected values, as ares-bench tensor does (pi; 3 per element of W2; W3's std about
  # sqrt(n/18), see bench/src/tensor.rs).
  python3 - "$OUT/ares_python.jsonl" <<'PY'
import json, math, sys
want = {"W1": (math.pi, 1e-3), "W2": (3 * 4e8, 1e-3), "W3": (math.sqrt(5000 / 18), 0.05)}
for line in open(sys.argv[1]):
    d = json.loads(line)
    if d.get("bench") in want:
        v, tol = want[d["bench"]]
        got = d.get("result")
        if got is None or abs(got - v) > tol * v:
            sys.exit(f"{d['bench']} from Python gave {got}, expected {v} within {tol:.0%}")
    elif d.get("bench", "").endswith("_error"):
        sys.exit(f"{d['bench']}: {d.get('error')}")
print("ares_python.jsonl: every result checked")
PY
fi
echo "results in $OUT"
