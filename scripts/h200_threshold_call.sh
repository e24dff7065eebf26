#!/usr/bin/env bash
# One H200 device call (~8 min) for the threshold phase (NOTES "What to do next" item 0):
# phase tables with the histogram mark, ss-main SPLIT phases with and without
# SS_SAMPLE_KEEP / the slice prefetch, a same-run A/B of SS_SAMPLE_KEEP (+ certify),
# and torch against the latency floor with what is left of the call. Everything
# is packed into $OUT/threshold_call.tgz (the device returns at most 8 files).
#
# Usage (device, after unpacking the binary): OUT=$OUT GVR_BIN=devbin/x/gvr-bench \
#   [CALL_S=470] [PHASES_S=200] [EXP_S=200] bash scripts/h200_threshold_call.sh
# (CALL_S: the call's seconds; the torch/floor step runs only if > 150 s are left)
set -u
: "${OUT:?set OUT}"
T0=$SECONDS
W=/tmp/threshold_call; rm -rf $W; mkdir -p $W
pack() { tar czf $OUT/threshold_call.tgz -C $W .; }
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
# 2. ss-main SPLIT phases: base, keep, no slice prefetch
P='phases --grid grids/dsa886.csv --arms ss-main --batches 1,8 --n-min 130000 --sample 12 --reps 5'
for v in base:- keep:SS_SAMPLE_KEEP=1 nopf:SS_L2_START_SPLIT=0; do
  l=${v%%:*}; d=${v#*:}; [ "$d" = "-" ] && d=
  GVR_SS_MAIN_DEFINES=$d timeout 60 $B $P --captures $CAPS --out $W/ph-$l > $W/ph-$l.md 2> $W/ph-$l.err
  tl "ph-$l rc=$?"
done
# 3. grid A/B of SS_SAMPLE_KEEP on ss-main (B 1-32: SPLIT and its neighbours) + certify
S='--grid grids/dsa886.csv --batches 1,2,4,8,16,32 --n-min 30000 --arms ss-main,radix'
K=GVR_SS_MAIN_DEFINES=SS_SAMPLE_KEEP=1
E="base|-|grid $S
keep|$K|grid $S
base2|-|grid $S
keep2|$K|grid $S
cert|$K|certify --arms ss-main --poison-pad --grid grids/dsa886.csv --batches 1,2,8,32 --n-min 30000 --sample 80 --soak 20"
EXPERIMENTS="$E" BUDGET_S=${EXP_S:-200} OUT=$W GVR_BIN=$B CAPS=$CAPS timeout $((${EXP_S:-200} + 15)) bash scripts/h200_experiments.sh > $W/exp.stdout 2>&1
tl "experiments rc=$?"
# 4. torch against the floor, one run (what is left of the call)
LEFT=$((${CALL_S:-480} - (SECONDS - T0)))
if [ $LEFT -gt 150 ]; then
  FLOOR=1 PEER=torch AA_ARM= ARMS=ss SAMPLE=3000 BUDGET_S=$LEFT OUT=$W/t GVR_BIN=$B CAPS=$CAPS \
    timeout $((LEFT + 5)) bash scripts/h200_campaign.sh > $W/campaign.stdout 2>&1
  tl "campaign rc=$? budget $LEFT"
fi
