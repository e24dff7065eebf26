#!/usr/bin/env bash
# One device call: K 2,048 rows at B 64 split over two CTAs (GVR_SS_MAIN_R=2, SPLIT) against
# the route's one CTA per row (half the SMs idle). Measured before the early-arrival hand-off
# (kernels/TUNING.md, "main R = 2 at B 64"): K 2,048 1.027, below a rung; the hand-off since
# 2026-12-05h is ~0.3-0.5 us shorter (SPLIT +3.1 %), so R = 2 may now clear it. ss-main
# against radix on the v32 cells of N >= 64K at B 64 (K 2,048), default and R = 2 twice.
# Packed into $OUT/experiments.tgz.
#
# Usage (device): OUT=$OUT GVR_BIN=devbin/x/gvr-bench [BUDGET_S=120] bash scripts/h200_split_r2_call.sh
# Locally: scripts/ab_compare.py --by n DIR/runs one:two,one2,two2:ss-main
# A route rung (K 2,048, B 33-66, R = 2) needs >= 2 % in both rounds with no N below 0.98.
set -u
: "${OUT:?set OUT}"
B="${GVR_BIN:-target/release/gvr-bench}"
S="grid --grid grids/dsa886.csv --segment v32 --batches 64 --n-min 64000 --arms ss-main,radix"
EXPERIMENTS="one|-|$S
two|GVR_SS_MAIN_R=2|$S
one2|-|$S
two2|GVR_SS_MAIN_R=2|$S"
EXPERIMENTS="$EXPERIMENTS" OUT="$OUT" GVR_BIN="$B" BUDGET_S="${BUDGET_S:-120}" \
  bash scripts/h200_experiments.sh > /dev/null 2>&1
grep -E "^== |rc=" /tmp/experiments/experiments.log | tr '\n' ' '
