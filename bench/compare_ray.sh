#!/usr/bin/env bash
# Runs Ray's micro benchmarks (../shared/peers/ray_micro.py) and ours back to back on
# this machine, writing both JSON-line files to bench/results/<date>-<time>/.
#   PEERS_VENVS defaults to ~/.cache/ares-peers (made by ../shared/peers/setup_venvs.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
PEERS_VENVS=${PEERS_VENVS:-$HOME/.cache/ares-peers}
PEERS=${PEERS:-../shared/peers}
OUT=bench/results/$(date +%Y%m%d-%H%M)
mkdir -p "$OUT"
cargo build --release -p ares-bench
timeout 600 "$PEERS_VENVS/main/bin/python" "$PEERS/ray_micro.py" --repeats 5 --out "$OUT/ray_micro.jsonl"
timeout 600 target/release/ares-bench micro --repeats 5 | tee "$OUT/ares_micro.jsonl"
