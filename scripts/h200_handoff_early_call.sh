#!/usr/bin/env bash
# One device call: the early-arrival SPLIT hand-off (SS_HANDOFF_EARLY=1, kernels/ss_main.cu,
# the default since 2026-12-05h) against the reserve-write-arrive form it replaced
# (SS_HANDOFF_EARLY=0). On the H100 (reports/h100/2026-12-05h/handoff_early, measured as a
# knob against that form): +3.1 / +3.2 % on SPLIT launches (B 1-32, N >= 100K; +5 % at B 1-2,
# +1.5 % at B 32), the last arriver's hand-off phase 1.85 -> 1.55 us. ss-main against radix
# on every SPLIT cell, the old form as base (and again as A/A), the default twice; the
# phases of both (B 1-8); a certify of the default (poisoned pads, soak). Packed into
# $OUT/experiments.tgz.
#
# Usage (device): OUT=$OUT GVR_BIN=devbin/x/gvr-bench [BUDGET_S=300] bash scripts/h200_handoff_early_call.sh
# Locally: scripts/ab_compare.py --by k,b DIR/runs late:early,late2,early2:ss-main
#          DIR/runs/ph_late/phases.md against DIR/runs/ph_early/phases.md (the hand-off column)
# The default stays if it wins >= 1 % in both rounds with no (K, B) group below 0.99.
set -u
: "${OUT:?set OUT}"
B="${GVR_BIN:-target/release/gvr-bench}"
G="--grid grids/dsa886.csv"
S="grid $G --batches 1,2,4,8,16,32 --n-min 100000 --arms ss-main,radix"
M=GVR_SS_MAIN_DEFINES
LATE=SS_HANDOFF_EARLY=0
PH="phases $G --arms ss-main --batches 1,2,4,8 --n-min 100000 --sample 48 --reps 5"
EXPERIMENTS="late|$M=$LATE|$S
early|-|$S
late2|$M=$LATE|$S
early2|-|$S
ph_late|$M=$LATE|$PH --out /tmp/experiments/runs/ph_late
ph_early|-|$PH --out /tmp/experiments/runs/ph_early
cert|-|certify --arms ss,ss-main --poison-pad $G --batches 1,2,4,8,16,32 --n-min 100000 --sample 60 --soak ${SOAK:-60} --soak-seed 7101"
EXPERIMENTS="$EXPERIMENTS" OUT="$OUT" GVR_BIN="$B" BUDGET_S="${BUDGET_S:-300}" \
  bash scripts/h200_experiments.sh > /dev/null 2>&1
grep -E "^== |rc=" /tmp/experiments/experiments.log | tr '\n' ' '
