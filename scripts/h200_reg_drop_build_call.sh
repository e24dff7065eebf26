#!/usr/bin/env bash
# One H200 device call: does building the drop-few code into reg launches whose rows
# never take it make them faster? b3724ed built it into every B <= 264 launch; 7f883a4
# builds it only where rows are within k + 4 (route::dispatch::reg_drop_few), and its
# 1024/1 entry measured 0.992 / 0.989 against b3724ed on the H200 (2026-12-04h) and
# 0.993 / 0.992 / 0.992 on the H100 (2026-12-05g). ss-reg against radix on the reg cells
# (N <= 17,500) at B 1-256: the rule's build (`rule`) against the path built into every
# entry that compiles it (`SS_REG_DROP_MAX=4`, the route's bound), two rounds.
# Packed into $OUT/experiments.tgz.
#
# Usage (device): OUT=$OUT GVR_BIN=devbin/x/gvr-bench [BUDGET_S=150] bash scripts/h200_reg_drop_build_call.sh
# Locally: scripts/ab_compare.py --by variant,b DIR/runs rule:built,rule2,built2:ss-reg
# A rule change needs >= 1 % on an entry in both rounds with no (entry, B) cell below 0.98.
set -u
: "${OUT:?set OUT}"
B="${GVR_BIN:-target/release/gvr-bench}"
S="grid --grid grids/dsa886.csv --n-max 17500 --batches 1,2,4,8,16,32,64,128,256 --sample ${SAMPLE:-400} --arms ss-reg,radix"
R=GVR_SS_REG_DEFINES
BUILT=SS_REG_DROP_MAX=4
EXPERIMENTS="rule|-|$S
built|$R=$BUILT|$S
rule2|-|$S
built2|$R=$BUILT|$S"
EXPERIMENTS="$EXPERIMENTS" OUT="$OUT" GVR_BIN="$B" BUDGET_S="${BUDGET_S:-150}" \
  bash scripts/h200_experiments.sh > /dev/null 2>&1
grep -E "^== |rc=" /tmp/experiments/experiments.log | tr '\n' ' '
