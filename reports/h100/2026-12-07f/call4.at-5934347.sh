#!/usr/bin/env bash
# Issue 48, production with the coarse merge for clusters of 8: its experiment (route / full /
# coarse / route2), the floor sample (route / full), a whole-grid certify, compute-sanitizer of
# the production cl8 build, the GPU tests of the ss families; on an H200, the flush A/B/A.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64:${LD_LIBRARY_PATH:-}
export GVR_CACHE_DIR=/tmp/gvr-kernel-cache
B=$PWD/devbin/new/gvr-bench
L=$OUT/call.log
nvidia-smi --query-gpu=name,uuid,driver_version --format=csv,noheader | tee $L
SECONDS=0
H200=0; nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 && H200=1
FLUSH=128; [ $H200 = 1 ] && FLUSH=512
echo "flush $FLUSH MiB" | tee -a $L
$B capture synth --out /tmp/gvr-caps --steps 4 --seed 0 > /dev/null 2>&1; echo "synth rc=$? at $SECONDS s" | tee -a $L
mkdir -p /tmp/x
run() { # name file limit_s
  timeout -s INT $3 $B experiment experiments/$2.toml --flush-mib $FLUSH --out /tmp/x/$1 > /tmp/x-$1.log 2>&1
  echo "== $1 ($2) rc=$? at $SECONDS s" | tee -a $L
  cp /tmp/x-$1.log /tmp/x/$1/experiment.log 2>/dev/null
  $B report /tmp/x/$1 > /tmp/x/$1/report.log 2>&1
  cp /tmp/x/$1/experiment.md $OUT/$1-experiment.md 2>/dev/null
}
timeout -s INT 90 $B certify --captures /tmp/gvr-caps --grid grids/dsa886.csv --sample 1500 --arms ss \
  --poison-pad --soak 2 > $OUT/certify.log 2>&1
echo "certify rc=$? at $SECONDS s" | tee -a $L; grep -E "^\| ss" $OUT/certify.log | tee -a $L
for cell in v32_32k_L00 v4_flash_128k_L02; do
  for tool in memcheck racecheck synccheck; do
    echo "== $tool $cell b2" >> $OUT/sanitize.log
    timeout 25 compute-sanitizer --tool $tool --error-exitcode 9 $B certify --captures /tmp/gvr-caps \
      --cells $cell --batches 2 --arms ss --no-adversarial >> $OUT/sanitize.log 2>&1
    echo "$tool $cell rc=$? at $SECONDS s" | tee -a $L
  done
done
GVR_GPU_TESTS=1 timeout -s INT 150 devbin/gpu-tests --include-ignored --test-threads 1 \
  ss_clus ss_reg ss_main ss_varlen nan > $OUT/gpu-tests.log 2>&1
echo "gpu tests rc=$? at $SECONDS s" | tee -a $L; grep -E "^test result|FAILED|panicked" $OUT/gpu-tests.log | head -5 | tee -a $L
run coarse regclus_coarse_merge 60
if [ $H200 = 1 ]; then  # the H200 flush A/B/A first: the floor sample has an H100 run already
  mkdir -p /tmp/x/fab
  for t in a:512 b:128 c:256 d:512; do
    [ $SECONDS -lt 400 ] || break
    timeout -s INT 40 $B grid --captures /tmp/gvr-caps --grid grids/dsa886.csv --sample 300 --arms ss,radix --floor \
      --flush-mib ${t#*:} --out /tmp/x/fab/${t%%:*} > /tmp/x/fab/${t%%:*}.log 2>&1
    echo "flush ${t} rc=$? at $SECONDS s" | tee -a $L
  done
  [ -d /tmp/x/fab/d ] && python3 scripts/flush_ab.py /tmp/x/fab > $OUT/flush-ab.txt 2>&1
fi
[ $SECONDS -lt 330 ] && run floor floor_sample $(( 430 - SECONDS ))
grep -hE "^\| ss \| [a-z0-9]+ \|" /tmp/x/coarse/experiment.md /tmp/x/floor/experiment.md 2>/dev/null | tee -a $L
grep -A4 "^| Arm | Cases | Geometric" /tmp/x/floor/report/summary.md 2>/dev/null | tee -a $L
tar czf $OUT/x.tgz -C /tmp x
echo "done at $SECONDS s"
