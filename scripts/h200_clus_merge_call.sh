#!/usr/bin/env bash
# One device call: the clus merge spread over the CTA (CL_MERGE_WARPS=1, kernels/
# ss_clus_stream.cu `cl_merge_spread`) against the default warp-0 merge. In the default
# SASS a cluster of 8 waits on four dependent DSMEM round trips in warp 0; the knob issues
# every rank's bin load at once (one round trip) for two more CTA barriers. Prediction:
# -0.3 to -0.6 us of the 1.6 us verify phase of cl8 at B 1-8 (clus N <= 64K chain ~9 us:
# +3 to +6 %), less on cl2 / cl4. ss-clus against radix on the clus set (B 1-32, N >= 32K,
# 600 cases), default and knob twice, then a certify of the knob build (poisoned pads,
# soak). Packed into $OUT/experiments.tgz.
#
# Usage (device): OUT=$OUT GVR_BIN=devbin/x/gvr-bench [BUDGET_S=200] bash scripts/h200_clus_merge_call.sh
# Locally: scripts/ab_compare.py --by variant,b DIR/runs base:spread,base2,spread2:ss-clus
# Default on if it wins >= 1 % in both rounds with no (variant, B) group below 0.99.
set -u
: "${OUT:?set OUT}"
B="${GVR_BIN:-target/release/gvr-bench}"
G="--grid grids/dsa886.csv"
S="grid $G --batches 1,2,4,8,16,32 --n-min 32768 --sample ${SAMPLE:-600} --arms ss-clus,radix"
C=GVR_SS_CLUS_DEFINES
SPREAD=CL_MERGE_WARPS=1
EXPERIMENTS="base|-|$S
spread|$C=$SPREAD|$S
base2|-|$S
spread2|$C=$SPREAD|$S
cert|$C=$SPREAD|certify --arms ss-clus --poison-pad $G --batches 1,2,4,8,16,32 --n-min 32768 --sample 60 --soak ${SOAK:-60} --soak-seed 7301"
EXPERIMENTS="$EXPERIMENTS" OUT="$OUT" GVR_BIN="$B" BUDGET_S="${BUDGET_S:-200}" \
  bash scripts/h200_experiments.sh > /dev/null 2>&1
grep -E "^== |rc=" /tmp/experiments/experiments.log | tr '\n' ' '
