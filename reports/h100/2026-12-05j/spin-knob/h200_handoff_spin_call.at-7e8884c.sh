#!/usr/bin/env bash
# One device call: the spin SPLIT hand-off (SS_HANDOFF_SPIN=1, kernels/ss_main.cu; written
# 2026-12-05j, not yet measured) against the default publication hand-off. In the default
# the last arriver waits for a count the other parts raise with red.release once their
# slab writes are done (their fence, then one more L2 round trip for its poll) and then
# reads the slab; in the spin form every slab word is its own flag (bit 63 set), the other
# parts write and leave, and the finisher reads the words as they land — the poll and the
# others' release fences leave the chain — keeping its own survivors in staging.
# Prediction: +3 to +6 % on SPLIT launches (B 1-32, N >= 100K; the hand-off phase was
# 1.55 us of ~10 us on the H100; how much of it is the publication wait was never
# measured: the phases of both forms answer it), most at B 1-2.
# The knob's off build is 2d322ae's kernel (nvdisasm of both sm_90a cubins: the same SASS,
# reports/cpu/2026-12-05-spin-handoff), so the default runs are the old kernel. ss-main against radix on every SPLIT cell,
# twice each; the phases of both (B 1-8); a certify of the spin build (poisoned pads,
# soak). Packed into $OUT/experiments.tgz. Then compute-sanitizer memcheck / racecheck /
# synccheck of the spin build on two SPLIT cases (K 2,048 and K 512, B 2) into
# $OUT/sanitize.log (each case takes seconds; SAN_S of the budget is kept for them).
#
# Usage (device): OUT=$OUT GVR_BIN=devbin/x/gvr-bench [BUDGET_S=300] bash scripts/h200_handoff_spin_call.sh
# Locally: scripts/ab_compare.py --by k,b DIR/runs pub:spin,pub2,spin2:ss-main
#          DIR/runs/ph_pub/phases.md against DIR/runs/ph_spin/phases.md: compare hand-off +
#          verify (the spin form marks its hand-off before the wait, the default after it)
# The spin form becomes the default if it wins >= 1 % in both rounds with no (K, B) group
# below 0.99 and the certify is exact.
set -u
: "${OUT:?set OUT}"
B="${GVR_BIN:-target/release/gvr-bench}"
G="--grid grids/dsa886.csv"
S="grid $G --batches 1,2,4,8,16,32 --n-min 100000 --arms ss-main,radix"
M=GVR_SS_MAIN_DEFINES
SPIN=SS_HANDOFF_SPIN=1
PH="phases $G --arms ss-main --batches 1,2,4,8 --n-min 100000 --sample 48 --reps 5"
EXPERIMENTS="pub|-|$S
spin|$M=$SPIN|$S
pub2|-|$S
spin2|$M=$SPIN|$S
ph_pub|-|$PH --out /tmp/experiments/runs/ph_pub
ph_spin|$M=$SPIN|$PH --out /tmp/experiments/runs/ph_spin
cert|$M=$SPIN|certify --arms ss-main --poison-pad $G --batches 1,2,4,8,16,32 --n-min 100000 --sample 60 --soak ${SOAK:-60} --soak-seed 7401"
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
    env "$M=$SPIN" timeout 20 compute-sanitizer --tool "$tool" --error-exitcode 9 "$B" certify \
      --captures "${CAPS:-/tmp/gvr-caps}" --cells "$cell" --batches 2 --arms ss-main --no-adversarial \
      >> "$OUT/sanitize.log" 2>&1
    echo "   rc=$?" | tee -a "$OUT/sanitize.log"
  done
done
