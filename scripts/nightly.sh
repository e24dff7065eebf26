#!/usr/bin/env bash
# Nightly performance gate on one GPU.
#
# Runs a fixed, representative subset of the dsa886 grid (a deterministic
# spread sample: every model, every batch size, the whole N range), with the
# `ss` arm's A/A twin interleaved, and compares it with the committed baseline
# run using the committed A/A noise floor. Prints a markdown summary and exits
# 1 on a regression (a case slower than the noise band, a case no longer
# exact, or geomean drift), 0 otherwise, 2/3 on bad input or no GPU.
#
#   scripts/nightly.sh                    # gate against reports/nightly/baseline
#   NIGHTLY_REBASELINE=1 scripts/nightly.sh   # after an intended change: record a new
#                                         # baseline + noise floor, then commit them
#
# Then an exactness soak: `certify --soak` on NIGHTLY_SOAK randomized batches
# per K (default 300; 0 skips it) on the shipped self-sampling paths (about 40 s on
# an H200: ~13 ms per case and arm with its kernel builds) from a seed that changes every night
# (YYYYMMDD·1000, printed; NIGHTLY_SOAK_SEED overrides), so the nights
# together cover new inputs; an inexact batch fails the gate (exit 1) and its
# line names the seed that replays it.
#
# Environment: BIN (default target/release/gvr-bench), CAPTURES (capture
# set; default /tmp/gvr-caps, generated with `capture synth` if missing),
# NIGHTLY_CASES (default 300), NIGHTLY_ARMS (default ss,radix), RUN_DIR,
# NIGHTLY_BASELINE (default reports/nightly/baseline), NIGHTLY_NOISE (default
# reports/nightly/noise.json), NIGHTLY_SOAK, NIGHTLY_SOAK_SEED,
# NIGHTLY_SOAK_ARMS (default ss,ss-varlen,ss-varlen-hints), NIGHTLY_GRID_ARGS (extra
# arguments for the gated grid run, split on spaces: e.g. a `--knob NAME=VALUE` that
# slows `ss` down, to see the gate fail).
set -uo pipefail
BIN="${BIN:-target/release/gvr-bench}"
CAPS="${CAPTURES:-/tmp/gvr-caps}"
CASES="${NIGHTLY_CASES:-300}"
ARMS="${NIGHTLY_ARMS:-ss,radix}"
BASE="${NIGHTLY_BASELINE:-reports/nightly/baseline}"
NOISE="${NIGHTLY_NOISE:-reports/nightly/noise.json}"
RUN="${RUN_DIR:-runs/nightly-$(date -u +%Y%m%dT%H%M%SZ)}"
SOAK="${NIGHTLY_SOAK:-300}"
SOAK_SEED="${NIGHTLY_SOAK_SEED:-$(( $(date -u +%Y%m%d) * 1000 ))}"
SOAK_ARMS="${NIGHTLY_SOAK_ARMS:-ss,ss-varlen,ss-varlen-hints}"
read -r -a GRID_ARGS <<< "${NIGHTLY_GRID_ARGS:-}"

if [ ! -f "$CAPS/manifest.json" ]; then
  "$BIN" capture synth --out "$CAPS" --steps 4 --seed 0 >/dev/null || exit $?
fi
"$BIN" grid --captures "$CAPS" --grid grids/dsa886.csv --sample "$CASES" \
  --arms "$ARMS" --aa ss --out "$RUN" --no-report "${GRID_ARGS[@]}" || exit $?

if [ "${NIGHTLY_REBASELINE:-0}" = 1 ]; then
  mkdir -p "$BASE"
  cp "$RUN/results.jsonl" "$RUN/manifest.json" "$BASE/"
  "$BIN" aa "$RUN" --arm ss --arm-b 'ss#2' --out "$NOISE" || exit $?
  echo "new baseline in $BASE and noise floor in $NOISE: commit both"
  exit 0
fi

"$BIN" regress --baseline "$BASE" --current "$RUN" --noise "$NOISE" --out "$RUN/regress.md"
rc=$?

if [ "$SOAK" -gt 0 ]; then
  # One captured case per model (K 2,048 / 512 / 1,024) picks the soak's K values.
  echo
  echo "exactness soak: $SOAK batches per K from seed $SOAK_SEED on $SOAK_ARMS"
  "$BIN" certify --captures "$CAPS" --batches 1 --sample 3 --no-adversarial \
    --arms "$SOAK_ARMS" --soak "$SOAK" --soak-seed "$SOAK_SEED" --poison-pad \
    | tee "$RUN/soak.md"
  soak_rc=${PIPESTATUS[0]}
  if [ "$rc" = 0 ]; then rc=$soak_rc; fi
fi
exit $rc
