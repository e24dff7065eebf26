#!/usr/bin/env bash
# One device call: the spin SPLIT hand-off (the default since 2026-12-05j; kernels/ss_main.cu,
# kernels/README.md step 4) against the publication hand-off it replaced
# (SS_HANDOFF_SPIN=0). In the publication form the last arriver waits for a count the other
# parts raise with red.release once their slab writes are done, then reads the slab; in the
# spin form every slab word is its own flag (bit 63 set), the other parts write and leave,
# and the finisher reads the words as they land, keeping its own survivors in staging.
# Measured on an H100 (reports/h100/2026-12-05j, as a knob against the publication form):
# 1.043 / 1.046 on 1,344 SPLIT launches (B 1-32, N >= 100K; every K x B group 1.021-1.067),
# hand-off + verify 2.96 -> 2.33 us (medians of 48 cases; the spin form marks its hand-off
# before its wait). The knob's 0 build is 2d322ae's kernel (nvdisasm
# of both sm_90a cubins: the same SASS, reports/cpu/2026-12-05-spin-handoff). ss-main
# against radix on every SPLIT cell, twice each; the phases of both (B 1-8); a certify of
# the default (poisoned pads, soak). Packed into $OUT/experiments.tgz. Then
# compute-sanitizer memcheck / racecheck / synccheck of the default on two SPLIT cases
# (K 2,048 and K 512, B 2) into $OUT/sanitize.log (each case takes seconds; SAN_S of the
# budget is kept for them).
#
# Usage (device): OUT=$OUT GVR_BIN=devbin/x/gvr-bench [BUDGET_S=300] bash scripts/h200_handoff_spin_call.sh
# Also the batched wait (SS_SLAB_WAIT_BATCH=4, built 2026-12-05j, not yet measured) against
# the default: scripts/ab_compare.py --by k,b DIR/runs spin:b4,spin2,b42:ss-main.
# Locally: scripts/ab_compare.py --by k,b DIR/runs pub:spin,pub2,spin2:ss-main
#          DIR/runs/ph_pub/phases.md against DIR/runs/ph_spin/phases.md: compare hand-off +
#          verify (the spin form marks its hand-off before the wait, the publication form after)
# Once the H200 agrees (>= 1 % in both rounds, no (K, B) group below 0.99), remove the
# publication form (NOTES item 0b).
set -u
: "${OUT:?set OUT}"
B="${GVR_BIN:-target/release/gvr-bench}"
G="--grid grids/dsa886.csv"
S="grid $G --batches 1,2,4,8,16,32 --n-min 100000 --arms ss-main,radix"
M=GVR_SS_MAIN_DEFINES
PUB=SS_HANDOFF_SPIN=0
PH="phases $G --arms ss-main --batches 1,2,4,8 --n-min 100000 --sample 48 --reps 5"
EXPERIMENTS="pub|$M=$PUB|$S
spin|-|$S
b4|$M=SS_SLAB_WAIT_BATCH=4|$S
pub2|$M=$PUB|$S
spin2|-|$S
b42|$M=SS_SLAB_WAIT_BATCH=4|$S
ph_pub|$M=$PUB|$PH --out /tmp/experiments/runs/ph_pub
ph_spin|-|$PH --out /tmp/experiments/runs/ph_spin
cert|-|certify --arms ss,ss-main,ss-varlen,ss-varlen-hints --poison-pad $G --batches 1,2,4,8,16,32 --n-min 100000 --sample 60 --soak ${SOAK:-60} --soak-seed 7401"
TOTAL_S=${BUDGET_S:-300}
SAN_S=${SAN_S:-60}  # kept for the sanitizer runs (seconds each on B 2; 20 s cap per run)
EXPERIMENTS="$EXPERIMENTS" OUT="$OUT" GVR_BIN="$B" BUDGET_S=$((TOTAL_S - SAN_S)) \
  bash scripts/h200_experiments.sh > /dev/null 2>&1
grep -E "^== |rc=" /tmp/experiments/experiments.log | tr '\n' ' '
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
for cell in v32_128k_L00 v4_flash_512k_L02; do
  for tool in memcheck racecheck synccheck; do
    if [ $((TOTAL_S - SECONDS)) -lt 20 ]; then echo "== $tool $cell: skipped (time)" | tee -a "$OUT/sanitize.log"; continue; fi
    echo "== $tool $cell" >> "$OUT/sanitize.log"
    timeout 20 compute-sanitizer --tool "$tool" --error-exitcode 9 "$B" certify \
      --captures "${CAPS:-/tmp/gvr-caps}" --cells "$cell" --batches 2 --arms ss-main --no-adversarial \
      >> "$OUT/sanitize.log" 2>&1
    echo "   rc=$?" | tee -a "$OUT/sanitize.log"
  done
done
