#!/usr/bin/env bash
# One device call: the SPLIT finisher's batched wait (SS_SLAB_WAIT_BATCH 2 / 4 / 8, kernels/ss_main.cu)
# against the default (1: each of a thread's slab words waited for in turn, then binned). The
# last arriver of the spin hand-off reads the other parts' flagged words as they land; with a
# batch of W a thread loads W words (one L2 round trip when they have landed) before it uses
# the first, and waits alone only on a word still zero. Built 2026-12-05j, emulator-tested
# (every part interleaved, batch 4); measured on an H100 (2026-12-06): batch 4 1.014 / 1.018
# on SPLIT launches (K >= 1,024 B 1-8 +1.8 to +3.7 %, no K x B group below 0.996). The publication form's batch of 8 measured
# +0.5-0.7 % at K 2,048 and -3 % at K 512 (2026-12-05b): a win at K 2,048 only needs a
# per-launch build, as clus's merge spread has. ss-main against radix on every SPLIT cell
# (B 1-32, N >= 100K), twice each; a certify of the default and of batch 4 (poisoned pads,
# soak). Packed into $OUT/experiments.tgz. Then compute-sanitizer memcheck / racecheck /
# synccheck of the default on two SPLIT cases (K 2,048 and K 512, B 2) into $OUT/sanitize.log
# (each case takes seconds; SAN_S of the budget is kept for them).
#
# Usage (device): OUT=$OUT GVR_BIN=devbin/x/gvr-bench [BUDGET_S=300] bash scripts/h200_slab_wait_call.sh
# Locally: scripts/ab_compare.py --by k,b DIR/runs base:b2,b4,b8,base2,b22,b42,b82:ss-main
# A batch is kept where it gains >= 2 % in both rounds (by K: a per-launch build).
set -u
: "${OUT:?set OUT}"
B="${GVR_BIN:-target/release/gvr-bench}"
G="--grid grids/dsa886.csv"
S="grid $G --batches 1,2,4,8,16,32 --n-min 100000 --arms ss-main,radix"
M=GVR_SS_MAIN_DEFINES
EXPERIMENTS="base|-|$S
b2|$M=SS_SLAB_WAIT_BATCH=2|$S
b4|$M=SS_SLAB_WAIT_BATCH=4|$S
b8|$M=SS_SLAB_WAIT_BATCH=8|$S
base2|-|$S
b22|$M=SS_SLAB_WAIT_BATCH=2|$S
b42|$M=SS_SLAB_WAIT_BATCH=4|$S
b82|$M=SS_SLAB_WAIT_BATCH=8|$S
cert|-|certify --arms ss,ss-main,ss-varlen,ss-varlen-hints --poison-pad $G --batches 1,2,4,8,16,32 --n-min 100000 --sample 60 --soak ${SOAK:-60} --soak-seed 7401
cert4|$M=SS_SLAB_WAIT_BATCH=4|certify --arms ss-main --poison-pad $G --batches 1,2,4,8,16,32 --n-min 100000 --sample 60 --soak ${SOAK:-60} --soak-seed 7402"
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
