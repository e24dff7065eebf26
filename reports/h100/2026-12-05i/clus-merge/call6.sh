#!/usr/bin/env bash
# session-local: ss-clus of 5407d7b (cand: merge form per launch), 5939d81 (old), 6e2394e
# (mid: warp-0 only, refactored), 26eadc2 (new: runtime choice) on the clus set, two rounds;
# certify of cand.
set -u
X="$PWD/devbin/x"
S="grid --grid grids/dsa886.csv --batches 1,2,4,8,16,32 --n-min 32768 --sample 600 --arms ss-clus,radix"
EXPERIMENTS="cand|-|$S
old|-|$S|$X/gvr-bench-OLD
new|-|$S|$X/gvr-bench-NEW
mid|-|$S|$X/gvr-bench-MID
cand2|-|$S
old2|-|$S|$X/gvr-bench-OLD
new2|-|$S|$X/gvr-bench-NEW
mid2|-|$S|$X/gvr-bench-MID
cert|-|certify --arms ss,ss-clus,ss-varlen --poison-pad --grid grids/dsa886.csv --batches 1,2,4,8,16,32 --n-min 32768 --sample 60 --soak 30 --soak-seed 7501"
EXPERIMENTS="$EXPERIMENTS" OUT="$OUT" GVR_BIN="$X/gvr-bench" BUDGET_S="${BUDGET_S:-170}" \
  bash scripts/h200_experiments.sh > /dev/null 2>&1
grep -E "^== |rc=" /tmp/experiments/experiments.log | tr '\n' ' '
tail -8 /tmp/experiments/experiments.log
