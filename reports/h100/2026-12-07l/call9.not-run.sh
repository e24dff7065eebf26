#!/usr/bin/env bash
# Issue 48: SS_REG_RANK_WARP (the rank refine with one warp per candidate) against production
# (experiments/reg_rank_warp.toml), whole-grid certify and compute-sanitizer with it, at the
# build where SS_NEXT_WAVE_ONE is limited to the one-CTA-per-SM entries.
set -u
source scripts/device_lib.sh
device_setup
ab rank experiments/reg_rank_warp.toml 90
step certify 60 $B certify --captures /tmp/gvr-caps --grid grids/dsa886.csv --sample 600 --arms ss --poison-pad --soak 2 --knob SS_REG_RANK_WARP=1
grep -E "^\| ss" /tmp/logs/certify.log | tee -a $L
for tool in memcheck racecheck synccheck; do
  step san-$tool 40 compute-sanitizer --tool $tool --error-exitcode 9 $B certify \
    --captures /tmp/gvr-caps --cells v32_16k_L00,v32_8k_L00,v4_pro_32k_L04,v4_flash_8k_L02 --batches 1,512 --arms ss --no-adversarial \
    --knob SS_REG_RANK_WARP=1
done
pack records x/rank/results.jsonl x/rank/manifest.json
pack logs logs
echo "done at $SECONDS s" | tee -a $L
finish_out
