#!/usr/bin/env bash
# One H200 device call: the BLK 256 many-rows entry with the registers its residency leaves
# free. ss_main_b256_u8 is built for four CTAs per SM (`__launch_bounds__(256, 4)`: 64
# registers), so under the cap its U = 8 pass carries nothing across the survivor walk (PFD 0:
# no loads in flight while a warp walks). A one-wave launch (B <= 2 x SMs) holds only two
# CTAs per SM, and K 2,048's staging holds three: there SS_B256_MINB 2 (ptxas: 102
# registers with the whole next tile, SS_B256_PFD 8, no spills) or 3 (80 registers with
# half of it, PFD 4) costs no residency. GVR_SS_MAIN_BLK=256 puts every one-CTA-per-row U 8
# launch on that entry (the route puts B <= 264 on BLK 512 at 64 registers, two CTAs per
# SM). Prediction: at B 256 (one wave) the pass keeps 16 warps x 4 KB in flight through
# the walk: +3 to +8 % over the route's BLK 512 at N >= 64K; at B 512 / 1,024 a smaller
# gain, or a loss where the fewer CTAs per SM cost more than the overlap.
# ss-main against radix on a spread sample of B 256 / 512 / 1,024 cases with N >= 30K
# (every model): the route's blocks as base (twice), both blocks forced with the default
# registers, and the register builds (MINB 2 PFD 8 twice, MINB 3 PFD 4 twice, and MINB 2
# PFD 8 with BLK 512's wave stagger, which then counts two CTAs per SM). Packed into
# $OUT/experiments.tgz.
#
# Usage (device): OUT=$OUT GVR_BIN=devbin/x/gvr-bench [BUDGET_S=420] bash scripts/h200_b256_regs_call.sh
# Locally: scripts/ab_compare.py --by b,n DIR/runs base:b512,b256,m2p8,m2p8s,m3p4,base2,m2p82,m3p42:ss-main
# A build is kept (for the launches where it wins) if it gains >= 2 % in both rounds with
# no (N, B) group below 0.98 there.
set -u
: "${OUT:?set OUT}"
B="${GVR_BIN:-target/release/gvr-bench}"
S="grid --grid grids/dsa886.csv --batches 256,512,1024 --n-min 30000 --sample ${CASES:-150} --arms ss-main,radix"
M=GVR_SS_MAIN_DEFINES
F=GVR_SS_MAIN_BLK
EXPERIMENTS="base|-|$S
b512|$F=512|$S
b256|$F=256|$S
m2p8|$F=256 $M=SS_B256_MINB=2,SS_B256_PFD=8|$S
m2p8s|$F=256 $M=SS_B256_MINB=2,SS_B256_PFD=8,SS_WAVE_STAGGER_256=36000|$S
m3p4|$F=256 $M=SS_B256_MINB=3,SS_B256_PFD=4|$S
base2|-|$S
m2p82|$F=256 $M=SS_B256_MINB=2,SS_B256_PFD=8|$S
m3p42|$F=256 $M=SS_B256_MINB=3,SS_B256_PFD=4|$S"
EXPERIMENTS="$EXPERIMENTS" OUT="$OUT" GVR_BIN="$B" BUDGET_S="${BUDGET_S:-420}" \
  bash scripts/h200_experiments.sh > /dev/null 2>&1
grep -E "^== |rc=" /tmp/experiments/experiments.log | tr '\n' ' '
