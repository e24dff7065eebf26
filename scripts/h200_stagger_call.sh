#!/usr/bin/env bash
# One H200 device call: the wave stagger scaled down on rows shorter than 65,536 values
# (SS_WAVE_FULL_N, the default since 2026-12-05h). On the H100 (reports/h100/2026-12-05h,
# two rounds) v32 32,783 x B 512 (BLK 512, 1.94 waves) ran 2.5 % slower with the flat
# 36,000-cycle delay than without one, and 3.4 % faster with half of it; B 1,024 +1.2 %
# flat, +4.9 % scaled. Rows of 65,536 and more are unchanged. ss-main against radix on
# every v32 32K cell at B 512 and 1,024, the stagger off as base (and again as A/A): the
# default (`on`, scaled: 18,008 cycles at 32,783) and the flat delay (`flat`,
# SS_WAVE_FULL_N=0, 5939d81's code). Packed into $OUT/experiments.tgz.
#
# Usage (device): OUT=$OUT GVR_BIN=devbin/x/gvr-bench [BUDGET_S=120] bash scripts/h200_stagger_call.sh
# Locally: scripts/ab_compare.py --by variant,n,b DIR/runs off:on,flat,off2,on2,flat2:ss-main
# The scaled delay stays if it beats `flat` in both rounds with no (N, B) cell below 0.98
# against `off`.
set -u
: "${OUT:?set OUT}"
B="${GVR_BIN:-target/release/gvr-bench}"
S="grid --grid grids/dsa886.csv --segment v32 --batches 512,1024 --arms ss-main,radix --n-min 30000 --n-max 40000"
M=GVR_SS_MAIN_DEFINES
OFF=SS_WAVE_STAGGER=0
FLAT=SS_WAVE_FULL_N=0
EXPERIMENTS="off|$M=$OFF|$S
on|-|$S
flat|$M=$FLAT|$S
off2|$M=$OFF|$S
on2|-|$S
flat2|$M=$FLAT|$S"
EXPERIMENTS="$EXPERIMENTS" OUT="$OUT" GVR_BIN="$B" BUDGET_S="${BUDGET_S:-120}" \
  bash scripts/h200_experiments.sh > /dev/null 2>&1
grep -E "^== |rc=" /tmp/experiments/experiments.log | tr '\n' ' '
