#!/usr/bin/env bash
# Issue 48, SS_REG_MASK_PACKED (the mask-slots emit classifies packed kept bins): its A/B
# against production (experiments/reg_mask_packed.toml), whole-grid certify and
# compute-sanitizer with the knob (slots form, 1024/4 16K and 512/4 8K at B 8 / 512), the
# floor sample (route / packed) while time is left (a slim call: little device time was left).
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
pack records1 x/packed/results.jsonl x/packed/manifest.json
pack logs1 logs
sed -e 's/^\[variants.off\]/[variants.packed]/' -e 's/^SS_REG_KEEP_BIN = 0/SS_REG_MASK_PACKED = 1/' \
  experiments/floor_sample.toml > /tmp/floor_packed.toml
cp /tmp/floor_packed.toml /tmp/logs/
step floor $(( 165 - SECONDS )) $B experiment /tmp/floor_packed.toml --flush-mib $FLUSH --out /tmp/x/floor
$B report /tmp/x/floor > /tmp/logs/floor-report.log 2>&1
cp /tmp/x/floor/experiment.md $OUT/floor-experiment.md 2>/dev/null
cp /tmp/x/floor/report/summary.md $OUT/floor-summary.md 2>/dev/null
grep -hE "^\| ss \| [a-z0-9]+ \|" /tmp/x/floor/experiment.md | tee -a $L
pack records x/floor/results.jsonl x/floor/floor.jsonl x/floor/manifest.json
pack logs logs
echo "done at $SECONDS s" | tee -a $L
finish_out
