#!/usr/bin/env bash
# Issue-3 measurement session on one H200 (no build: carries the release
# binary). Every step logs to $OUT; the run directories are packed into
# $OUT/session.tgz. Steps: synth, info, certify, smoke, sample, torch, sanitize
# (default: all). Usage: OUT=... scripts/h200_baselines.sh [steps...]
set -u
OUT="${OUT:-$PWD/h200_out}"; mkdir -p "$OUT"
BIN="${GVR_BIN:-target/release/gvr-bench}"
CAPS="${CAPS:-/tmp/gvr-caps}"
ARMS="${ARMS:-radix,radix-mcta,filtered,gvr1}"
SAMPLE="${SAMPLE:-600}"
export GVR_CACHE_DIR="${GVR_CACHE_DIR:-/tmp/gvr-kernel-cache}"
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
RUNS="$OUT/runs"; LOGS="$OUT/logs"; mkdir -p "$RUNS" "$LOGS"
LOG="$OUT/session.log"
STEPS=("$@"); [ ${#STEPS[@]} -eq 0 ] && STEPS=(synth info certify smoke sample torch sanitize)
want() { local s; for s in "${STEPS[@]}"; do [ "$s" = "$1" ] && return 0; done; return 1; }
step() { # step NAME CMD...: time it, keep its output, never abort the session
  local name="$1"; shift; local t0=$SECONDS
  echo "== $name: $*" | tee -a "$LOG"
  timeout "${STEP_TIMEOUT:-300}" "$@" > "$LOGS/$name.log" 2>&1; local rc=$?
  echo "   rc=$rc in $((SECONDS - t0)) s" | tee -a "$LOG"
  tail -n 40 "$LOGS/$name.log" >> "$LOG"
  return $rc
}
echo "date $(date -u +%FT%TZ) arms=$ARMS sample=$SAMPLE" | tee "$LOG"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv | tee -a "$LOG"

# Full synthetic dsa886 capture set (all 886 cells, S=4), then the gates.
if want synth || [ ! -f "$CAPS/manifest.json" ]; then
  step synth "$BIN" capture synth --out "$CAPS" --steps 4 --seed 0
  step validate "$BIN" capture validate "$CAPS"
  du -sh "$CAPS" | tee -a "$LOG"
fi
if want info; then
  step info-cold "$BIN" gpu info
  step info-warm "$BIN" gpu info
fi
if want certify; then
  step certify-smoke "$BIN" certify --captures "$CAPS" --grid grids/smoke.csv --arms "$ARMS" --poison-pad
  [ -n "${SS_ARMS:-}" ] && step certify-ss "$BIN" certify --captures "$CAPS" --grid grids/smoke.csv --arms "$SS_ARMS" --poison-pad
  step certify-sample "$BIN" certify --captures "$CAPS" --grid grids/dsa886.csv --sample "$SAMPLE" --arms "$ARMS" --no-adversarial
fi
if want smoke; then
  step grid-smoke-1 "$BIN" grid --captures "$CAPS" --grid grids/smoke.csv --arms "$ARMS" --out "$RUNS/smoke-1"
  step grid-smoke-2 "$BIN" grid --captures "$CAPS" --grid grids/smoke.csv --arms "$ARMS" --out "$RUNS/smoke-2" --no-report
fi
if want sample; then
  AA_ARM="${AA_ARM:-radix}"
  step grid-sample "$BIN" grid --captures "$CAPS" --grid grids/dsa886.csv --sample "$SAMPLE" --arms "$ARMS" --aa "$AA_ARM" --out "$RUNS/sample" --no-report
fi
if want torch && [ -f "$RUNS/sample/results.jsonl" ]; then
  python3 - "$RUNS/sample/results.jsonl" > "$LOGS/cases.txt" <<'PY'
import json, sys
seen = []
for line in open(sys.argv[1]):
    c = json.loads(line)["case"]
    if c not in seen: seen.append(c)
print("\n".join(seen))
PY
  step torch python3 scripts/peer_torch.py --graph --captures "$CAPS" --cases-file "$LOGS/cases.txt" --out "$RUNS/sample/torch.jsonl"
  cat "$RUNS/sample/torch.jsonl" >> "$RUNS/sample/results.jsonl"
fi
if want sample; then
  step report-sample "$BIN" report "$RUNS/sample" --base radix
  case ",$ARMS," in *,ss,*) step report-sample-ss "$BIN" report "$RUNS/sample" --base ss --out "$RUNS/sample/report-ss" ;; esac
  for arm in radix-mcta filtered gvr1 radix; do
    step "report-vs-torch-$arm" "$BIN" report "$RUNS/sample" --base "$arm" --vs torch --out "$RUNS/sample/report-$arm-vs-torch" --no-plots
  done
  step aa-sample "$BIN" aa "$RUNS/sample" --arm "${AA_ARM:-radix}" --arm-b "${AA_ARM:-radix}#2" --out "$RUNS/sample/aa.json"
fi
if want sanitize; then
  for arm in ${ARMS//,/ }; do
    for tool in memcheck racecheck; do
      step "sanitize-$tool-$arm" compute-sanitizer --tool "$tool" --error-exitcode 9 "$BIN" certify --captures "$CAPS" \
        --cells v4_pro_64k_L10 --batches 2 --arms "$arm" --no-adversarial
    done
  done
fi
# At most 8 files come back from the device: pack logs and runs into one.
tar czf "$OUT/session.tgz" -C "$OUT" logs runs && rm -rf "$RUNS" "$LOGS"
echo "done $(date -u +%FT%TZ)" | tee -a "$LOG"
