#!/usr/bin/env bash
# One device call: source-level Nsight Compute profiles of the three small-batch long-row
# chains, the floor's biggest gaps (ss / floor 2.0-2.8 at B 1-8, reports/TARGETS.md), for
# the next change there (NOTES item 1 asks to profile before cutting another phase):
# main SPLIT at B 1 (v32 131,087, K 2,048), clus at B 1 (v32 65,551, K 2,048) and reg_clus
# at B 1 (flash 65,538, K 512), each with the full set, the SASS / CUDA source pages and a
# stall sample every 32 cycles (a ~10 µs launch). Packed into $OUT/ncu.tgz.
#
# Usage (device): OUT=$OUT GVR_BIN=devbin/x/gvr-bench [BUDGET_S=240] bash scripts/h200_ncu_smallb_call.sh
# Locally: scripts/ncu_sass_regions.py LABEL.sass.csv --marks, then by region.
set -u
: "${OUT:?set OUT}"
NCU_CASES="split|-|ss-main|v32_128k_L00|1|ss_main_split|full
clus|-|ss-clus|v32_64k_L00|1|ss_clus|full
regclus|-|ss-regclus|v4_flash_256k_L02|1|ss_regclus|full"
NCU_CASES="$NCU_CASES" NCU_ARGS="--warp-sampling-interval 0" OUT="$OUT" GVR_BIN="${GVR_BIN:-target/release/gvr-bench}" \
  BUDGET_S="${BUDGET_S:-240}" bash scripts/h200_ncu.sh > /dev/null 2>&1
grep -E "^== |rc=" /tmp/ncu/ncu.log | tr '\n' ' '
