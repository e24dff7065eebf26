#!/usr/bin/env bash
# One device call: the clus merge spread over the CTA from 4 ranks (the default
# CL_MERGE_SPREAD_FROM=4, kernels/ss_clus_stream.cu `cl_merge_spread`) against no spread
# (=16) and spread from 8 ranks only (=8). In the warp-0 SASS a cluster of 8 waits on four
# dependent DSMEM round trips; the spread issues every rank's bin load at once (one round
# trip) for two more CTA barriers. Measured on an H100 (2026-12-05i, spread at every size
# against none, two rounds): cl8 +6.6 to +8.7 %, cl4 +0.6 to +1.4 %, cl2 -0.2 to -0.8 %.
# Prediction: the same per size, and =8 below the default by ~1 % on the cl4 groups only.
# ss-clus against radix on the clus set (B 1-32, N >= 32K, 600 cases), three builds twice,
# then a certify of the default build (poisoned pads, soak). Packed into
# $OUT/experiments.tgz.
#
# Usage (device): OUT=$OUT GVR_BIN=devbin/x/gvr-bench [BUDGET_S=200] bash scripts/h200_clus_merge_call.sh
# Locally: scripts/ab_compare.py --by variant DIR/runs none:default,eight,none2,default2,eight2:ss-clus
# The default stays if it wins >= 1 % over none in both rounds with no variant group below 0.99.
set -u
: "${OUT:?set OUT}"
B="${GVR_BIN:-target/release/gvr-bench}"
G="--grid grids/dsa886.csv"
S="grid $G --batches 1,2,4,8,16,32 --n-min 32768 --sample ${SAMPLE:-600} --arms ss-clus,radix"
C=GVR_SS_CLUS_DEFINES
EXPERIMENTS="none|$C=CL_MERGE_SPREAD_FROM=16|$S
default|-|$S
eight|$C=CL_MERGE_SPREAD_FROM=8|$S
none2|$C=CL_MERGE_SPREAD_FROM=16|$S
default2|-|$S
eight2|$C=CL_MERGE_SPREAD_FROM=8|$S
cert|-|certify --arms ss,ss-clus --poison-pad $G --batches 1,2,4,8,16,32 --n-min 32768 --sample 60 --soak ${SOAK:-60} --soak-seed 7301"
EXPERIMENTS="$EXPERIMENTS" OUT="$OUT" GVR_BIN="$B" BUDGET_S="${BUDGET_S:-200}" \
  bash scripts/h200_experiments.sh > /dev/null 2>&1
grep -E "^== |rc=" /tmp/experiments/experiments.log | tr '\n' ' '
