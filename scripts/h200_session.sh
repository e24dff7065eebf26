#!/usr/bin/env bash
# One H200 device call that checks and times new kernel work (no build here:
# carries the release binary and test binaries). Every step logs to $OUT/logs;
# runs and logs are packed into $OUT/session.tgz (the device returns few files).
#
# Usage: OUT=... scripts/h200_session.sh [steps...]
#   steps: synth certify sample tests sanitize (default: all, in this order)
# Env: DEVBIN (dir of on-device test binaries, default devbin/), ARMS (timed
#   arms), CERT_ARMS (certified arms), SAMPLE (cases of the timed sample),
#   CERT_SAMPLE (cases certified), PEER (set to "torch" to add the torch peer),
#   SAN_CASES ("arm:cell:b ..." for compute-sanitizer).
set -u
OUT="${OUT:-$PWD/h200_out}"; mkdir -p "$OUT"
BIN="${GVR_BIN:-target/release/gvr-bench}"
CAPS="${CAPS:-/tmp/gvr-caps}"
DEVBIN="${DEVBIN:-devbin}"
ARMS="${ARMS:-ss,radix,radix-mcta,filtered,gvr1}"
CERT_ARMS="${CERT_ARMS:-ss,ss-main,radix,radix-mcta,filtered,gvr1}"
SAMPLE="${SAMPLE:-600}"
CERT_SAMPLE="${CERT_SAMPLE:-1500}"
export GVR_CACHE_DIR="${GVR_CACHE_DIR:-/tmp/gvr-kernel-cache}"
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
RUNS="$OUT/runs"; LOGS="$OUT/logs"; mkdir -p "$RUNS" "$LOGS"
LOG="$OUT/session.log"
STEPS=("$@"); [ ${#STEPS[@]} -eq 0 ] && STEPS=(synth certify sample tests sanitize)
want() { local s; for s in "${STEPS[@]}"; do [ "$s" = "$1" ] && return 0; done; return 1; }
step() { # step NAME CMD...: time it, keep its output, never abort the session
  local name="$1"; shift; local t0=$SECONDS
  echo "== $name: $*" | tee -a "$LOG"
  timeout "${STEP_TIMEOUT:-240}" "$@" > "$LOGS/$name.log" 2>&1; local rc=$?
  echo "   rc=$rc in $((SECONDS - t0)) s" | tee -a "$LOG"
  tail -n 25 "$LOGS/$name.log" >> "$LOG"
  return $rc
}
echo "date $(date -u +%FT%TZ) arms=$ARMS cert_arms=$CERT_ARMS sample=$SAMPLE" | tee "$LOG"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv | tee -a "$LOG"

if want synth || [ ! -f "$CAPS/manifest.json" ]; then
  step synth "$BIN" capture synth --out "$CAPS" --steps 4 --seed 0
fi
if want certify; then
  step certify-smoke "$BIN" certify --captures "$CAPS" --grid grids/smoke.csv --arms "$CERT_ARMS" --poison-pad
  step certify-sample "$BIN" certify --captures "$CAPS" --grid grids/dsa886.csv --sample "$CERT_SAMPLE" --arms "$CERT_ARMS" --no-adversarial
fi
if want sample; then
  PEER_ARGS=(); [ -n "${PEER:-}" ] && PEER_ARGS=(--peer "$PEER")
  STEP_TIMEOUT=400 step grid-sample "$BIN" grid --captures "$CAPS" --grid grids/dsa886.csv --sample "$SAMPLE" \
    --arms "$ARMS" --aa radix "${PEER_ARGS[@]}" --out "$RUNS/sample"
  step report-sample-ss "$BIN" report "$RUNS/sample" --base ss --out "$RUNS/sample/report-ss"
  step aa-sample "$BIN" aa "$RUNS/sample" --arm radix --arm-b "radix#2" --out "$RUNS/sample/aa.json"
fi
if want tests && [ -d "$DEVBIN" ]; then
  # Test binaries built with `cargo test --release --no-run`; GPU halves are
  # #[ignore]d or behind GVR_GPU_TESTS=1, so run both ways.
  for t in "$DEVBIN"/*; do
    name=$(basename "$t" | sed 's/-[0-9a-f]*$//')
    GVR_GPU_TESTS=1 step "test-$name" "$t" --include-ignored --test-threads 1
  done
fi
if want sanitize; then
  for spec in ${SAN_CASES:-}; do
    IFS=: read -r arm cell b <<< "$spec"
    for tool in memcheck racecheck synccheck; do
      step "sanitize-$tool-$arm" compute-sanitizer --tool "$tool" --error-exitcode 9 "$BIN" certify --captures "$CAPS" \
        --cells "$cell" --batches "$b" --arms "$arm" --no-adversarial
    done
  done
fi
tar czf "$OUT/session.tgz" -C "$OUT" logs runs && rm -rf "$RUNS" "$LOGS"
echo "done $(date -u +%FT%TZ)" | tee -a "$LOG"
