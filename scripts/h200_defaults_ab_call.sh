#!/usr/bin/env bash
# One H200 device call after a change of kernel defaults (kernels/TUNING.md 2026-12-05e):
# the dispatching `ss` arm of the new binary against the old one on the same inputs (a
# spread sample of the dsa886 grid, each run with its own radix; old and new twice, as A/A),
# a one-CTA check of the knobs the new defaults keep to the SPLIT entries, and a certify
# (poisoned pads + soak) of the new defaults. Everything is packed into $OUT/experiments.tgz.
#
# Usage (device, after unpacking both binaries):
#   OUT=$OUT GVR_BIN=devbin/x/gvr-bench OLD_BIN=devbin/x/gvr-bench-OLD \
#     [SAMPLE=3000] [BATCHES=1,2,4] [SOAK=100] [BUDGET_S=430] bash scripts/h200_defaults_ab_call.sh
# On a fresh machine each binary's first run compiles its kernels (~70 s each).
# Locally: scripts/ab_compare.py --by k,b DIR/runs old:new,old2,new2:ss
#          scripts/ab_compare.py --by k,b DIR/runs o_split:o_all:ss-main
set -u
: "${OUT:?set OUT}" "${OLD_BIN:?set OLD_BIN (the binary before the change)}"
B="${GVR_BIN:-target/release/gvr-bench}"
G="--grid grids/dsa886.csv"
W="grid $G --arms ss,radix --sample ${SAMPLE:-3000}${BATCHES:+ --batches $BATCHES}"
# The one-CTA entries at B 1-128 (BLK 1,024 and the big-B ones in between), where the
# counted scan and the trimmed threshold phase were not measured on their own.
O="grid $G --batches 1,4,16,64,128 --sample 400 --arms ss-main,radix"
M=GVR_SS_MAIN_DEFINES
ALL=SS_SCAN_FORM=3,SS_THRESHOLD_TRIM=3
# The A/B and its repeat first: a tight BUDGET_S skips the checks, not the second round.
EXPERIMENTS="new|-|$W
old|-|$W|$OLD_BIN
old2|-|$W|$OLD_BIN
new2|-|$W
cert|-|certify --arms ss,ss-main,ss-reg,ss-clus --poison-pad $G --sample 30 --soak ${SOAK:-100} --soak-seed 7003
o_all|$M=$ALL|$O
o_split|-|$O"
EXPERIMENTS="$EXPERIMENTS" OUT="$OUT" GVR_BIN="$B" BUDGET_S="${BUDGET_S:-430}" \
  bash scripts/h200_experiments.sh > /dev/null 2>&1
grep -E "^== |rc=" /tmp/experiments/experiments.log | tr '\n' ' '
