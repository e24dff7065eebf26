#!/usr/bin/env bash
# The full campaign over as many device calls as it takes: each call runs this
# same script on the (warm) machine; it finishes shard 0, then shard 1, each
# with what is left of the call, and resumes an unfinished shard on the next
# call (the run directories and `.done` marks live in /tmp of the machine, so a
# fresh machine starts over). Results: $OUT/s0/campaign-0of2.tgz, $OUT/s1/...
#
#   OUT=$OUT BIN=path/to/gvr-bench [CALL_S=585] [THEN="a.sh b.sh"] bash scripts/campaign_calls.sh
#
# THEN: further scripts (e.g. a `gvr-bench experiment` wrapper) to run once both shards are done, in the same call if
# time is left (each with OUT=$OUT/<script name> and an even share of what is left as
# BUDGET_S; a script given under 60 s is skipped and says so).
# NEED_GPU: a substring of the GPU's name (e.g. H200); on any other card the campaign is
# skipped (its numbers would not be comparable with the record) and THEN runs at once —
# or THEN_ELSE instead, when given (experiments worth a call on any card).
#
# RESTORE: a folder holding an earlier call's s0/ and s1/ tarballs (carried back to the
# device); on a fresh machine an unfinished shard is unpacked from there and resumed
# instead of starting over (the captures are synthesised again, byte for byte, so the
# capture hash agrees).
#
# Merge and read them with scripts/campaign_post.sh (merge, reports, A/A).
set -u
: "${OUT:?set OUT}"
T=${CALL_S:-585}
B="${BIN:-target/release/gvr-bench}"
case "$B" in /*) ;; *) B="$PWD/$B";; esac
GPU_NAME=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
CAMPAIGN=1
if [ -n "${NEED_GPU:-}" ] && [[ "$GPU_NAME" != *"$NEED_GPU"* ]]; then
  echo "campaign skipped: the GPU is '$GPU_NAME', not $NEED_GPU"; CAMPAIGN=0
  THEN=${THEN_ELSE:-${THEN:-}}
fi
for s in 0 1; do
  [ "$CAMPAIGN" = 1 ] || break
  d=/tmp/gvr-campaign/run-${s}of2
  [ -f "$d.done" ] && continue
  saved="${RESTORE:-}/s$s/campaign-${s}of2.tgz"
  # A tarball over 16 MiB came back in parts (campaign.sh): join them first.
  if [ -n "${RESTORE:-}" ] && [ ! -f "$saved" ] && [ -f "$saved.part00" ]; then
    mkdir -p /tmp/gvr-campaign && cat "$saved".part* > "/tmp/gvr-campaign/restore-s$s.tgz" \
      && saved="/tmp/gvr-campaign/restore-s$s.tgz"
  fi
  if [ ! -d "$d" ] && [ -n "${RESTORE:-}" ] && [ -f "$saved" ]; then
    mkdir -p /tmp/gvr-campaign/restore && tar xzf "$saved" -C /tmp/gvr-campaign/restore \
      && mv "/tmp/gvr-campaign/restore/$(basename "$d")" "$d" \
      && echo "shard $s: restored from $saved ($(wc -l < "$d/results.jsonl") records)"
  fi
  left=$((T - SECONDS))
  if [ "$left" -lt 200 ]; then echo "shard $s: not started ($left s left in this call)"; break; fi
  mkdir -p "$OUT/s$s"
  SHARD=$s/2 OUT="$OUT/s$s" BIN="$B" BUDGET_S=$left bash scripts/campaign.sh > /dev/null 2>&1 && touch "$d.done"
  echo "shard $s at ${SECONDS} s: $(grep -E 'grid rc' "$OUT/s$s/campaign.log" | tail -1)"
  [ -f "$d.done" ] || break
done
if [ "$CAMPAIGN" = 1 ]; then
  [ -f /tmp/gvr-campaign/run-0of2.done ] && [ -f /tmp/gvr-campaign/run-1of2.done ] || exit 0
fi
set -- ${THEN:-}
while [ $# -gt 0 ]; do
  share=$(( (T - SECONDS - 10) / $# ))
  name=$(basename "$1" .sh)
  if [ "$share" -lt 60 ]; then echo "$name: skipped ($share s for it)"; shift; continue; fi
  mkdir -p "$OUT/$name"
  echo "$name: BUDGET_S=$share at ${SECONDS} s"
  OUT="$OUT/$name" BIN="$B" BUDGET_S=$share bash "$1"; echo
  shift
done
