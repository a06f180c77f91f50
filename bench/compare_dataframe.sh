#!/usr/bin/env bash
# Runs W4 (the data-frame workload of ../shared/peers/tensor_workloads.py) on pandas (the
# peer script's numpy engine), polars, DuckDB, Dask, Xorbits and Mars, then
# `ares-bench dataframe`, then W4 through the Python package as a Mars user writes it
# (the peer script's `--engine ares`), back to back, into
# bench/results/<date>-<time>-dataframe/.
#   ENGINES (default: numpy,polars,duckdb,dask,xorbits,mars) and REPEATS (default 1)
#   select what runs; W4_ROWS and W4_PARTS scale it (defaults 5e7 rows in 50 parts).
set -euo pipefail
cd "$(dirname "$0")/.."
PEERS_VENVS=${PEERS_VENVS:-$HOME/.cache/ares-peers}
PEERS=${PEERS:-../shared/peers}
ENGINES=${ENGINES:-numpy,polars,duckdb,dask,xorbits,mars}
REPEATS=${REPEATS:-1}
ROWS=${W4_ROWS:-50000000}
PARTS=${W4_PARTS:-50}
OUT=bench/results/$(date +%Y%m%d-%H%M)-dataframe
mkdir -p "$OUT"
cargo build --release -p ares-bench
for engine in ${ENGINES//,/ }; do
  case $engine in
    xorbits) venv=xorbits ;;
    mars) venv=pymars ;;
    *) venv=main ;;
  esac
  timeout 1800 "$PEERS_VENVS/$venv/bin/python" "$PEERS/tensor_workloads.py" --engine "$engine" \
    --workloads W4 --repeats "$REPEATS" --w4-rows "$ROWS" --w4-parts "$PARTS" --out "$OUT/dataframe_peers.jsonl" \
    || echo "{\"bench\": \"W4_error\", \"engine\": \"$engine\"}" >> "$OUT/dataframe_peers.jsonl"
done
target/release/ares-bench dataframe --repeats "$REPEATS" --rows "$ROWS" --parts "$PARTS" | tee "$OUT/ares_dataframe.jsonl"
# From a venv where `pip install ./python` was done (ARES_VENV, by default the one
# scripts/test-all makes); skipped when there is none.
ARES_VENV=${ARES_VENV:-${CARGO_TARGET_DIR:-target}/pyvenv}
if [[ -x "$ARES_VENV/bin/python" ]]; then
  "$ARES_VENV/bin/pip" install --quiet --disable-pip-version-check psutil
  timeout 1800 "$ARES_VENV/bin/python" "$PEERS/tensor_workloads.py" --engine ares --workloads W4 \
    --repeats "$REPEATS" --w4-rows "$ROWS" --w4-parts "$PARTS" --out "$OUT/ares_python.jsonl"
  # The peer script records results without judging them: k1 has 1000 groups, and
  # (k1, k2) all 10^6 of its combinations once there are many more rows than that.
  python3 - "$OUT/ares_python.jsonl" "$ROWS" <<'PY'
import json, sys
rows = float(sys.argv[2])
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("bench") != "W4":
        continue
    g1, g2 = r["result"]["groups_k1"], r["result"]["groups_k1k2"]
    ok = g1 == 1000 and (g2 == 1_000_000 if rows >= 2e7 else 0 < g2 <= 1_000_000)
    print(json.dumps({"bench": "W4_python_check", "groups_k1": g1, "groups_k1k2": g2, "ok": ok}))
    if not ok:
        sys.exit("W4 through Python gave wrong group counts")
PY
fi
echo "results in $OUT"
