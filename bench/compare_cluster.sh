#!/usr/bin/env bash
# Runs Ray's local a_sync_tasks and b_async_tasks (../shared/peers/ray_micro.py) and then
# `ares-bench cluster` (nodes on loopback: transfer, remote tasks, W2 on two nodes) back to
# back, writing JSON lines to bench/results/<date>-<time>-cluster/:
#   ray_ab.jsonl        Ray, a and b (the bars of a_/b_*_remote are ratios to these)
#   ares_cluster.jsonl  ares-bench cluster
#   PEERS_VENVS defaults to ~/.cache/ares-peers (made by ../shared/peers/setup_venvs.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
PEERS_VENVS=${PEERS_VENVS:-$HOME/.cache/ares-peers}
PEERS=${PEERS:-../shared/peers}
OUT=bench/results/$(date +%Y%m%d-%H%M)-cluster
mkdir -p "$OUT"
cargo build --release -p ares-bench -p ares-cli
timeout 600 "$PEERS_VENVS/main/bin/python" "$PEERS/ray_micro.py" --repeats 5 --only a,b --out "$OUT/ray_ab.jsonl"
for _ in $(seq 60); do pgrep -f 'raylet|gcs_server|ray::' >/dev/null || break; sleep 1; done
timeout 1200 target/release/ares-bench cluster --repeats 5 | tee "$OUT/ares_cluster.jsonl"
python3 - "$OUT" <<'PY'
import json, sys
out = sys.argv[1]
ray = {j["bench"]: j["value"] for j in map(json.loads, open(f"{out}/ray_ab.jsonl")) if "value" in j}
ares = {j["bench"]: j["value"] for j in map(json.loads, open(f"{out}/ares_cluster.jsonl"))}
print(f"xfer_1GB_GBps {ares['xfer_1GB_GBps']:.3f} = {ares['xfer_1GB_GBps'] / ares['tcp_1GB_GBps']:.0%} of TCP (bar >= 50%)")
for a, r in [("a_sync_tasks_remote", "a_sync_tasks"), ("b_async_tasks_remote", "b_async_tasks")]:
    print(f"{a} {ares[a]:.0f}/s = {ares[a] / ray[r]:.1f}x Ray's local {r} {ray[r]:.0f}/s (bar >= 10x)")
print(f"w2_2nodes_ratio {ares['w2_2nodes_ratio']:.2f} (bar <= 1.25)")
PY
echo "results in $OUT"
