#!/usr/bin/env bash
# Issue 48, after SS_REG_MASK_PACKED and SS_NEXT_WAVE_ONE were adopted (source default 1):
# the emit form of the register launches re-derived (experiments/reg_emit_form.toml: route /
# slots / cur), the GPU tests of the ss families at the new defaults, the floor sample
# (route / before: both knobs 0), then Nsight Compute of 16K x K 2,048 at B 1 in both emit
# forms (the route emits cursors there) and at B 8 while time is left.
set -u
source scripts/device_lib.sh
device_setup
step emit 150 $B experiment experiments/reg_emit_form.toml --flush-mib $FLUSH --out /tmp/x/emit
cp /tmp/x/emit/experiment.md $OUT/emit-experiment.md 2>/dev/null
grep -hE "^\| ss \| [a-z0-9]+ \|" /tmp/x/emit/experiment.md | tee -a $L
GVR_GPU_TESTS=1 step gpu-tests 150 devbin/gpu-tests --include-ignored --test-threads 1 ss_clus ss_reg ss_main ss_varlen nan
grep -E "^test result|FAILED|panicked" /tmp/logs/gpu-tests.log | head -5 | tee -a $L
step floor 150 $B experiment experiments/floor_sample.toml --flush-mib $FLUSH --out /tmp/x/floor
$B report /tmp/x/floor > /tmp/logs/floor-report.log 2>&1
cp /tmp/x/floor/experiment.md $OUT/floor-experiment.md 2>/dev/null
cp /tmp/x/floor/report/summary.md $OUT/floor-summary.md 2>/dev/null
grep -hE "^\| ss \| [a-z0-9]+ \|" /tmp/x/floor/experiment.md | tee -a $L
pack records x/emit/results.jsonl x/emit/manifest.json x/floor/results.jsonl x/floor/floor.jsonl x/floor/manifest.json
pack logs logs
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
for b in 1 8; do
  for form in cur slots; do
    [ $SECONDS -lt 420 ] || break 2
    step ncu-b$b-$form 60 $NCU --clock-control none --set full --warp-sampling-interval 0 --kernel-name regex:'^ss_reg' \
      --launch-count 1 -f -o /tmp/prof/16kb$b-$form $B certify --captures /tmp/gvr-caps --cells v32_16k_L00 --batches $b \
      --arms ss --no-adversarial --knob reg.emit=$form
    $NCU --import /tmp/prof/16kb$b-$form.ncu-rep --page details --csv > /tmp/prof/16kb$b-$form-details.csv 2>&1
    $NCU --import /tmp/prof/16kb$b-$form.ncu-rep --page source --csv --print-source sass 2>&1 | gzip > /tmp/prof/16kb$b-$form-sass.csv.gz
    rm -f /tmp/prof/16kb$b-$form.ncu-rep
  done
done
pack prof prof
pack logs logs
echo "done at $SECONDS s" | tee -a $L
finish_out
