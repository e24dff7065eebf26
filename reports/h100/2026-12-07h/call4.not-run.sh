#!/usr/bin/env bash
# Issue 48, production with the kept bins (SS_REG_KEEP_BIN 2 by the `reg_keep_bins` rule):
# its A/B against mode 0 (experiments/reg_keep_bin.toml), whole-grid certify, compute-sanitizer
# in both emit forms, the GPU tests of the ss families, Nsight Compute of 16K x K 2,048 at B 1 and
# 1,024 (production and mode 0) if time is left, the floor sample (route / off); flush 512 MiB on
# an H200 (its flush A/B/A did not fit this call).
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64:${LD_LIBRARY_PATH:-}
export GVR_CACHE_DIR=/tmp/gvr-kernel-cache
B=$PWD/devbin/new/gvr-bench
L=$OUT/call.log
mkdir -p /tmp/x /tmp/prof /tmp/logs
nvidia-smi --query-gpu=name,uuid,driver_version --format=csv,noheader | tee $L
SECONDS=0
H200=0; nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 && H200=1
FLUSH=128; [ $H200 = 1 ] && FLUSH=512
$B capture synth --out /tmp/gvr-caps --steps 4 --seed 0 > /dev/null 2>&1; echo "synth rc=$? at $SECONDS s" | tee -a $L
records() { tar czf $OUT/records.tgz -C /tmp/x $(cd /tmp/x && ls -d */results.jsonl */manifest.json */experiment.md */floor.jsonl 2>/dev/null); }
timeout -s INT 90 $B experiment experiments/reg_keep_bin.toml --flush-mib $FLUSH --out /tmp/x/keep > /tmp/logs/keep.log 2>&1
echo "== experiment rc=$? at $SECONDS s (flush $FLUSH)" | tee -a $L
cp /tmp/x/keep/experiment.md $OUT/keep-experiment.md 2>/dev/null; records
grep -hE "^\| ss \| [a-z0-9]+ \|" /tmp/x/keep/experiment.md | tee -a $L
timeout -s INT 100 $B certify --captures /tmp/gvr-caps --grid grids/dsa886.csv --sample 1500 --arms ss \
  --poison-pad --soak 2 > /tmp/logs/certify.log 2>&1
echo "certify rc=$? at $SECONDS s" | tee -a $L; grep -E "^\| ss" /tmp/logs/certify.log | tee -a $L
for form in slots cur; do
  for cell in v32_16k_L00 v32_4k_L00 v4_flash_8k_L02; do
    for tool in memcheck racecheck synccheck; do
      echo "== $tool $cell b8 $form" >> /tmp/logs/sanitize.log
      timeout 40 compute-sanitizer --tool $tool --error-exitcode 9 $B certify --captures /tmp/gvr-caps --cells $cell \
        --batches 8,512 --arms ss --no-adversarial --knob reg.emit=$form >> /tmp/logs/sanitize.log 2>&1
      echo "$tool $cell $form rc=$? at $SECONDS s" | tee -a $L
    done
  done
done
GVR_GPU_TESTS=1 timeout -s INT 80 devbin/gpu-tests --include-ignored --test-threads 1 \
  ss_clus ss_reg ss_main ss_varlen nan > /tmp/logs/gpu-tests.log 2>&1
echo "gpu tests rc=$? at $SECONDS s" | tee -a $L; grep -E "^test result|FAILED|panicked" /tmp/logs/gpu-tests.log | head -5 | tee -a $L
tar czf $OUT/logs.tgz -C /tmp logs
timeout -s INT $(( 240 - SECONDS )) $B experiment experiments/floor_sample.toml --flush-mib $FLUSH --out /tmp/x/floor > /tmp/logs/floor.log 2>&1
echo "floor rc=$? at $SECONDS s (flush $FLUSH)" | tee -a $L
$B report /tmp/x/floor > /tmp/logs/floor-report.log 2>&1
cp /tmp/x/floor/experiment.md $OUT/floor-experiment.md 2>/dev/null; records
cp /tmp/x/floor/report/summary.md $OUT/floor-summary.md 2>/dev/null
grep -hE "^\| ss \| [a-z0-9]+ \|" /tmp/x/floor/experiment.md | tee -a $L
grep -A5 "^| Arm | Cases | Geometric" /tmp/x/floor/report/summary.md 2>/dev/null | tee -a $L
tar czf $OUT/logs.tgz -C /tmp logs
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
for b in 1024 1; do
  for v in 2 0; do
    [ $SECONDS -lt 265 ] || break 2
    timeout 100 $NCU --clock-control none --set full --warp-sampling-interval 0 --kernel-name regex:'^ss_reg' --launch-count 1 \
      -f -o /tmp/prof/16kb$b-k$v $B certify --captures /tmp/gvr-caps --cells v32_16k_L00 --batches $b --arms ss \
      --no-adversarial --knob SS_REG_KEEP_BIN=$v > /tmp/prof/16kb$b-k$v.log 2>&1
    echo "ncu b$b keep $v rc=$? at $SECONDS s" | tee -a $L
    $NCU --import /tmp/prof/16kb$b-k$v.ncu-rep --page details --csv > /tmp/prof/16kb$b-k$v-details.csv 2>&1
    $NCU --import /tmp/prof/16kb$b-k$v.ncu-rep --page source --csv --print-source sass 2>&1 | gzip > /tmp/prof/16kb$b-k$v-sass.csv.gz
    rm -f /tmp/prof/16kb$b-k$v.ncu-rep
  done
done
tar czf $OUT/prof.tgz -C /tmp prof
echo "done at $SECONDS s" | tee -a $L
