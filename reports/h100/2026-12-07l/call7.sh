#!/usr/bin/env bash
# Issue 48, the mask-slots emit rule after the packed classify (`reg_cursor_emit`: K 2,048 on
# 1024/4 at every B, 1024/4 at K <= 1,024 up to 32 rows, 512/4 beyond one row per SM at every
# K): the emit-form experiment again (route = the new rule; `cur` / `slots` forced), the
# 1024/2 rung re-checked against 1024/4 and 512/4 with mask slots (experiments/
# reg_1024x2_rung.toml), the row and hints ahead of the row length at B <= 32
# (experiments/reg_prologue_small_b.toml), whole-grid certify, the floor sample (route / before).
set -u
source scripts/device_lib.sh
device_setup
step emit 150 $B experiment experiments/reg_emit_form.toml --flush-mib $FLUSH --out /tmp/x/emit
cp /tmp/x/emit/experiment.md $OUT/emit-experiment.md 2>/dev/null
grep -hE "^\| ss \| [a-z0-9]+ \|" /tmp/x/emit/experiment.md | tee -a $L
step prologue 150 $B experiment experiments/reg_prologue_small_b.toml --flush-mib $FLUSH --out /tmp/x/pro
cp /tmp/x/pro/experiment.md $OUT/prologue-experiment.md 2>/dev/null
grep -hE "^\| ss \| [a-z0-9]+ \|" /tmp/x/pro/experiment.md | tee -a $L
step x2 150 $B experiment experiments/reg_1024x2_rung.toml --flush-mib $FLUSH --out /tmp/x/x2
cp /tmp/x/x2/experiment.md $OUT/x2-experiment.md 2>/dev/null
grep -hE "^\| ss \| [a-z0-9]+ \|" /tmp/x/x2/experiment.md | tee -a $L
step certify 120 $B certify --captures /tmp/gvr-caps --grid grids/dsa886.csv --sample 1500 --arms ss --poison-pad --soak 2
grep -E "^\| ss" /tmp/logs/certify.log | tee -a $L
step floor 150 $B experiment experiments/floor_sample.toml --flush-mib $FLUSH --out /tmp/x/floor
$B report /tmp/x/floor > /tmp/logs/floor-report.log 2>&1
cp /tmp/x/floor/report/summary.md $OUT/floor-summary.md 2>/dev/null
grep -hE "^\| ss \| [a-z0-9]+ \|" /tmp/x/floor/experiment.md | tee -a $L
pack records x/emit/results.jsonl x/emit/manifest.json x/x2/results.jsonl x/x2/manifest.json x/pro/results.jsonl x/pro/manifest.json x/floor/results.jsonl x/floor/floor.jsonl x/floor/manifest.json x/floor/experiment.md
pack logs logs
echo "done at $SECONDS s" | tee -a $L
finish_out
