#!/usr/bin/env bash
# The full campaign on one GPU machine (no build: uses a prebuilt release binary):
# every case of the grid x every arm, the report, the A/A noise floor, packed.
#
#   OUT=$OUT scripts/campaign.sh                     # the whole dsa886 grid
#   SHARD=0/2 OUT=$OUT scripts/campaign.sh           # half of it (one device call);
#   SHARD=1/2 OUT=$OUT scripts/campaign.sh           # the other half (next call)
#   DEVICES=0,1,2,3 OUT=$OUT scripts/campaign.sh       # one worker per GPU, merged
#
# Steps: synthetic captures (deterministic, so two calls agree on the capture
# hash), `gpu info`, the grid of every arm + radix A/A twin + torch peer
# (`--peer torch`; with DEVICES one worker per GPU), then report (summary.md, cases.csv, summary.json, SVG), A/A
# noise floor, environment. Everything that must come back is packed into
# $OUT/campaign<-shard>.tgz (captures and raw torch records are left out; the
# tar compresses results.jsonl). A grid that runs past GRID_TIMEOUT is stopped
# with SIGINT after its current case (exit 130, resumable: the next call with
# the same RUN_DIR on a warm machine continues it); what finished is packed.
#
# Merging two shard calls on the host afterwards (merge, reports, A/A, what the tree
# keeps): scripts/campaign_post.sh FILES_AT reports/<gpu>/<date>/campaign-<sha>
#
# FLOOR=1 adds `--floor` (each case's latency floor into floor.jsonl); AA_ARM=
# and PEER= (empty) leave out the A/A twin and the torch peer; PEER=torch,flashinfer
# adds the flashinfer peer (carry .whl from scripts/fetch_peer_wheels.sh: it is
# installed into /tmp/site first). TIMING=graph|events times every arm and peer
# that way instead of by CUPTI kernel time. FLUSH_MIB sets `--flush-mib` (the L2
# eviction write before each cold rep, arms, floor and peers alike): 128 by default
# here, where the tool's own default is 512. The same-run A/B/A of 2026-12-07d
# (scripts/flush_ab.py) put 128 MiB within 0.4 % of 512 for ss, radix and the floor
# (A/A 0.1 %) at 40 % less time per rep; that is what fits the whole grid with both
# peers and the floor in one session.
#
# Environment: OUT, BIN, CAPS, GRID, ARMS, AA_ARM, PEER, FLOOR, FLUSH_MIB, SHARD, SAMPLE (a spread
# sample of that many cases instead of the whole grid), RUN_DIR, PYTHON,
# BUDGET_S (whole-script seconds; default 570 with SHARD, so a half fits a
# 10-minute job, else none), GRID_TIMEOUT (s; default: what BUDGET_S leaves
# after 50 s for report and packing, or 1500 without a budget; report and
# packing take seconds, so a larger reserve only cuts the grid short).
set -u
OUT="${OUT:-$PWD/campaign_out}"; mkdir -p "$OUT"
BIN="${BIN:-target/release/gvr-bench}"
CAPS="${CAPS:-/tmp/gvr-caps}"
GRID="${GRID:-grids/dsa886.csv}"
ARMS="${ARMS:-ss,radix,radix-mcta,filtered,gvr1}"
AA_ARM="${AA_ARM-radix}"
PEER="${PEER-torch}"
FLOOR="${FLOOR:-}"
FLUSH_MIB="${FLUSH_MIB:-128}"
SHARD="${SHARD:-}"
DEVICES="${DEVICES:-}"
TIMING="${TIMING:-}"
case ",$PEER," in *,flashinfer,*)
  PEER_ENV=$(bash scripts/install_peer_wheels.sh /tmp/site) && eval "$PEER_ENV"
  # Without the prebuilt module (.whl/aot, scripts/build_flashinfer_aot.sh), flashinfer's
  # JIT build of its top-K module runs past 8.5 minutes on the device (unfinished) and took
  # 16-20 minutes on a 2-core machine (one translation unit on one core;
  # reports/h100/2026-12-07b): start it now, in its own session so that it outlives this
  # call on a warm machine, while our arms run. The peer waits on flashinfer's build
  # lock and then loads the module; its jit_build_s (peer-flashinfer.json) is then the
  # wait, not the build. With the prebuilt module this returns at once.
  mkdir -p /tmp/gvr-fi-jit
  if [ ! -f /tmp/gvr-fi-jit/started ]; then
    date -u +%FT%TZ > /tmp/gvr-fi-jit/started
    setsid nohup "${PYTHON:-python3}" -c 'import importlib, time; t = time.time(); importlib.import_module("flashinfer.topk").get_topk_module(); print(f"flashinfer top-K JIT built in {time.time() - t:.0f} s")' \
      > /tmp/gvr-fi-jit/build.log 2>&1 < /dev/null &
  fi ;;
