#!/usr/bin/env bash
# One H200 device call (~8 min; NOTES "What to do next" item 0): phase tables of the
# route's picks with the histogram mark (small-B and big-B selections), then torch
# against the latency floor with what is left of the call. Everything is packed
# into $OUT/phases_torch_call.tgz (the device returns at most 8 files).
#
# Usage (device, after unpacking the binary): OUT=$OUT GVR_BIN=devbin/x/gvr-bench \
#   [CALL_S=470] [PHASES_S=200] bash scripts/h200_phases_torch_call.sh
# (CALL_S: the call's seconds; the torch/floor step runs only if > 150 s are left)
set -u
: "${OUT:?set OUT}"
T0=$SECONDS
W=/tmp/phases_torch_call; rm -rf $W; mkdir -p $W
pack() { tar czf $OUT/phases_torch_call.tgz -C $W .; }
trap pack EXIT
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64 GVR_CACHE_DIR=/tmp/gvr-kernel-cache
B="${GVR_BIN:-target/release/gvr-bench}"
CAPS="${CAPS:-/tmp/gvr-caps}"
tl() { echo "$* at $((SECONDS-T0)) s" | tee -a $W/timeline.txt; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv > $W/gpu.txt 2>&1
$B capture synth --out $CAPS --steps 4 --seed 0 > $W/synth.log 2>&1; tl "synth rc=$?"
# 1. phases of the route's picks, with the histogram mark
STEP_TIMEOUT=$((${PHASES_S:-200} / 2 - 5)) SMALL_SAMPLE=160 BIG_SAMPLE=40 OUT=$W GVR_BIN=$B CAPS=$CAPS \
  timeout ${PHASES_S:-200} bash scripts/h200_phases.sh > $W/phases.stdout 2>&1; tl "phases rc=$?"
# 2. torch against the floor, one run (what is left of the call)
LEFT=$((${CALL_S:-480} - (SECONDS - T0)))
if [ $LEFT -gt 150 ]; then
  FLOOR=1 PEER=torch AA_ARM= ARMS=ss SAMPLE=3000 BUDGET_S=$LEFT OUT=$W/t GVR_BIN=$B CAPS=$CAPS \
    timeout $((LEFT + 5)) bash scripts/h200_campaign.sh > $W/campaign.stdout 2>&1
  tl "campaign rc=$? budget $LEFT"
fi
