#!/usr/bin/env bash
# One H200 device call: the wave stagger's next sweep (kernels/TUNING.md 2026-12-05f).
# ss-main against radix on the same inputs, the stagger off as base (and again as A/A):
# the default (BLK 512, 36,000 cycles from 1.9 waves), a delay that grows with the row
# (SS_WAVE_PER_64K), BLK 256's stagger from 1.9 and from 3 waves, and the threshold's
# edge (B 500-540 around 1.9-2.05 waves of BLK 512). Packed into $OUT/experiments.tgz.
#
# Usage (device): OUT=$OUT GVR_BIN=devbin/x/gvr-bench [BUDGET_S=430] bash scripts/h200_stagger_call.sh
# Locally: scripts/ab_compare.py --by variant,b DIR/runs off:on,p12,p8,b256,b256t,off2,on2,p12b:ss-main
#          scripts/ab_compare.py --by variant,b DIR/runs e_off:e_on,e_t21:ss-main
set -u
: "${OUT:?set OUT}"
B="${GVR_BIN:-target/release/gvr-bench}"
G="--grid grids/dsa886.csv --n-min 60000"
S="grid $G --batches 512,600,768,1024 --sample ${SAMPLE:-400} --arms ss-main,radix"
E="grid $G --batches 500,520,540 --sample 200 --arms ss-main,radix"
M=GVR_SS_MAIN_DEFINES
OFF=SS_WAVE_STAGGER=0
P12=SS_WAVE_STAGGER=24000,SS_WAVE_PER_64K=12000
P8=SS_WAVE_STAGGER=28000,SS_WAVE_PER_64K=8000
B256=SS_WAVE_STAGGER_256=24000
B256T=SS_WAVE_STAGGER_256=24000,SS_WAVE_MIN_TENTHS=30
T21=SS_WAVE_MIN_TENTHS=21
# Base, default and the row-scaled delay first, their repeats next: a tight budget skips
# the edge set, not the second round.
EXPERIMENTS="off|$M=$OFF|$S
on|-|$S
p12|$M=$P12|$S
p8|$M=$P8|$S
b256|$M=$B256|$S
b256t|$M=$B256T|$S
off2|$M=$OFF|$S
on2|-|$S
p12b|$M=$P12|$S
e_off|$M=$OFF|$E
e_on|-|$E
e_t21|$M=$T21|$E"
EXPERIMENTS="$EXPERIMENTS" OUT="$OUT" GVR_BIN="$B" BUDGET_S="${BUDGET_S:-430}" \
  bash scripts/h200_experiments.sh > /dev/null 2>&1
grep -E "^== |rc=" /tmp/experiments/experiments.log | tr '\n' ' '
