#!/usr/bin/env bash
# A/B of the runtime's benchmarks between two builds, alternated in one session (these
# machines are shared and noisy: only figures of the same run compare). BASE_BIN and
# NEW_BIN are directories each holding an `ares-bench` and the `ares` beside it (the
# cluster and recovery suites start daemons with it). ROUNDS rounds (default 2) of each
# SUITES suite (default "micro cluster recovery"; CLUSTER_ARGS: the cluster suite's
# options), base then new; JSON lines tagged with which build and which round, into
# bench/results/<date>-<time>-ab-runtime/, then the new/base ratio of each median.
#   bash bench/ab_runtime.sh BASE_BIN [NEW_BIN]
set -euo pipefail
cd "$(dirname "$0")/.."
BASE_BIN=${1:?directory of the base build}
NEW_BIN=${2:-${CARGO_TARGET_DIR:-$PWD/target}/release}
ROUNDS=${ROUNDS:-2}
SUITES=${SUITES:-micro cluster recovery}
OUT=bench/results/$(date +%Y%m%d-%H%M)-ab-runtime
mkdir -p "$OUT"
for round in $(seq 1 "$ROUNDS"); do
  for suite in $SUITES; do
    for which in base new; do
      dir=$BASE_BIN
      [[ $which == new ]] && dir=$NEW_BIN
      case $suite in
        micro) timeout 900 "$dir/ares-bench" micro --repeats 3 ;;
        cluster) timeout 1200 "$dir/ares-bench" cluster ${CLUSTER_ARGS:---repeats 3} ;;
        recovery) timeout 900 "$dir/ares-bench" recovery ;;
        *) echo "unknown suite $suite" >&2; exit 2 ;;
      esac | grep '^{' | sed "s/^{/{\"which\":\"$which\",\"round\":$round,\"suite\":\"$suite\",/" | tee -a "$OUT/ab.jsonl"
    done
  done
done
python3 - "$OUT/ab.jsonl" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
for bench in sorted({r["bench"] for r in rows if isinstance(r.get("value"), (int, float))}):
    med = {}
    for w in ("base", "new"):
        v = [r["value"] for r in rows if r.get("bench") == bench and r["which"] == w and isinstance(r.get("value"), (int, float))]
        med[w] = statistics.median(v) if v else float("nan")
    unit = next((r.get("unit", "") for r in rows if r.get("bench") == bench), "")
    ratio = med["new"] / med["base"] if med["base"] else float("nan")
    print(f"{bench}: base {med['base']:.4g} {unit}, new {med['new']:.4g} {unit}, new/base {ratio:.3f}")
PY
echo "results in $OUT"
