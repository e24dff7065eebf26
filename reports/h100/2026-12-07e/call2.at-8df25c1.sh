#!/usr/bin/env bash
# Issue 48: certify ss with each reg_clus candidate (reg_clus band, NaN rows, poison pad, soak),
# then compute-sanitizer of the default (RC_LOCAL_REFINE) and of both candidates on two reg_clus cases.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64:${LD_LIBRARY_PATH:-}
export GVR_CACHE_DIR=/tmp/gvr-kernel-cache
B=$PWD/devbin/new/gvr-bench
nvidia-smi --query-gpu=name,uuid --format=csv,noheader | tee $OUT/call2.log
SECONDS=0
[ -d /tmp/gvr-caps ] || $B capture synth --out /tmp/gvr-caps --steps 4 --seed 0 > /dev/null 2>&1
for kv in "RC_COARSE_MERGE=1" "RC_HINTS_AHEAD=1" "RC_COARSE_MERGE=1 --knob RC_HINTS_AHEAD=1"; do
  echo "== certify --knob $kv" >> $OUT/certify.log
  timeout -s INT 90 $B certify --captures /tmp/gvr-caps --grid grids/dsa886.csv --n-min 30000 --n-max 140000 \
    --sample 1500 --arms ss --poison-pad --soak 2 --knob $kv >> $OUT/certify.log 2>&1
  echo "certify $kv rc=$? at $SECONDS s" | tee -a $OUT/call2.log
done
# The flush A/B/A of 2026-12-07d (H100) on this card: a = 512, b = 128, c = 256, d = 512 MiB.
mkdir -p /tmp/fab
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 && for t in a:512 b:128 c:256 d:512; do
  timeout -s INT 60 $B grid --captures /tmp/gvr-caps --grid grids/dsa886.csv --sample 300 --arms ss,radix --floor \
    --flush-mib ${t#*:} --out /tmp/fab/${t%%:*} > /tmp/fab/${t%%:*}.log 2>&1
  echo "flush ${t} rc=$? at $SECONDS s" | tee -a $OUT/call2.log
done
if [ -d /tmp/fab/d ]; then
  python3 scripts/flush_ab.py /tmp/fab > $OUT/flush-ab.txt 2>&1; tail -3 $OUT/flush-ab.txt
  tar czf $OUT/fab.tgz -C /tmp fab
fi
for kn in "" "--knob RC_COARSE_MERGE=1 --knob RC_HINTS_AHEAD=1"; do
  cells="v32_32k_L00 v4_pro_128k_L00"; [ -n "$kn" ] && cells=v32_32k_L00
  for cell in $cells; do
    for tool in memcheck racecheck synccheck; do
      if [ $(( 480 - SECONDS )) -lt 27 ]; then echo "== $tool $cell [$kn]: skipped (time)" | tee -a $OUT/sanitize.log; continue; fi
      echo "== $tool $cell [$kn]" >> $OUT/sanitize.log
      timeout 25 compute-sanitizer --tool $tool --error-exitcode 9 $B certify --captures /tmp/gvr-caps \
        --cells $cell --batches 2 --arms ss --no-adversarial $kn >> $OUT/sanitize.log 2>&1
      echo "   rc=$? at $SECONDS s" | tee -a $OUT/sanitize.log
    done
  done
done
grep -E "^\| ss|^==|rc=" $OUT/certify.log | tail -12
