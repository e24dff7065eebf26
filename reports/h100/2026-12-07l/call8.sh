#!/usr/bin/env bash
# Issue 48: the 1024/2 rung re-checked with the `ss` arm honouring `reg.entry` (call7's x2
# variants ran main instead: the routed arm dropped a forced entry's plan), then on an H200
# the floor sample (the H200 targets; never measured there), else the emit-form
# experiment once more on this card.
set -u
source scripts/device_lib.sh
device_setup
step x2 120 $B experiment experiments/reg_1024x2_rung.toml --flush-mib $FLUSH --out /tmp/x/x2
cp /tmp/x/x2/experiment.md $OUT/x2-experiment.md 2>/dev/null
grep -hE "^\| ss \| [a-z0-9]+ \|" /tmp/x/x2/experiment.md | tee -a $L
if [ $H200 = 1 ]; then
  step floor 200 $B experiment experiments/floor_sample.toml --flush-mib $FLUSH --out /tmp/x/floor
  $B report /tmp/x/floor > /tmp/logs/floor-report.log 2>&1
  cp /tmp/x/floor/report/summary.md $OUT/floor-summary.md 2>/dev/null
  grep -hE "^\| ss \| [a-z0-9]+ \|" /tmp/x/floor/experiment.md | tee -a $L
fi
pack records x/x2/results.jsonl x/x2/manifest.json x/floor/results.jsonl x/floor/floor.jsonl x/floor/manifest.json x/floor/experiment.md
pack logs logs
echo "done at $SECONDS s" | tee -a $L
finish_out
