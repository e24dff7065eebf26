#!/usr/bin/env bash
# Issue 48: SS_REG_EMIT_FCMP (experiments/reg_emit_fcmp.toml), certify and compute-sanitizer
# with the knob, an Nsight Compute profile (clocks left alone) of 16K x K 2,048 at B 1,024 with it.
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
timeout -s INT 200 $B experiment experiments/reg_emit_fcmp.toml --flush-mib $FLUSH --out /tmp/x/fcmp > /tmp/x/fcmp.log 2>&1
echo "== experiment rc=$? at $SECONDS s" | tee -a $L
$B report /tmp/x/fcmp > /tmp/x/fcmp-report.log 2>&1
cp /tmp/x/fcmp/experiment.md $OUT/fcmp-experiment.md 2>/dev/null
grep -hE "^\| ss \| [a-z0-9]+ \|" /tmp/x/fcmp/experiment.md | tee -a $L
tar czf $OUT/x.tgz -C /tmp x
timeout -s INT 120 $B certify --captures /tmp/gvr-caps --grid grids/dsa886.csv --n-max 17500 --sample 800 --arms ss \
  --knob SS_REG_EMIT_FCMP=1 --poison-pad --soak 2 > $OUT/certify.log 2>&1
echo "certify rc=$? at $SECONDS s" | tee -a $L; grep -E "^\| ss" $OUT/certify.log | tee -a $L
for cell in v32_16k_L00 v32_8k_L00; do
  for tool in memcheck racecheck synccheck; do
    echo "== $tool $cell b8 slots fcmp" >> $OUT/sanitize.log
    timeout 40 compute-sanitizer --tool $tool --error-exitcode 9 $B certify --captures /tmp/gvr-caps --cells $cell \
      --batches 8 --arms ss --no-adversarial --knob SS_REG_EMIT_FCMP=1 --knob reg.emit=slots >> $OUT/sanitize.log 2>&1
    echo "$tool $cell rc=$? at $SECONDS s" | tee -a $L
  done
done
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
mkdir -p /tmp/prof
timeout 100 $NCU --clock-control none --set full --warp-sampling-interval 0 --kernel-name regex:'^ss_reg' --launch-count 1 \
  -f -o /tmp/prof/16kb1024-fcmp $B certify --captures /tmp/gvr-caps --cells v32_16k_L00 --batches 1024 --arms ss \
  --no-adversarial --knob SS_REG_EMIT_FCMP=1 > /tmp/prof/16kb1024-fcmp.log 2>&1
echo "ncu rc=$? at $SECONDS s" | tee -a $L
$NCU --import /tmp/prof/16kb1024-fcmp.ncu-rep --page details --csv > /tmp/prof/16kb1024-fcmp-details.csv 2>&1
$NCU --import /tmp/prof/16kb1024-fcmp.ncu-rep --page source --csv --print-source sass > /tmp/prof/16kb1024-fcmp-sass.csv 2>&1
tar czf $OUT/prof.tgz -C /tmp prof
echo "done at $SECONDS s" | tee -a $L
