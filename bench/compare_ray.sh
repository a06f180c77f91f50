#!/usr/bin/env bash
# Runs Ray's micro benchmarks (../shared/peers/ray_micro.py) and ours back to back on
# this machine, writing the JSON-line files to bench/results/<date>-<time>/:
#   ray_micro.jsonl      Ray, all benchmarks (100 MB objects)
#   ray_e_1MB.jsonl      Ray, put/get of 1 MB objects   (--only e --big-mb 1)
#   ray_e_1GB.jsonl      Ray, put/get of 1 GB objects   (--only e --big-mb 1000)
#   ares_micro.jsonl     ares-bench micro (e_* at 1 MB, 100 MB and 1 GB)
#   ares_store.jsonl     ares-bench store (spill/restore beside a disk write)
# Summarize with: python3 bench/ratios.py bench/results/<run>
#   PEERS_VENVS defaults to ~/.cache/ares-peers (made by ../shared/peers/setup_venvs.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
PEERS_VENVS=${PEERS_VENVS:-$HOME/.cache/ares-peers}
PEERS=${PEERS:-../shared/peers}
OUT=bench/results/$(date +%Y%m%d-%H%M)
mkdir -p "$OUT"
cargo build --release -p ares-bench
PY="$PEERS_VENVS/main/bin/python"
timeout 600 "$PY" "$PEERS/ray_micro.py" --repeats 5 --out "$OUT/ray_micro.jsonl"
timeout 600 "$PY" "$PEERS/ray_micro.py" --repeats 5 --only e --big-mb 1 --out "$OUT/ray_e_1MB.jsonl"
timeout 600 "$PY" "$PEERS/ray_micro.py" --repeats 5 --only e --big-mb 1000 --out "$OUT/ray_e_1GB.jsonl"
# Let Ray's daemons finish exiting (up to 60 s) so they do not load our half of the run.
for _ in $(seq 60); do pgrep -f 'raylet|gcs_server|ray::' >/dev/null || break; sleep 1; done
timeout 600 target/release/ares-bench micro --repeats 5 | tee "$OUT/ares_micro.jsonl"
timeout 600 target/release/ares-bench store | tee "$OUT/ares_store.jsonl"
echo "results in $OUT"
