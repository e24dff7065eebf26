#!/usr/bin/env bash
# One device call, H200 only: the BLK 512 tie rule (d0244c0 + c5cb146) on the card it was
# tuned for. The rule moved every K <= 1,024 x B 512 / 1,024 launch of rows >= 32,768
# values from BLK 256 to BLK 512 (H100: +0 to +7 % on those launches, 1.006 / 1.007 routed).
# Those launches are exactly flash / pro x N >= 32K x B 512 / 1,024, so `ss-main` with
# GVR_SS_MAIN_BLK=256 is the old route's launch there and the default is the new one; no
# old binary is needed. On another card the call says so and exits (a few seconds).
#
# Usage (device): OUT=$OUT GVR_BIN=devbin/x/gvr-bench [BUDGET_S=200] bash scripts/h200_tie_rule_call.sh
# Locally: scripts/ab_compare.py --by b,n DIR/runs old:new,old2,new2:ss-main
set -u
: "${OUT:?set OUT}"
G=$(nvidia-smi --query-gpu=name,uuid --format=csv,noheader | head -1)
case "$G" in *H200*) ;; *) echo "skipped: $G is not an H200"; exit 0;; esac
B="${GVR_BIN:-target/release/gvr-bench}"
S="grid --grid grids/dsa886.csv --segment flash,pro --batches 512,1024 --n-min 32000 --sample 300 --arms ss-main,radix"
F=GVR_SS_MAIN_BLK
EXPERIMENTS="old|$F=256|$S
new|-|$S
old2|$F=256|$S
new2|-|$S"
EXPERIMENTS="$EXPERIMENTS" OUT="$OUT" GVR_BIN="$B" BUDGET_S="${BUDGET_S:-200}" \
  bash scripts/h200_experiments.sh > /dev/null 2>&1
grep -E "^== |rc=" /tmp/experiments/experiments.log | tr '\n' ' '
