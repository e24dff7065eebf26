#!/usr/bin/env bash
# One device call: `certify` of the binary's default kernels where the route moved last
# (BLK 512 on wave ties: K <= 1,024 x B 512 / 1,024 x N >= 32K, c5cb146) and on the SPLIT
# set (B 1-32, N >= 100K), poisoned padding, adversarial suite and soak rounds.
# Logs in $OUT/certify-*.log; the summary lines are printed.
#
# Usage (device): OUT=$OUT GVR_BIN=devbin/x/gvr-bench [BUDGET_S=200] bash scripts/h200_certify_call.sh
set -u
: "${OUT:?set OUT}"
B="${GVR_BIN:-target/release/gvr-bench}"
CAPS="${CAPS:-/tmp/gvr-caps}"
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
[ -f "$CAPS/manifest.json" ] || "$B" capture synth --out "$CAPS" --steps 4 --seed 0 > "$OUT/synth.log" 2>&1
half=$(( (${BUDGET_S:-200} - SECONDS) / 2 ))
timeout "$half" "$B" certify --captures "$CAPS" --grid grids/dsa886.csv --batches 512,1024 --n-min 30000 \
  --sample 60 --soak 10 --soak-seed 7601 --arms ss,ss-main --poison-pad > "$OUT/certify-tie.log" 2>&1
echo "tie rc=$?: $(tail -n 3 "$OUT/certify-tie.log" | tr '\n' ' ')"
left=$(( ${BUDGET_S:-200} - SECONDS - 5 ))
timeout "$left" "$B" certify --captures "$CAPS" --grid grids/dsa886.csv --batches 1,2,4,8,16,32 --n-min 100000 \
  --sample 60 --soak 10 --soak-seed 7602 --arms ss,ss-varlen --poison-pad > "$OUT/certify-split.log" 2>&1
echo "split rc=$?: $(tail -n 3 "$OUT/certify-split.log" | tr '\n' ' ')"
