#!/usr/bin/env bash
# session-local: is clus cl2 slower than at 5939d81 (same card)? ss-clus on the clus set,
# new / old / new2 / old2 / new3 / old3.
set -u
B="$PWD/devbin/x/gvr-bench"; O="$PWD/devbin/x/gvr-bench-OLD"
S="grid --grid grids/dsa886.csv --batches 1,2,4,8,16,32 --n-min 32768 --sample 600 --arms ss-clus,radix"
EXPERIMENTS="new|-|$S
old|-|$S|$O
new2|-|$S
old2|-|$S|$O
new3|-|$S
old3|-|$S|$O"
EXPERIMENTS="$EXPERIMENTS" OUT="$OUT" GVR_BIN="$B" BUDGET_S="${BUDGET_S:-200}" \
  bash scripts/h200_experiments.sh > /dev/null 2>&1
grep -E "^== |rc=" /tmp/experiments/experiments.log | tr '\n' ' '
