#!/usr/bin/env bash
# Nsight Compute profiles of single kernel launches in one H200 device call.
# Each line of $NCU_CASES is
#   label|ENV=VAL ...|arm|cell|batch|kernel-regex|set
# and profiles the first launch whose name matches kernel-regex while
# `gvr-bench certify` runs `arm` on that (cell, batch) with that environment
# (`-` for none). set: `full` (every section, the report kept, plus its
# per-SASS-line source page as CSV) or `brief` (speed of light, memory,
# warp state, and the DRAM/L2 byte counters). Clocks are left as they are
# (--clock-control none). Everything is packed into $OUT/ncu.tgz, also when
# the call runs out of time (BUDGET_S, default 300 s). NCU_ARGS adds ncu
# options to every case, e.g. `--warp-sampling-interval 0` (a sample every
# 32 cycles) so that a few-microsecond launch gets enough stall samples.
#
#   NCU_CASES=$'main|-|ss-main|v4_pro_512k_L10|256|ss_main_b512_u8|brief' \
#     OUT=$OUT scripts/h200_ncu.sh
set -u
OUT="${OUT:-$PWD/h200_out}"; mkdir -p "$OUT"
BIN="${GVR_BIN:-target/release/gvr-bench}"
CAPS="${CAPS:-/tmp/gvr-caps}"
BUDGET_S="${BUDGET_S:-300}"
W=/tmp/ncu; rm -rf "$W"; mkdir -p "$W"
export GVR_CACHE_DIR="${GVR_CACHE_DIR:-/tmp/gvr-kernel-cache}"
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
LOG="$W/ncu.log"
pack() { tar czf "$OUT/ncu.tgz" -C "$W" .; }
trap pack EXIT
BYTES=dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum,lts__t_sector_hit_rate.pct,gpu__time_duration.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed
echo "date $(date -u +%FT%TZ) $(git rev-parse --short HEAD 2>/dev/null) $(nvidia-smi --query-gpu=name,uuid --format=csv,noheader)" | tee "$LOG"
[ -f "$CAPS/manifest.json" ] || "$BIN" capture synth --out "$CAPS" --steps 4 --seed 0 > "$W/synth.log" 2>&1
while IFS='|' read -r label envs arm cell batch kernel set; do
  [ -n "$label" ] || continue
  left=$((BUDGET_S - SECONDS))
  if [ "$left" -lt 20 ]; then echo "== $label: skipped ($left s left)" | tee -a "$LOG"; continue; fi
  [ "$envs" = "-" ] && envs=""
  case "$set" in
    full) what=(--set full --import-source yes -o "$W/$label");;
    *) what=(--section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats --section LaunchStats --section Occupancy --metrics "$BYTES");;
  esac
  t0=$SECONDS
  echo "== $label: $envs ncu $set -k $kernel; certify --arms $arm --cells $cell --batches $batch" | tee -a "$LOG"
  # shellcheck disable=SC2086  # word splitting of the environment list and NCU_ARGS is intended
  env $envs timeout "$left" ncu --clock-control none ${NCU_ARGS:-} "${what[@]}" -k "regex:$kernel" -c 1 \
    "$BIN" certify --captures "$CAPS" --cells "$cell" --batches "$batch" --arms "$arm" --no-adversarial \
    > "$W/$label.log" 2>&1
  echo "   rc=$? in $((SECONDS - t0)) s" | tee -a "$LOG"
  if [ "$set" = full ] && [ -f "$W/$label.ncu-rep" ]; then
    ncu --import "$W/$label.ncu-rep" --page details > "$W/$label.details.txt" 2>&1
    ncu --import "$W/$label.ncu-rep" --page source --csv --print-source sass > "$W/$label.sass.csv" 2>&1
    ncu --import "$W/$label.ncu-rep" --page source --csv --print-source cuda > "$W/$label.cuda.csv" 2>&1
  fi
done <<< "${NCU_CASES:-}"
echo "done $(date -u +%FT%TZ)" | tee -a "$LOG"
