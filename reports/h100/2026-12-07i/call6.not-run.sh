#!/usr/bin/env bash
# Issue 48, minimal (little device time left): the A/Bs of SS_REG_MASK_PACKED and
# SS_NEXT_WAVE_ONE (experiments/reg_mask_packed.toml, experiments/next_wave_one.toml) and a
# whole-grid certify with both knobs.
set -u
source scripts/device_lib.sh
device_setup
step packed 70 $B experiment experiments/reg_mask_packed.toml --flush-mib $FLUSH --out /tmp/x/packed
cp /tmp/x/packed/experiment.md $OUT/packed-experiment.md 2>/dev/null
grep -hE "^\| ss \| [a-z0-9]+ \|" /tmp/x/packed/experiment.md | tee -a $L
step one 70 $B experiment experiments/next_wave_one.toml --flush-mib $FLUSH --out /tmp/x/one
cp /tmp/x/one/experiment.md $OUT/one-experiment.md 2>/dev/null
grep -hE "^\| ss \| [a-z0-9]+ \|" /tmp/x/one/experiment.md | tee -a $L
pack records1 x/packed/results.jsonl x/packed/manifest.json x/one/results.jsonl x/one/manifest.json
step certify $(( 150 - SECONDS )) $B certify --captures /tmp/gvr-caps --grid grids/dsa886.csv --sample 1500 --arms ss --poison-pad --knob SS_REG_MASK_PACKED=1 --knob SS_NEXT_WAVE_ONE=1
grep -E "^\| ss" /tmp/logs/certify.log | tee -a $L
pack logs logs
echo "done at $SECONDS s" | tee -a $L
finish_out
