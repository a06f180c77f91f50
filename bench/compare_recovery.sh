#!/usr/bin/env bash
# Lineage reconstruction, Ray against ares: bench/ray_recovery.py (Ray 2.x, two nodes on this
# machine) and then `ares-bench recovery` (two daemons on loopback) back to back, the same
# experiment (a chain of 100 links of 100 ms, node B SIGKILLed halfway; see
# bench/src/recovery.rs), writing JSON lines to bench/results/<date>-<time>-recovery/:
#   ray_recovery.jsonl   Ray
#   ares_recovery.jsonl  ares-bench recovery
# and printing both ratios (failed / undisturbed wall time) against the bars.
#   PEERS_VENVS defaults to ~/.cache/ares-peers (made by ../shared/peers/setup_venvs.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
PEERS_VENVS=${PEERS_VENVS:-$HOME/.cache/ares-peers}
OUT=bench/results/$(date +%Y%m%d-%H%M)-recovery
mkdir -p "$OUT"
cargo build --release -p ares-bench -p ares-cli
timeout 900 "$PEERS_VENVS/main/bin/python" bench/ray_recovery.py --out "$OUT/ray_recovery.jsonl"
ray_left() { pgrep -x raylet >/dev/null || pgrep -x gcs_server >/dev/null || pgrep -f '^ray::' >/dev/null; }
for _ in $(seq 60); do ray_left || break; sleep 1; done
ARES_LOG=ares=info timeout 900 target/release/ares-bench recovery 2> "$OUT/ares_recovery.log" | tee "$OUT/ares_recovery.jsonl"
python3 - "$OUT" <<'PY'
import json, sys
out = sys.argv[1]
def load(path):
    d = {}
    for j in map(json.loads, open(path)):
        if j.get("bench") != "meta" and "unit" in j:
            d[j["bench"]] = j
    return d
ray, ares = load(f"{out}/ray_recovery.jsonl"), load(f"{out}/ares_recovery.jsonl")
def show(j, key="value"):
    if j is None:
        return "missing"
    if j.get("value") is None:
        return f"error: {j.get('error', '?')}"
    return f"{j['value']:.3f}"
print(f"{'':24} {'ares':>10} {'ray':>10}")
for name, bar in [("small", 1.3), ("10MB", 1.5)]:
    for k in (f"recovery_{name}_plain_s", f"recovery_{name}_failed_s"):
        print(f"{k:24} {show(ares.get(k)):>10} {show(ray.get(k)):>10}")
    k = f"recovery_ratio_{name}"
    a = ares.get(k, {}).get("value")
    ok = "PASS" if a is not None and a <= bar else "FAIL"
    print(f"{k:24} {show(ares.get(k)):>10} {show(ray.get(k)):>10}   (bar <= {bar}: ares {ok})")
PY
echo "results in $OUT"
