#!/usr/bin/env bash
# Issue 48, everything in one call (device time is short): the two reg_clus candidates, the
# reg_clus rungs, certify of both candidates together, compute-sanitizer of the default and of
# both, the whole-grid floor sample, and (H200 only, if time is left) the flush A/B/A.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64:${LD_LIBRARY_PATH:-}
export GVR_CACHE_DIR=/tmp/gvr-kernel-cache
B=$PWD/devbin/new/gvr-bench
L=$OUT/call.log
nvidia-smi --query-gpu=name,uuid,driver_version --format=csv,noheader | tee $L
SECONDS=0
FLUSH=128; nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 && FLUSH=512
echo "flush $FLUSH MiB" | tee -a $L
$B capture synth --out /tmp/gvr-caps --steps 4 --seed 0 > /dev/null 2>&1; echo "synth rc=$? at $SECONDS s" | tee -a $L
mkdir -p /tmp/x
run() { # name file limit_s
  timeout -s INT $3 $B experiment experiments/$2.toml --flush-mib $FLUSH --out /tmp/x/$1 > /tmp/x-$1.log 2>&1
  echo "== $1 ($2) rc=$? at $SECONDS s" | tee -a $L
  tail -3 /tmp/x-$1.log >> $L
  cp /tmp/x-$1.log /tmp/x/$1/experiment.log 2>/dev/null
  $B report /tmp/x/$1 > /tmp/x/$1/report.log 2>&1
}
run merge regclus_merge_hints 80
run rungs regclus_rungs 100
timeout -s INT 80 $B certify --captures /tmp/gvr-caps --grid grids/dsa886.csv --n-min 30000 --n-max 140000 \
  --sample 1500 --arms ss --poison-pad --soak 2 --knob RC_COARSE_MERGE=1 --knob RC_HINTS_AHEAD=1 > /tmp/x/certify-both.log 2>&1
echo "certify both rc=$? at $SECONDS s" | tee -a $L; grep -E "^\| ss" /tmp/x/certify-both.log | tee -a $L
for kn in "" "--knob RC_COARSE_MERGE=1 --knob RC_HINTS_AHEAD=1"; do
  for tool in memcheck racecheck; do
    echo "== $tool v32_32k_L00 b2 [$kn]" >> /tmp/x/sanitize.log
    timeout 25 compute-sanitizer --tool $tool --error-exitcode 9 $B certify --captures /tmp/gvr-caps \
      --cells v32_32k_L00 --batches 2 --arms ss --no-adversarial $kn >> /tmp/x/sanitize.log 2>&1
    echo "$tool [$kn] rc=$? at $SECONDS s" | tee -a $L
  done
done
run floor floor_sample $(( 470 - SECONDS ))
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 && [ $SECONDS -lt 400 ]; then
  mkdir -p /tmp/x/fab
  for t in a:512 b:128 c:256 d:512; do
    [ $SECONDS -lt 500 ] || break
    timeout -s INT 40 $B grid --captures /tmp/gvr-caps --grid grids/dsa886.csv --sample 300 --arms ss,radix --floor \
      --flush-mib ${t#*:} --out /tmp/x/fab/${t%%:*} > /tmp/x/fab/${t%%:*}.log 2>&1
    echo "flush ${t} rc=$? at $SECONDS s" | tee -a $L
  done
  [ -d /tmp/x/fab/d ] && python3 scripts/flush_ab.py /tmp/x/fab > /tmp/x/flush-ab.txt 2>&1
fi
cat /tmp/x/merge/experiment.md >> $L
tar czf $OUT/x.tgz -C /tmp x
ls -la $OUT; echo "done at $SECONDS s"