esac
TAG="${SHARD:+-${SHARD/\//of}}"
RUN="${RUN_DIR:-/tmp/gvr-campaign/run${TAG}}"
export GVR_CACHE_DIR="${GVR_CACHE_DIR:-/tmp/gvr-kernel-cache}"
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
LOGS="$OUT/logs"; mkdir -p "$LOGS" "$(dirname "$RUN")"
LOG="$OUT/campaign.log"
SECONDS=0
step() { # step NAME TIMEOUT CMD...: time it, keep its output, never abort the session
  local name="$1" limit="$2"; shift 2; local t0=$SECONDS
  echo "== $name: $*" | tee -a "$LOG"
  timeout -s INT -k 30 "$limit" "$@" > "$LOGS/$name.log" 2>&1; local rc=$?
  echo "   rc=$rc in $((SECONDS - t0)) s" | tee -a "$LOG"
  tail -n 30 "$LOGS/$name.log" >> "$LOG"
  return $rc
}
echo "date $(date -u +%FT%TZ) arms=$ARMS shard=${SHARD:-all} run=$RUN" | tee "$LOG"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv | tee -a "$LOG"

if [ ! -f "$CAPS/manifest.json" ]; then
  step synth 600 "$BIN" capture synth --out "$CAPS" --steps 4 --seed 0
  du -sh "$CAPS" | tee -a "$LOG"
fi
if [ -f "$RUN/manifest.json" ]; then
  # A resumed run: its options are its own, and the device facts (`gpu info`: flush,
  # launch overhead, read bandwidth) are in its first call's log.
  GRID_CMD=("$BIN" grid --resume "$RUN" --no-report)
else
  step info 120 "$BIN" gpu info
  GRID_CMD=("$BIN" grid --captures "$CAPS" --grid "$GRID" --arms "$ARMS" ${AA_ARM:+--aa "$AA_ARM"}
            ${PEER:+--peer "$PEER"} ${PYTHON:+--python "$PYTHON"} ${TIMING:+--timing "$TIMING"} ${FLUSH_MIB:+--flush-mib "$FLUSH_MIB"} ${FLOOR:+--floor} --out "$RUN" --no-report ${SHARD:+--shard "$SHARD"}
            ${DEVICES:+--devices "$DEVICES"} ${SAMPLE:+--sample "$SAMPLE"})
fi
BUDGET_S="${BUDGET_S:-$([ -n "$SHARD$DEVICES" ] && echo 570 || echo 0)}"
if [ -n "${GRID_TIMEOUT:-}" ]; then GRID_LIMIT="$GRID_TIMEOUT"
elif [ "$BUDGET_S" -gt 0 ]; then GRID_LIMIT=$(( BUDGET_S - SECONDS - 50 )); [ "$GRID_LIMIT" -lt 30 ] && GRID_LIMIT=30
else GRID_LIMIT=1500; fi
step grid "$GRID_LIMIT" "${GRID_CMD[@]}"
GRID_RC=$?

if [ -s "$RUN/results.jsonl" ]; then
  step report 15 "$BIN" report "$RUN" --out "$RUN/report"
  case ",$PEER," in *,torch,*) step report-vs-torch 8 "$BIN" report "$RUN" --base torch --out "$RUN/report-torch-base" --no-plots ;; esac
  [ -n "$AA_ARM" ] && step aa 5 "$BIN" aa "$RUN" --arm "$AA_ARM" --arm-b "$AA_ARM#2" --out "$RUN/aa.json"
fi
[ -f /tmp/gvr-fi-jit/build.log ] && cp /tmp/gvr-fi-jit/build.log "$RUN/flashinfer-jit-build.log"
{
  date -u +%FT%TZ; nvidia-smi; nvcc --version 2>/dev/null
  ${PYTHON:-python3} -c 'import torch; print("torch", torch.__version__, torch.version.cuda)' 2>&1
  ${PYTHON:-python3} -c 'import flashinfer; print("flashinfer", flashinfer.__version__)' 2>&1
} > "$RUN/environment.txt" 2>&1
echo "grid rc=$GRID_RC records=$(wc -l < "$RUN/results.jsonl" 2>/dev/null || echo 0)" | tee -a "$LOG"

# The device returns only a few files: one tgz (results.jsonl compresses ~6x).
# The peers' raw records stay in it: a grid stopped while a peer ran has not
# joined them yet, and a later call resumes from this tgz (campaign_calls.sh
# RESTORE). A merged --devices run also holds every shard's records, so the
# shards' copies stay behind.
NAME="$(basename "$RUN")"
EXCLUDE=()
[ -s "$RUN/results.jsonl" ] && [ -d "$RUN/shards" ] && EXCLUDE+=(--exclude "$NAME/shards/*/results.jsonl")
tar czf "$OUT/campaign${TAG}.tgz" "${EXCLUDE[@]}" -C "$(dirname "$RUN")" "$NAME" \
  -C "$OUT" logs campaign.log && rm -rf "$LOGS"
# The device returns files of at most 16 MiB: a bigger tarball (the whole grid with both
# peers' raw records is ~34 MB) comes back in parts, campaign.tgz.part00, part01, …;
# campaign_post.sh and campaign_calls.sh (RESTORE) join them.
TGZ="$OUT/campaign${TAG}.tgz"
if [ -f "$TGZ" ] && [ "$(stat -c %s "$TGZ")" -gt 16000000 ]; then
  split -b 16000000 -d "$TGZ" "$TGZ.part" && rm "$TGZ"
fi
ls -l "$OUT" | tee -a "$LOG"
echo "done $(date -u +%FT%TZ)" | tee -a "$LOG"
exit "$GRID_RC"
