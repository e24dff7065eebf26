#!/usr/bin/env bash
# One device call: the clus merge spread over the CTA for clusters of 8 (the host's
# default, `MERGE_SPREAD_FROM_CS`; kernels/ss_clus_stream.cu `CL_MERGE_SPREAD`) against the
# warp-0 merge everywhere (CL_MERGE_SPREAD=0) and the spread everywhere (=1). In the warp-0
# SASS a cluster of 8 waits on four dependent DSMEM round trips; the spread issues every
# rank's bin load at once (one round trip) for two more CTA barriers. Measured on an H100
# (2026-12-05i, spread everywhere against warp 0): cl8 +5.8 to +8.3 %, cl4 -1.3 to +0.7 %,
# cl2 -1.5 to -2.7 %. Prediction: the default equals the spread on cl8 groups and warp 0 on
# cl2 / cl4 groups. ss-clus against radix on the clus set (B 1-32, N >= 32K, 600 cases),
# three builds twice, then a certify of the default (poisoned pads, soak). Packed into
# $OUT/experiments.tgz.
#
# Usage (device): OUT=$OUT GVR_BIN=devbin/x/gvr-bench [BUDGET_S=200] bash scripts/h200_clus_merge_call.sh
# Locally: scripts/ab_compare.py --by variant DIR/runs warp0:default,spread,warp02,default2,spread2:ss-clus
# The default stays if it wins >= 1 % over warp0 in both rounds with no variant group below 0.99.
set -u
: "${OUT:?set OUT}"
B="${GVR_BIN:-target/release/gvr-bench}"
G="--grid grids/dsa886.csv"
S="grid $G --batches 1,2,4,8,16,32 --n-min 32768 --sample ${SAMPLE:-600} --arms ss-clus,radix"
C=GVR_SS_CLUS_DEFINES
EXPERIMENTS="warp0|$C=CL_MERGE_SPREAD=0|$S
default|-|$S
spread|$C=CL_MERGE_SPREAD=1|$S
warp02|$C=CL_MERGE_SPREAD=0|$S
default2|-|$S
spread2|$C=CL_MERGE_SPREAD=1|$S
cert|-|certify --arms ss,ss-clus --poison-pad $G --batches 1,2,4,8,16,32 --n-min 32768 --sample 60 --soak ${SOAK:-60} --soak-seed 7301"
EXPERIMENTS="$EXPERIMENTS" OUT="$OUT" GVR_BIN="$B" BUDGET_S="${BUDGET_S:-200}" \
  bash scripts/h200_experiments.sh > /dev/null 2>&1
grep -E "^== |rc=" /tmp/experiments/experiments.log | tr '\n' ' '
