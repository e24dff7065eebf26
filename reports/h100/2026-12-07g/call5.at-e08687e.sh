#!/usr/bin/env bash
# Issue 48: reg's crossing scan and trash bin (experiments/reg_scan_trash.toml), then Nsight
# Compute profiles (clocks left alone: --clock-control none) of four reg launches.
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
timeout -s INT 200 $B experiment experiments/reg_scan_trash.toml --flush-mib $FLUSH --out /tmp/x/scan > /tmp/x/scan.log 2>&1
echo "== experiment rc=$? at $SECONDS s" | tee -a $L
$B report /tmp/x/scan > /tmp/x/scan-report.log 2>&1
cp /tmp/x/scan/experiment.md $OUT/scan-experiment.md 2>/dev/null
grep -hE "^\| ss \| [a-z0-9]+ \|" /tmp/x/scan/experiment.md | tee -a $L
tar czf $OUT/x.tgz -C /tmp x
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
$NCU --version | tail -1 | tee -a $L
mkdir -p /tmp/prof
for spec in 4k:v32_4k_L00:1 16k:v32_16k_L00:1 16kb1024:v32_16k_L00:1024 fl4k:v4_flash_16k_L02:1; do
  IFS=: read name cell b <<< "$spec"
  [ $SECONDS -lt 420 ] || break
  timeout 100 $NCU --clock-control none --set full --warp-sampling-interval 0 --kernel-name regex:'^ss_reg' \
    --launch-count 1 -f -o /tmp/prof/$name $B certify --captures /tmp/gvr-caps --cells $cell --batches $b \
    --arms ss --no-adversarial > /tmp/prof/$name.log 2>&1
  echo "ncu $name rc=$? at $SECONDS s" | tee -a $L
  $NCU --import /tmp/prof/$name.ncu-rep --page details --csv > /tmp/prof/$name-details.csv 2>&1
  $NCU --import /tmp/prof/$name.ncu-rep --page source --csv --print-source sass > /tmp/prof/$name-sass.csv 2>&1
  echo "export $name rc=$? at $SECONDS s" | tee -a $L
done
du -sh /tmp/prof/* | tee -a $L
tar czf $OUT/prof.tgz -C /tmp prof
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then  # the H200 flush A/B/A
  mkdir -p /tmp/fab
  for t in a:512 b:128 c:256 d:512; do
    [ $SECONDS -lt 440 ] || break
    timeout -s INT 40 $B grid --captures /tmp/gvr-caps --grid grids/dsa886.csv --sample 300 --arms ss,radix --floor \
      --flush-mib ${t#*:} --out /tmp/fab/${t%%:*} > /tmp/fab/${t%%:*}.log 2>&1
    echo "flush ${t} rc=$? at $SECONDS s" | tee -a $L
  done
  [ -d /tmp/fab/d ] && python3 scripts/flush_ab.py /tmp/fab > $OUT/flush-ab.txt 2>&1
  tar czf $OUT/fab.tgz -C /tmp fab
fi
echo "done at $SECONDS s" | tee -a $L
