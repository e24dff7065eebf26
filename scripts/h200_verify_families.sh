#!/usr/bin/env bash
# One H200 device call that verifies new self-sampling family / entry work:
# on-device tests (devbin/), certify (smoke + adversarial with poisoned pads,
# and a grid sample) over every ss arm, a timed sample with the families
# side by side, and compute-sanitizer on one case per new arm. Everything
# lands in $OUT/verify.tgz (the device returns few files).
#
# Usage: OUT=... scripts/h200_verify_families.sh
# Env: TEST_BINS (glob of GPU test binaries, default devbin/*; gvr-bench*
#   files are skipped), CERT_ARMS, TIME_ARMS, SAMPLE (timed cases; 0 skips the timed sample),
#   CERT_SAMPLE, SOAK (certify --soak rounds per K on SOAK_ARMS, default
#   CERT_ARMS; 0 = none, the default), SOAK_SEED, SOAK_TIMEOUT (s, default 400),
#   SAN_CASES ("arm:cell:b ..."), EXTRA (a command line run last, its log kept).
set -u
OUT="${OUT:-$PWD/h200_out}"
W=/tmp/verify; rm -rf "$W"; mkdir -p "$W/logs" "$W/runs"
BIN="${GVR_BIN:-target/release/gvr-bench}"
CAPS="${CAPS:-/tmp/gvr-caps}"
CERT_ARMS="${CERT_ARMS:-ss,ss-main,ss-reg,ss-regclus,ss-clus,ss-varlen,ss-varlen-hints}"
TIME_ARMS="${TIME_ARMS:-ss,ss-main,ss-clus,ss-varlen,radix}"
export GVR_CACHE_DIR="${GVR_CACHE_DIR:-/tmp/gvr-kernel-cache}"
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
LOG="$W/verify.log"
step() { # step NAME CMD...: time it, keep its whole output, never abort
  local name="$1"; shift; local t0=$SECONDS
  echo "== $name: $*" | tee -a "$LOG"
  timeout "${STEP_TIMEOUT:-240}" "$@" > "$W/logs/$name.log" 2>&1; local rc=$?
  echo "   rc=$rc in $((SECONDS - t0)) s" | tee -a "$LOG"
  tail -n 12 "$W/logs/$name.log" >> "$LOG"
}
echo "date $(date -u +%FT%TZ) $(git rev-parse --short HEAD 2>/dev/null)" | tee "$LOG"
[ -f "$CAPS/manifest.json" ] || step synth "$BIN" capture synth --out "$CAPS" --steps 4 --seed 0
# shellcheck disable=SC2086  # TEST_BINS is a glob
for t in ${TEST_BINS:-devbin/*}; do
  [ -f "$t" ] && [ -x "$t" ] || continue
  name=$(basename "$t" | sed 's/-[0-9a-f]*$//')
  case "$name" in gvr-bench*) continue;; esac  # the harness itself, not a test binary
  GVR_GPU_TESTS=1 step "test-$name" "$t" --include-ignored --test-threads 1 --nocapture
done
step certify-smoke "$BIN" certify --captures "$CAPS" --grid grids/smoke.csv --arms "$CERT_ARMS" --poison-pad
step certify-sample "$BIN" certify --captures "$CAPS" --grid grids/dsa886.csv --sample "${CERT_SAMPLE:-1000}" \
  --arms "$CERT_ARMS" --no-adversarial
if [ "${SOAK:-0}" -gt 0 ]; then
  # One captured case per model picks K 2,048 / 512 / 1,024 for the soak.
  STEP_TIMEOUT="${SOAK_TIMEOUT:-400}" step certify-soak "$BIN" certify --captures "$CAPS" --batches 1 --sample 3 \
    --no-adversarial --poison-pad --arms "${SOAK_ARMS:-$CERT_ARMS}" --soak "$SOAK" --soak-seed "${SOAK_SEED:-0}"
fi
if [ "${SAMPLE:-800}" != 0 ]; then
  STEP_TIMEOUT=400 step grid-sample "$BIN" grid --captures "$CAPS" --grid grids/dsa886.csv --sample "${SAMPLE:-800}" \
    --arms "$TIME_ARMS" --out "$W/runs/sample" --no-report
fi
for spec in ${SAN_CASES:-}; do
  IFS=: read -r arm cell b <<< "$spec"
  for tool in memcheck racecheck synccheck; do
    step "sanitize-$tool-$arm" compute-sanitizer --tool "$tool" --error-exitcode 9 "$BIN" certify --captures "$CAPS" \
      --cells "$cell" --batches "$b" --arms "$arm" --no-adversarial
  done
done
if [ -n "${EXTRA:-}" ]; then step extra bash -c "$EXTRA"; fi
echo "done $(date -u +%FT%TZ)" | tee -a "$LOG"
mkdir -p "$OUT"; tar czf "$OUT/verify.tgz" -C "$W" . 
