#!/usr/bin/env bash
# Runs W4 (the data-frame workload of ../shared/peers/tensor_workloads.py) on pandas (the
# peer script's numpy engine), polars, DuckDB, Dask, Xorbits and Mars, then
# `ares-bench dataframe`, back to back, into bench/results/<date>-<time>-dataframe/.
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
echo "results in $OUT"
