#!/usr/bin/env bash
# Issue 48: SS_REG_MASK_PACKED (the mask-slots emit classifies packed kept bins) and
# SS_NEXT_WAVE_ONE (the next-wave prefetch as one request). Their A/Bs against production
# (experiments/reg_mask_packed.toml, experiments/next_wave_one.toml); whole-grid certify and
# compute-sanitizer with both knobs (slots form, v32 16K / 8K and v4-flash 8K at B 8 / 512);
# Nsight Compute of 16K x K 2,048 at B 1,024 (production / packed / one); on an H200 the
# flush A/B/A (scripts/flush_ab.py); the floor sample (route / packed / one); the register
# rungs at B >= 64 with the packed classify (route_rungs_big_b.toml + a variant) if time is left.
# SLIM=1 (little device time left, ~150 s): the two A/Bs and the certify only.
set -u
source scripts/device_lib.sh
device_setup
step packed 120 $B experiment experiments/reg_mask_packed.toml --flush-mib $FLUSH --out /tmp/x/packed
cp /tmp/x/packed/experiment.md $OUT/packed-experiment.md 2>/dev/null
grep -hE "^\| ss \| [a-z0-9]+ \|" /tmp/x/packed/experiment.md | tee -a $L
step one 120 $B experiment experiments/next_wave_one.toml --flush-mib $FLUSH --out /tmp/x/one
cp /tmp/x/one/experiment.md /tmp/logs/one-experiment.md 2>/dev/null
grep -hE "^\| ss \| [a-z0-9]+ \|" /tmp/x/one/experiment.md | tee -a $L
pack records1 x/packed/results.jsonl x/packed/manifest.json x/one/results.jsonl x/one/manifest.json
step certify 120 $B certify --captures /tmp/gvr-caps --grid grids/dsa886.csv --sample 1500 --arms ss --poison-pad --soak 2 --knob SS_REG_MASK_PACKED=1 --knob SS_NEXT_WAVE_ONE=1
grep -E "^\| ss" /tmp/logs/certify.log | tee -a $L
if [ "${SLIM:-0}" = 1 ]; then
  pack logs logs
  echo "done (slim) at $SECONDS s" | tee -a $L
  finish_out
  exit 0
fi
for cell in v32_16k_L00 v32_8k_L00 v4_flash_8k_L02; do
  for tool in memcheck racecheck synccheck; do
    step san-$tool-$cell 40 compute-sanitizer --tool $tool --error-exitcode 9 $B certify \
      --captures /tmp/gvr-caps --cells $cell --batches 8,512 --arms ss --no-adversarial \
      --knob reg.emit=slots --knob SS_REG_MASK_PACKED=1 --knob SS_NEXT_WAVE_ONE=1
  done
done
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
for v in 0 1 one; do
  kn="--knob SS_REG_MASK_PACKED=$v"; [ $v = one ] && kn="--knob SS_NEXT_WAVE_ONE=1"
  step ncu-b1024-p$v 100 $NCU --clock-control none --set full --warp-sampling-interval 0 --kernel-name regex:'^ss_reg' \
    --launch-count 1 -f -o /tmp/prof/16kb1024-p$v $B certify --captures /tmp/gvr-caps --cells v32_16k_L00 --batches 1024 \
    --arms ss --no-adversarial $kn
  $NCU --import /tmp/prof/16kb1024-p$v.ncu-rep --page details --csv > /tmp/prof/16kb1024-p$v-details.csv 2>&1
  $NCU --import /tmp/prof/16kb1024-p$v.ncu-rep --page source --csv --print-source sass 2>&1 | gzip > /tmp/prof/16kb1024-p$v-sass.csv.gz
  rm -f /tmp/prof/16kb1024-p$v.ncu-rep
done
pack prof prof
if [ $H200 = 1 ] && [ $SECONDS -lt 120 ]; then  # (little device time left: only if early)
  mkdir -p /tmp/x/fab
  for t in a:512 b:128 c:256 d:512; do
    step flush-${t%%:*} 40 $B grid --captures /tmp/gvr-caps --grid grids/dsa886.csv --sample 300 --arms ss,radix --floor \
      --flush-mib ${t#*:} --out /tmp/x/fab/${t%%:*}
  done
  python3 scripts/flush_ab.py /tmp/x/fab > $OUT/flush-ab.txt 2>&1
  tail -12 $OUT/flush-ab.txt | tee -a $L
  pack fab x/fab
fi
sed -e 's/^\[variants.off\]/[variants.packed]/' -e 's/^SS_REG_KEEP_BIN = 0/SS_REG_MASK_PACKED = 1/' \
  experiments/floor_sample.toml > /tmp/floor_packed.toml
printf '\n[variants.one]\nSS_NEXT_WAVE_ONE = 1\n' >> /tmp/floor_packed.toml
cp /tmp/floor_packed.toml /tmp/logs/
step floor $(( 280 - SECONDS )) $B experiment /tmp/floor_packed.toml --flush-mib $FLUSH --out /tmp/x/floor
$B report /tmp/x/floor > /tmp/logs/floor-report.log 2>&1
cp /tmp/x/floor/experiment.md $OUT/floor-experiment.md 2>/dev/null
cp /tmp/x/floor/report/summary.md $OUT/floor-summary.md 2>/dev/null
grep -hE "^\| ss \| [a-z0-9]+ \|" /tmp/x/floor/experiment.md | tee -a $L
{ cat experiments/route_rungs_big_b.toml; printf '\n[variants.packed]\nSS_REG_MASK_PACKED = 1\n'; } > /tmp/rungs_packed.toml
cp /tmp/rungs_packed.toml /tmp/logs/
[ $SECONDS -lt 250 ] && step rungs $(( 290 - SECONDS )) $B experiment /tmp/rungs_packed.toml --flush-mib $FLUSH --out /tmp/x/rungs
cp /tmp/x/rungs/experiment.md /tmp/logs/rungs-experiment.md 2>/dev/null
pack records x/rungs/results.jsonl x/rungs/manifest.json x/floor/results.jsonl x/floor/floor.jsonl x/floor/manifest.json
pack logs logs
echo "done at $SECONDS s" | tee -a $L
finish_out
