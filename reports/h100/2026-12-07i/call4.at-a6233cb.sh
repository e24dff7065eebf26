#!/usr/bin/env bash
# Issue 48, production with the kept bins (SS_REG_KEEP_BIN 1 by the `reg_keep_bins` rule) on a
# second card: its A/B against mode 0 (experiments/reg_keep_bin.toml), whole-grid certify,
# compute-sanitizer in both emit forms (512/1 with and without the kept bins through B 8 / 512),
# the GPU tests of the ss families, the floor sample (route / off), then Nsight Compute of
# 16K x K 2,048 at B 1,024 and 1 (production and mode 0) while time is left. Also the register
# rungs at B >= 64 re-derived (experiments/route_rungs_big_b.toml: ss, ss-main, ss-reg).
set -u
source scripts/device_lib.sh
device_setup
step keep 90 $B experiment experiments/reg_keep_bin.toml --flush-mib $FLUSH --out /tmp/x/keep
cp /tmp/x/keep/experiment.md $OUT/keep-experiment.md 2>/dev/null
grep -hE "^\| ss \| [a-z0-9]+ \|" /tmp/x/keep/experiment.md | tee -a $L
step certify 100 $B certify --captures /tmp/gvr-caps --grid grids/dsa886.csv --sample 1500 --arms ss --poison-pad --soak 2
grep -E "^\| ss" /tmp/logs/certify.log | tee -a $L
for form in slots cur; do
  for cell in v32_16k_L00 v32_4k_L00 v4_flash_8k_L02; do
    for tool in memcheck racecheck synccheck; do
      step san-$tool-$cell-$form 40 compute-sanitizer --tool $tool --error-exitcode 9 $B certify \
        --captures /tmp/gvr-caps --cells $cell --batches 8,512 --arms ss --no-adversarial --knob reg.emit=$form
    done
  done
done
GVR_GPU_TESTS=1 step gpu-tests 150 devbin/gpu-tests --include-ignored --test-threads 1 ss_clus ss_reg ss_main ss_varlen nan
grep -E "^test result|FAILED|panicked" /tmp/logs/gpu-tests.log | head -5 | tee -a $L
step rungs 120 $B experiment experiments/route_rungs_big_b.toml --flush-mib $FLUSH --out /tmp/x/rungs
cp /tmp/x/rungs/experiment.md /tmp/logs/rungs-experiment.md 2>/dev/null
grep -hE "^\| ss-(main|reg) \|" /tmp/x/rungs/experiment.md | head -3 | tee -a $L
step floor $(( 450 - SECONDS )) $B experiment experiments/floor_sample.toml --flush-mib $FLUSH --out /tmp/x/floor
$B report /tmp/x/floor > /tmp/logs/floor-report.log 2>&1
cp /tmp/x/floor/experiment.md $OUT/floor-experiment.md 2>/dev/null
cp /tmp/x/floor/report/summary.md $OUT/floor-summary.md 2>/dev/null
grep -hE "^\| ss \| [a-z0-9]+ \|" /tmp/x/floor/experiment.md | tee -a $L
pack records x/rungs/results.jsonl x/rungs/manifest.json x/keep/results.jsonl x/keep/manifest.json x/floor/results.jsonl x/floor/floor.jsonl x/floor/manifest.json
pack logs logs
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
for b in 1024 1; do
  for v in 1 0; do
    [ $SECONDS -lt 500 ] || break 2
    step ncu-b$b-k$v 100 $NCU --clock-control none --set full --warp-sampling-interval 0 --kernel-name regex:'^ss_reg' \
      --launch-count 1 -f -o /tmp/prof/16kb$b-k$v $B certify --captures /tmp/gvr-caps --cells v32_16k_L00 --batches $b \
      --arms ss --no-adversarial --knob SS_REG_KEEP_BIN=$v
    $NCU --import /tmp/prof/16kb$b-k$v.ncu-rep --page details --csv > /tmp/prof/16kb$b-k$v-details.csv 2>&1
    $NCU --import /tmp/prof/16kb$b-k$v.ncu-rep --page source --csv --print-source sass 2>&1 | gzip > /tmp/prof/16kb$b-k$v-sass.csv.gz
    rm -f /tmp/prof/16kb$b-k$v.ncu-rep
  done
done
pack prof prof
echo "done at $SECONDS s" | tee -a $L
