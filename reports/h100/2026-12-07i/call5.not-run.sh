#!/usr/bin/env bash
# Issue 48, SS_REG_MASK_PACKED (the mask-slots emit classifies packed kept bins): its A/B
# against production (experiments/reg_mask_packed.toml), whole-grid certify and
# compute-sanitizer with the knob (slots form, 1024/4 16K and 512/4 8K at B 8 / 512), the
# floor sample (route / packed), then Nsight Compute of 16K x K 2,048 at B 1,024 with and
# without it while time is left.
set -u
source scripts/device_lib.sh
device_setup
step packed 120 $B experiment experiments/reg_mask_packed.toml --flush-mib $FLUSH --out /tmp/x/packed
cp /tmp/x/packed/experiment.md $OUT/packed-experiment.md 2>/dev/null
grep -hE "^\| ss \| [a-z0-9]+ \|" /tmp/x/packed/experiment.md | tee -a $L
step certify 120 $B certify --captures /tmp/gvr-caps --grid grids/dsa886.csv --sample 1500 --arms ss --poison-pad --soak 2 --knob SS_REG_MASK_PACKED=1
grep -E "^\| ss" /tmp/logs/certify.log | tee -a $L
for cell in v32_16k_L00 v32_8k_L00 v4_flash_8k_L02; do
  for tool in memcheck racecheck synccheck; do
    step san-$tool-$cell 40 compute-sanitizer --tool $tool --error-exitcode 9 $B certify \
      --captures /tmp/gvr-caps --cells $cell --batches 8,512 --arms ss --no-adversarial \
      --knob reg.emit=slots --knob SS_REG_MASK_PACKED=1
  done
done
sed -e 's/^\[variants.off\]/[variants.packed]/' -e 's/^SS_REG_KEEP_BIN = 0/SS_REG_MASK_PACKED = 1/' \
  experiments/floor_sample.toml > /tmp/floor_packed.toml
cp /tmp/floor_packed.toml /tmp/logs/
step floor $(( 210 - SECONDS )) $B experiment /tmp/floor_packed.toml --flush-mib $FLUSH --out /tmp/x/floor
$B report /tmp/x/floor > /tmp/logs/floor-report.log 2>&1
cp /tmp/x/floor/experiment.md $OUT/floor-experiment.md 2>/dev/null
cp /tmp/x/floor/report/summary.md $OUT/floor-summary.md 2>/dev/null
grep -hE "^\| ss \| [a-z0-9]+ \|" /tmp/x/floor/experiment.md | tee -a $L
pack records x/packed/results.jsonl x/packed/manifest.json x/floor/results.jsonl x/floor/floor.jsonl x/floor/manifest.json
pack logs logs
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
for v in 1 0; do
  [ $SECONDS -lt 180 ] || break
  step ncu-b1024-p$v 100 $NCU --clock-control none --set full --warp-sampling-interval 0 --kernel-name regex:'^ss_reg' \
    --launch-count 1 -f -o /tmp/prof/16kb1024-p$v $B certify --captures /tmp/gvr-caps --cells v32_16k_L00 --batches 1024 \
    --arms ss --no-adversarial --knob SS_REG_MASK_PACKED=$v
  $NCU --import /tmp/prof/16kb1024-p$v.ncu-rep --page details --csv > /tmp/prof/16kb1024-p$v-details.csv 2>&1
  $NCU --import /tmp/prof/16kb1024-p$v.ncu-rep --page source --csv --print-source sass 2>&1 | gzip > /tmp/prof/16kb1024-p$v-sass.csv.gz
  rm -f /tmp/prof/16kb1024-p$v.ncu-rep
done
pack prof prof
echo "done at $SECONDS s" | tee -a $L
