#!/usr/bin/env bash
# A/B against an earlier commit, alternated in one session (these machines are shared
# and noisy: only figures of the same run compare). Builds BASE's ares-bench in a
# worktree with a target dir of its own, then runs BASE and this checkout in turn,
# ROUNDS rounds (default 4), on one suite: `tensor` (W1-W3, each workload in a fresh
# child) or `dataframe` (W4 in one process). JSON lines, each tagged with which build
# and which round, into bench/results/<date>-<time>-ab-<suite>/.
#   bash bench/ab.sh BASE_COMMIT tensor|dataframe
set -euo pipefail
cd "$(dirname "$0")/.."
BASE=${1:?base commit}
SUITE=${2:?tensor or dataframe}
ROUNDS=${ROUNDS:-4}
WT=${AB_WORKTREE:-/tmp/ares-ab-base}
BASE_TARGET=${AB_TARGET:-/tmp/ares-ab-target}
OUT=bench/results/$(date +%Y%m%d-%H%M)-ab-$SUITE
mkdir -p "$OUT"
if [[ ! -d $WT ]]; then
  git worktree add -f "$WT" "$BASE"
fi
git -C "$WT" checkout -q --detach "$BASE"
(cd "$WT" && CARGO_TARGET_DIR=$BASE_TARGET cargo build --release -p ares-bench)
cargo build --release -p ares-bench
NEW=${CARGO_TARGET_DIR:-$PWD/target}/release/ares-bench
OLD=$BASE_TARGET/release/ares-bench
for round in $(seq 1 "$ROUNDS"); do
  for which in base new; do
    bin=$OLD
    [[ $which == new ]] && bin=$NEW
    case $SUITE in
      tensor) "$bin" tensor --repeats 1 ;;
      dataframe) "$bin" dataframe --repeats 1 ;;
      *) echo "unknown suite $SUITE" >&2; exit 2 ;;
    esac | sed "s/^{/{\"which\":\"$which\",\"round\":$round,/" | tee -a "$OUT/ab.jsonl"
  done
done
python3 - "$OUT/ab.jsonl" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
for bench in sorted({r["bench"] for r in rows if r["bench"] in ("W1", "W2", "W3", "W4")}):
    med = {w: statistics.median(r["value"] for r in rows if r["bench"] == bench and r["which"] == w)
           for w in ("base", "new")}
    print(f"{bench}: base {med['base']:.3f} s, new {med['new']:.3f} s, new/base {med['new'] / med['base']:.3f}")
PY
