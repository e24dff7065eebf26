#!/usr/bin/env bash
# One H200 device call: the wave stagger on shorter rows (kernels/TUNING.md 2026-12-05g).
# The H100's same-run A/B of 5939d81 against b3724ed (reports/h100/2026-12-05g) found
# v32 32,783 x B 512 (BLK 512, 1.94 waves) 2 % slower with the stagger and B 1,024 2 %
# faster; the 2026-12-05f sweeps measured N >= 60K only. ss-main against radix on the same
# inputs, the stagger off as base (and again as A/A): the default (36,000 cycles flat), half
# of it (18,000), and a delay proportional to the row (1 + 36,000 per 64K: 18,000 at 32K,
# the default's at 65K, twice it at 131K) on every v32 32K cell at B 512 and 1,024, then
# the N >= 60K check of the proportional delay. Packed into $OUT/experiments.tgz.
#
# Usage (device): OUT=$OUT GVR_BIN=devbin/x/gvr-bench [BUDGET_S=300] bash scripts/h200_stagger_call.sh
# Locally: scripts/ab_compare.py --by variant,n,b DIR/runs off:on,half,prop,off2,on2,half2,prop2:ss-main
#          scripts/ab_compare.py --by variant,n,b DIR/runs l_off:l_on,l_prop:ss-main
# Keep what wins by >= 1 % over `on` with no (N, B) cell below 0.98.
set -u
: "${OUT:?set OUT}"
B="${GVR_BIN:-target/release/gvr-bench}"
G="--grid grids/dsa886.csv --segment v32 --batches 512,1024 --arms ss-main,radix"
S="grid $G --n-min 30000 --n-max 40000"
L="grid $G --n-min 60000 --sample ${SAMPLE:-240}"
M=GVR_SS_MAIN_DEFINES
OFF=SS_WAVE_STAGGER=0
HALF=SS_WAVE_STAGGER=18000
# The entry skips the stagger when SS_WAVE_STAGGER is 0, so the proportional delay keeps a 1-cycle base.
PROP=SS_WAVE_STAGGER=1,SS_WAVE_PER_64K=36000
# Base, default and the candidates first, their repeats next: a tight budget skips the
# long-row check, not the second round.
EXPERIMENTS="off|$M=$OFF|$S
on|-|$S
half|$M=$HALF|$S
prop|$M=$PROP|$S
off2|$M=$OFF|$S
on2|-|$S
half2|$M=$HALF|$S
prop2|$M=$PROP|$S
l_off|$M=$OFF|$L
l_on|-|$L
l_prop|$M=$PROP|$L"
EXPERIMENTS="$EXPERIMENTS" OUT="$OUT" GVR_BIN="$B" BUDGET_S="${BUDGET_S:-300}" \
  bash scripts/h200_experiments.sh > /dev/null 2>&1
grep -E "^== |rc=" /tmp/experiments/experiments.log | tr '\n' ' '
