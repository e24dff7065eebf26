#!/usr/bin/env bash
# One device call: the BLK 512 many-rows entry bounded for three CTAs per SM instead of two.
# 2026-12-06b found resident warps worth more than loads in flight per warp (BLK 512's 32
# warps per SM beat every deeper BLK 256 pipeline by 8-13 %), and BLK 512 at 64 registers
# already holds the SM's whole register file. SS_B512_MINB 3 caps the entry at 40
# registers: 48 warps per SM where staging leaves room (K <= 1,024: 3 x 44 KB; K 2,048's
# 77 KB staging keeps two CTAs), with a U 4 (or U 2) pass — ptxas spills only outside the
# streaming loop (values live across it, the scan, the emit call). Prediction: +3 to +8 %
# at K <= 1,024 x B 512 / 1,024 (a third row's stream under each CTA's fixed phases), a
# loss at B 256 (two CTAs per SM either way, half the bytes in flight per thread) and at
# K 2,048 (two CTAs per SM at 40 registers).
# ss-main against radix on B 256 / 512 / 1,024 x N >= 30K (every model): the route (twice)
# and BLK 512 forced as bases; MINB 3 at U 4 PFD 0 (twice), U 4 PFD 3, U 2.
#
# Usage (device): OUT=$OUT GVR_BIN=devbin/x/gvr-bench [BUDGET_S=300] bash scripts/h200_b512_minb3_call.sh
# Locally: scripts/ab_compare.py --by b,k DIR/runs route:b512,m3u4,m3u4p,m3u2,route2,m3u42:ss-main
# Kept (for the launches where it wins) if it gains >= 2 % in both rounds with no (N, B)
# group below 0.98 there.
set -u
: "${OUT:?set OUT}"
B="${GVR_BIN:-target/release/gvr-bench}"
S="grid --grid grids/dsa886.csv --batches 256,512,1024 --n-min 30000 --sample ${CASES:-450} --arms ss-main,radix"
M=GVR_SS_MAIN_DEFINES
F=GVR_SS_MAIN_BLK
U4=SS_B512_MINB=3,SS_ROW_U=4,SS_PFD=0
U4P=SS_B512_MINB=3,SS_ROW_U=4
U2=SS_B512_MINB=3,SS_ROW_U=2
EXPERIMENTS="route|-|$S
b512|$F=512|$S
m3u4|$M=$U4 $F=512|$S
m3u4p|$M=$U4P $F=512|$S
m3u2|$M=$U2 $F=512|$S
route2|-|$S
m3u42|$M=$U4 $F=512|$S"
EXPERIMENTS="$EXPERIMENTS" OUT="$OUT" GVR_BIN="$B" BUDGET_S="${BUDGET_S:-300}" \
  bash scripts/h200_experiments.sh > /dev/null 2>&1
grep -E "^== |rc=" /tmp/experiments/experiments.log | tr '\n' ' '
