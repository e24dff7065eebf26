#!/usr/bin/env bash
# One device call: the SPLIT hand-off with early arrival (SS_HANDOFF_EARLY=1, kernels/
# ss_main.cu) against the default. The phase probe puts 1.5-1.8 us of the B 1-8 chain
# (~10-11 us) in the hand-off: the offset atomic, the slab writes, a fence and the arrival
# atomic, each waited on by the last arriver (reports/h200/2026-12-05, TUNING.md
# 2026-12-05e). Arriving first takes one of those round trips and the fence off the last
# arriver's path: predicted -0.3 to -0.6 us, +3 to +5 % on SPLIT launches, less where the
# parts arrive together (the last one then waits for the others' publications).
# ss-main against radix on every SPLIT cell (B 1-32, N >= 100K), base and knob twice,
# the phases of both builds (B 1-8), then a certify of the knob build (poisoned pads,
# soak). Packed into $OUT/experiments.tgz.
#
# Usage (device): OUT=$OUT GVR_BIN=devbin/x/gvr-bench [BUDGET_S=300] bash scripts/h200_handoff_early_call.sh
# Locally: scripts/ab_compare.py --by k,b DIR/runs base:early,base2,early2:ss-main
#          DIR/runs/ph_base/phases.md against DIR/runs/ph_early/phases.md (the hand-off column)
# Keep it if it wins >= 1 % in both rounds with no (K, B) group below 0.99.
set -u
: "${OUT:?set OUT}"
B="${GVR_BIN:-target/release/gvr-bench}"
G="--grid grids/dsa886.csv"
S="grid $G --batches 1,2,4,8,16,32 --n-min 100000 --arms ss-main,radix"
M=GVR_SS_MAIN_DEFINES
EARLY=SS_HANDOFF_EARLY=1
PH="phases $G --arms ss-main --batches 1,2,4,8 --n-min 100000 --sample 48 --reps 5"
EXPERIMENTS="base|-|$S
early|$M=$EARLY|$S
base2|-|$S
early2|$M=$EARLY|$S
ph_base|-|$PH --out /tmp/experiments/runs/ph_base
ph_early|$M=$EARLY|$PH --out /tmp/experiments/runs/ph_early
cert|$M=$EARLY|certify --arms ss-main --poison-pad $G --batches 1,2,4,8,16,32 --n-min 100000 --sample 60 --soak ${SOAK:-60} --soak-seed 7101"
EXPERIMENTS="$EXPERIMENTS" OUT="$OUT" GVR_BIN="$B" BUDGET_S="${BUDGET_S:-300}" \
  bash scripts/h200_experiments.sh > /dev/null 2>&1
grep -E "^== |rc=" /tmp/experiments/experiments.log | tr '\n' ' '
