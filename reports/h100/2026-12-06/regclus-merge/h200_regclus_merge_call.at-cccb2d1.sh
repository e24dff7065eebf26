#!/usr/bin/env bash
# One device call: reg_clus's merge with a bin of all eight ranks read as eight predicated
# DSMEM loads (`GVR_SS_REGCLUS_DEFINES=RC_MERGE_FIXED=1`, kernels/ss_clus.cu) against the
# default loop over min(CS, 8) ranks, which ptxas unrolls into batches of 16, 8 and 4 and a
# one-at-a-time remainder (nvdisasm: clusters of 8 and 4 load in one batch, a cluster of 2
# in two dependent round trips; the fixed form has 184-192 fewer static instructions and
# 50-57 registers instead of 64 in ss_regclus_v1/v2/v4); =2 also adds the lower ranks'
# sums in the scan's cursor writes (one pass over the bins and one CTA barrier less).
# reg_clus's verify phase (merge + scan) was 2.3 us of an 8.1 us chain at B = 1 (2026-12-05
# phases). Prediction: +1 to +2 % on rc2 groups (one DSMEM round trip, ~0.2 us), under 1 %
# on rc4 / rc8 (instructions only); =2 a further +0.5 % everywhere. ss-regclus against radix
# on the reg_clus set (B 1-64, N 16K-140K, 500 cases), three builds twice, then a certify
# of both knob builds (poisoned pads, soak).
# Packed into $OUT/experiments.tgz.
#
# Usage (device): OUT=$OUT GVR_BIN=devbin/x/gvr-bench [BUDGET_S=200] bash scripts/h200_regclus_merge_call.sh
# Locally: scripts/ab_compare.py --by variant DIR/runs loop:fixed,fold,loop2,fixed2,fold2:ss-regclus
# The knob becomes the default if it wins >= 1 % in both rounds with no variant group below 0.99.
set -u
: "${OUT:?set OUT}"
B="${GVR_BIN:-target/release/gvr-bench}"
G="--grid grids/dsa886.csv"
SEL="$G --batches 1,2,4,8,16,32,64 --n-min 16384 --n-max 140000"
S="grid $SEL --sample ${SAMPLE:-500} --arms ss-regclus,radix"
C=GVR_SS_REGCLUS_DEFINES
CERT="certify --arms ss-regclus --poison-pad $SEL --sample 60 --soak ${SOAK:-60} --soak-seed 7302"
EXPERIMENTS="loop|-|$S
fixed|$C=RC_MERGE_FIXED=1|$S
fold|$C=RC_MERGE_FIXED=2|$S
loop2|-|$S
fixed2|$C=RC_MERGE_FIXED=1|$S
fold2|$C=RC_MERGE_FIXED=2|$S
cert|$C=RC_MERGE_FIXED=1|$CERT
cert2|$C=RC_MERGE_FIXED=2|$CERT"
EXPERIMENTS="$EXPERIMENTS" OUT="$OUT" GVR_BIN="$B" BUDGET_S="${BUDGET_S:-200}" \
  bash scripts/h200_experiments.sh > /dev/null 2>&1
grep -E "^== |rc=" /tmp/experiments/experiments.log | tr '\n' ' '
