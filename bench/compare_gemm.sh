#!/usr/bin/env bash
# The chunk GEMM kernel beside numpy's single-threaded OpenBLAS, back to back, three rounds
# alternating, into bench/results/<date>-<time>-gemm/gemm.jsonl. N (default 1000).
set -euo pipefail
cd "$(dirname "$0")/.."
PEERS_VENVS=${PEERS_VENVS:-$HOME/.cache/ares-peers}
N=${N:-1000}
OUT=bench/results/$(date +%Y%m%d-%H%M)-gemm
mkdir -p "$OUT"
cargo build --release -p ares-bench
for _ in 1 2 3; do
  "$PEERS_VENVS/main/bin/python" bench/gemm_numpy.py "$N" | tee -a "$OUT/gemm.jsonl"
  target/release/ares-bench gemm --n "$N" | tee -a "$OUT/gemm.jsonl"
done
echo "results in $OUT"
