#!/usr/bin/env bash
# One device call: clus with its winners' output stores deferred past the exit rendezvous's
# arrival (CL_DEFER_OUT=1, kernels/ss_clus_stream.cu). The profile of v32 65,551 x B 1
# (reports/h100/2026-12-06c/ncu-smallb) puts 24 % of clus's stall samples at cluster
# barriers, 10.7 % at ERRBAR — the arrival's release waiting for the thread's stores in
# flight, the emit's global output stores included, although only the DSMEM candidates must
# reach rank 0. Deferred, a rank with a complete list keeps (slot, index) in place of its
# list entries and stores them between arrive and wait, under the other ranks' arrivals and
# rank 0's refine. Prediction: +2 to +5 % on clus launches at B 1-8 (one L2 store round
# trip, ~0.5 us, of ~10 us), less at B 16-32. ss-clus against radix on the clus set (B 1-32,
# N >= 32K), base / defer twice, then certify of the defer build (poisoned pads, soak).
# Packed into $OUT/experiments.tgz.
#
# Usage (device): OUT=$OUT GVR_BIN=devbin/x/gvr-bench [BUDGET_S=240] bash scripts/h200_clus_defer_call.sh
# Locally: scripts/ab_compare.py --by variant,b DIR/runs base:defer,base2,defer2:ss-clus
# Kept as the default if it gains >= 1 % in both rounds with no variant x B group below 0.99.
set -u
: "${OUT:?set OUT}"
B="${GVR_BIN:-target/release/gvr-bench}"
G="--grid grids/dsa886.csv"
S="grid $G --batches 1,2,4,8,16,32 --n-min 32768 --sample ${SAMPLE:-400} --arms ss-clus,radix"
C=GVR_SS_CLUS_DEFINES
EXPERIMENTS="base|-|$S
defer|$C=CL_DEFER_OUT=1|$S
base2|-|$S
defer2|$C=CL_DEFER_OUT=1|$S
cert|$C=CL_DEFER_OUT=1|certify --arms ss-clus --poison-pad $G --batches 1,2,4,8,16,32 --n-min 32768 --sample 60 --soak ${SOAK:-20} --soak-seed 7701"
EXPERIMENTS="$EXPERIMENTS" OUT="$OUT" GVR_BIN="$B" BUDGET_S="${BUDGET_S:-240}" \
  bash scripts/h200_experiments.sh > /dev/null 2>&1
grep -E "^== |rc=" /tmp/experiments/experiments.log | tr '\n' ' '
