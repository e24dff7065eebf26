#!/usr/bin/env bash
# Phase probe on the H200 (`gvr-bench phases`): where the launches farthest
# from the latency floor spend their time. Two selections of the synthetic
# dsa886 set, each case on `ss` (the route's pick) with R probed launches:
#   small-b: B 1–8, N >= 8K (clus, main SPLIT, reg_clus and reg 8–16K chains:
#            2–2.8x the floor, reports/h200/2026-12-04i/floor-3cb3970/floor_gaps.txt);
#   big-b:   B 256 / 1,024, N >= 64K (the bandwidth target's main launches).
# Usage (device): OUT=$OUT GVR_BIN=devbin/x/gvr-bench CAPS=/tmp/gvr-caps bash scripts/h200_phases.sh
# Env: REPS (default 5), SMALL_SAMPLE (default 80), BIG_SAMPLE (default 30),
#   ARMS (default ss), STEP_TIMEOUT (s per selection, default 240).
set -u
: "${OUT:?set OUT}"
BIN="${GVR_BIN:-target/release/gvr-bench}"
CAPS="${CAPS:-/tmp/gvr-caps}"
export GVR_CACHE_DIR="${GVR_CACHE_DIR:-/tmp/gvr-kernel-cache}"
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
D="$OUT/phases"; mkdir -p "$D"
LOG="$D/phases.log"
echo "date $(date -u +%FT%TZ) $("$BIN" --version)" | tee "$LOG"
[ -f "$CAPS/manifest.json" ] || "$BIN" capture synth --out "$CAPS" --steps 4 --seed 0 >> "$LOG" 2>&1
probe() { # probe NAME SELECTION...: one phases run, its table and raw records under $D/NAME
  local name="$1"; shift; local t0=$SECONDS
  echo "== $name: $*" | tee -a "$LOG"
  timeout "${STEP_TIMEOUT:-240}" "$BIN" phases --captures "$CAPS" --grid grids/dsa886.csv --arms "${ARMS:-ss}" \
    --reps "${REPS:-5}" --out "$D/$name" "$@" > "$D/$name.md" 2> "$D/$name.err"
  echo "   rc=$? in $((SECONDS - t0)) s" | tee -a "$LOG"
  tail -n 5 "$D/$name.err" >> "$LOG"
}
probe small-b --batches 1,2,4,8 --n-min 8000 --sample "${SMALL_SAMPLE:-80}"
probe big-b --batches 256,1024 --n-min 65536 --sample "${BIG_SAMPLE:-30}"
# Per family × N × B (locally, add --floor reports/h200/2026-12-04i/floor-3cb3970/run).
python3 scripts/phase_table.py "$D/small-b" "$D/big-b" > "$D/groups.md" 2>> "$LOG"
echo "done $(date -u +%FT%TZ)" | tee -a "$LOG"
