#!/usr/bin/env bash
# One device call: how fast can one CTA per row stream a row when the bytes in flight are
# set by a shared-memory ring of bulk copies (TMA, `floor_ring`) instead of registers?
# The floor's register streaming reads at only 63-64 % of 4.49 TB/s at 65K x B 256 and
# ss's pass sits near it; if a ring streams markedly faster on the shapes of the bandwidth
# target (B >= 256 x N >= 64K), a ring-fed pass for ss-main is worth building. Rings sized
# for what ss-main's BLK 512 staging leaves (two CTAs per SM: K <= 1,024 ~72 KB per CTA,
# K 2,048 ~40 KB) and larger ones, beside the register floor at BLK 512 (ss's block).
# First the GPU test of every floor shape including rings (floor_gpu, carried binary).
#
# Usage (device): OUT=$OUT GVR_BIN=devbin/x/gvr-bench FLOOR_TEST=devbin/x/floor_gpu \
#   [BUDGET_S=200] bash scripts/h200_floor_ring_call.sh
# Locally: python3 over runs/ring/floor.jsonl (each record's `tried`, mean cold µs per shape).
set -u
: "${OUT:?set OUT}"
B="${GVR_BIN:-target/release/gvr-bench}"
mkdir -p /tmp/experiments
if [ -n "${FLOOR_TEST:-}" ]; then
  GVR_GPU_TESTS=1 LD_LIBRARY_PATH=/usr/local/cuda/lib64 "$FLOOR_TEST" --include-ignored --nocapture \
    > "$OUT/floor_gpu.log" 2>&1
  echo "floor_gpu rc=$?"
fi
RINGS=b512,b512:4x16384,b512:4x8192,b512:2x16384,b512:6x16384,b512:3x32768,b512:8x8192,b256:4x16384,b256:8x8192,b1024:4x32768,b1024:6x32768
S="grid --grid grids/dsa886.csv --batches 256,512,1024 --n-min 60000 --sample 90 --arms ss,radix --floor"
EXPERIMENTS="ring|GVR_FLOOR_EXTRA=$RINGS|$S"
EXPERIMENTS="$EXPERIMENTS" OUT="$OUT" GVR_BIN="$B" BUDGET_S="${BUDGET_S:-200}" \
  bash scripts/h200_experiments.sh > /dev/null 2>&1
grep -E "^== |rc=" /tmp/experiments/experiments.log | tr '\n' ' '
