#!/usr/bin/env bash
# One H200 device call of tuning experiments: each line of $EXPERIMENTS is
#   label|ENV=VAL ENV2=VAL2|gvr-bench arguments[|binary]
# and runs `gvr-bench <arguments>` with that environment (`-` for none),
# `--out runs/<label>` appended to `grid` runs; the optional fourth field
# names another gvr-bench binary for that line (a same-run A/B of two
# commits when a change has no knob), else $GVR_BIN. Logs and run directories are
# packed into $OUT/experiments.tgz, also when the call runs out of time
# (BUDGET_S, default 560 s: later experiments are skipped, not cut short).
#
#   EXPERIMENTS=$'a|-|grid --segment v32 --arms ss,radix\nb|GVR_SS_REG_ENTRY=ss_reg_b512_v4|grid ...' \
#     OUT=$OUT scripts/h200_experiments.sh
set -u
OUT="${OUT:-$PWD/h200_out}"; mkdir -p "$OUT"
BIN="${GVR_BIN:-target/release/gvr-bench}"
CAPS="${CAPS:-/tmp/gvr-caps}"
BUDGET_S="${BUDGET_S:-560}"
W=/tmp/experiments; rm -rf "$W"; mkdir -p "$W/logs" "$W/runs"
export GVR_CACHE_DIR="${GVR_CACHE_DIR:-/tmp/gvr-kernel-cache}"
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
LOG="$W/experiments.log"
pack() { tar czf "$OUT/experiments.tgz" -C "$W" .; }
trap pack EXIT
echo "date $(date -u +%FT%TZ) $("$BIN" --version) $(nvidia-smi --query-gpu=name,uuid --format=csv,noheader)" | tee "$LOG"
[ -f "$CAPS/manifest.json" ] || "$BIN" capture synth --out "$CAPS" --steps 4 --seed 0 > "$W/logs/synth.log" 2>&1
while IFS='|' read -r label envs args line_bin; do
  [ -n "$label" ] || continue
  left=$((BUDGET_S - SECONDS))
  if [ "$left" -lt 20 ]; then echo "== $label: skipped ($left s left)" | tee -a "$LOG"; continue; fi
  [ "$envs" = "-" ] && envs=""
  extra=""; case "$args" in grid*) extra="--out $W/runs/$label --no-report";; esac
  t0=$SECONDS
  bin="${line_bin:-$BIN}"
  echo "== $label: $envs gvr-bench $args ($("$bin" --version))" | tee -a "$LOG"
  # shellcheck disable=SC2086  # word splitting of the argument list is intended
  env $envs timeout "$left" "$bin" $args --captures "$CAPS" $extra > "$W/logs/$label.log" 2>&1
  echo "   rc=$? in $((SECONDS - t0)) s" | tee -a "$LOG"
  tail -n 8 "$W/logs/$label.log" >> "$LOG"
done <<< "${EXPERIMENTS:-}"
echo "done $(date -u +%FT%TZ)" | tee -a "$LOG"
