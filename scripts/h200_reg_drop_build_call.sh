#!/usr/bin/env bash
# One H200 device call: the 1024/1 entry built with the drop-few code (route::dispatch::
# reg_drop_few since 2026-12-05h) against the length rule it replaced. On the H100
# (reports/h100/2026-12-05h) the built-in code was +0.9 % on the entry in two rounds, +0.4
# to +1.7 % at every B 1-128, though its rows (N ~ 4K) never take the path; the H200 lost
# 0.989-0.992 on that entry when the code left it (2026-12-04h). ss-reg against radix on
# the reg cells of N 3,000-17,500 at B 1-256 (no row there is within k + 4, so
# `SS_REG_DROP_MAX=0` changes the 1024/1 launches only): the default (`on`) against the
# code built out (`off`), two rounds. Packed into $OUT/experiments.tgz.
#
# Usage (device): OUT=$OUT GVR_BIN=devbin/x/gvr-bench [BUDGET_S=150] bash scripts/h200_reg_drop_build_call.sh
# Locally: scripts/ab_compare.py --by variant,b DIR/runs off:on,off2,on2:ss-reg
# The rule stays if reg/blk1024/v1 is not slower than `off` in either round (>= 0.995)
# with no (entry, B) cell below 0.98; otherwise the H200 gets its own rule.
set -u
: "${OUT:?set OUT}"
B="${GVR_BIN:-target/release/gvr-bench}"
S="grid --grid grids/dsa886.csv --n-min 3000 --n-max 17500 --batches 1,2,4,8,16,32,64,128,256 --sample ${SAMPLE:-400} --arms ss-reg,radix"
R=GVR_SS_REG_DEFINES
OUT_OF_BUILD=SS_REG_DROP_MAX=0
EXPERIMENTS="off|$R=$OUT_OF_BUILD|$S
on|-|$S
off2|$R=$OUT_OF_BUILD|$S
on2|-|$S"
EXPERIMENTS="$EXPERIMENTS" OUT="$OUT" GVR_BIN="$B" BUDGET_S="${BUDGET_S:-150}" \
  bash scripts/h200_experiments.sh > /dev/null 2>&1
grep -E "^== |rc=" /tmp/experiments/experiments.log | tr '\n' ' '
