#!/usr/bin/env bash
# Device check for a GPU machine: builds nothing. Uses the prebuilt
# target/release/gvr-bench and writes every log under $OUT (default
# ./device_check_out).
#
#   scripts/device_check.sh            # all steps
#   scripts/device_check.sh info       # only the GPU self-check
#   scripts/device_check.sh info smoke # self-check, then a small grid + certify
#   steps: info smoke torch
#
# Each step runs under `timeout`; a failing step is recorded in
# $OUT/summary.txt and the script goes on. Exit status: number of failed steps
# (0 = all passed).
set -u

OUT="${OUT:-$PWD/device_check_out}"
mkdir -p "$OUT"
BIN="${BIN:-target/release/gvr-bench}"
CAPS="${CAPTURES:-/tmp/gvr-check-captures}"
export GVR_CACHE_DIR="${GVR_CACHE_DIR:-/tmp/gvr-kernel-cache}"
export RUST_LOG="${RUST_LOG:-info}"

# CUDA 13 libraries: driver (system), NVRTC (toolkit or pip wheel), CUPTI.
prepend_lib() { [ -d "$1" ] && LD_LIBRARY_PATH="$1${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; }
PIP_NVRTC="$(python3 -c 'import nvidia, os; print(os.path.join(list(nvidia.__path__)[0], "cu13", "lib"))' 2>/dev/null || true)"
[ -n "$PIP_NVRTC" ] && prepend_lib "$PIP_NVRTC"
for dir in /usr/local/cuda/targets/x86_64-linux/lib /usr/local/cuda/lib64 /usr/local/cuda/extras/CUPTI/lib64; do
    prepend_lib "$dir"
done
export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}"

SUMMARY="$OUT/summary.txt"
: > "$SUMMARY"
FAILED=0

# run NAME TIMEOUT_S CMD...: log stdout+stderr to $OUT/NAME.log, record status.
run() {
    local name="$1" limit="$2"
    shift 2
    local started=$SECONDS
    echo "== $name: $*" | tee -a "$SUMMARY"
    timeout "$limit" "$@" > "$OUT/$name.log" 2>&1
    local rc=$?
    local took=$((SECONDS - started))
    if [ $rc -eq 0 ]; then
        echo "   ok ($took s)" | tee -a "$SUMMARY"
    else
        [ $rc -eq 124 ] && echo "   TIMEOUT after $limit s" | tee -a "$SUMMARY"
        echo "   FAILED rc=$rc ($took s); last lines:" | tee -a "$SUMMARY"
        tail -n 15 "$OUT/$name.log" | sed 's/^/     /' | tee -a "$SUMMARY"
        FAILED=$((FAILED + 1))
    fi
    return $rc
}

want() {
    [ ${#STEPS[@]} -eq 0 ] && return 0
    local s
    for s in "${STEPS[@]}"; do [ "$s" = "$1" ] && return 0; done
    return 1
}
STEPS=("$@")

{
    echo "date: $(date -u +%FT%TZ)"
    echo "host: $(hostname)"
    echo "binary: $BIN ($(sha256sum "$BIN" 2>/dev/null | cut -c1-16))"
    echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
    echo "GVR_CACHE_DIR=$GVR_CACHE_DIR"
} | tee -a "$SUMMARY"
nvidia-smi > "$OUT/nvidia-smi.txt" 2>&1 || echo "nvidia-smi failed" | tee -a "$SUMMARY"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv \
    >> "$SUMMARY" 2>&1 || true

if [ ! -x "$BIN" ]; then
    echo "FATAL: $BIN missing (build it in release and carry it)" | tee -a "$SUMMARY"
    exit 100
fi

if want info; then
    # First run compiles every kernel; the second must report 0 compiled
    # (all from the disk cache). Then the same with events forced.
    run gpu-info-cold 240 "$BIN" gpu info
    run gpu-info-warm 120 "$BIN" gpu info
    grep -h "compiled .* kernels" "$OUT/gpu-info-cold.log" "$OUT/gpu-info-warm.log" 2>/dev/null | tee -a "$SUMMARY"
    grep -h "empty kernel\|flush " "$OUT/gpu-info-warm.log" 2>/dev/null | tee -a "$SUMMARY"

    run arms 30 "$BIN" arms
fi

if want smoke || want torch; then
    if [ ! -f "$CAPS/manifest.json" ]; then
        run synth 180 "$BIN" capture synth --out "$CAPS" --steps 4 --seed 1 --limit 6
    fi
fi

if want smoke; then
    run grid-smoke 300 "$BIN" grid --captures "$CAPS" --batches 1,16,128 --limit 12 \
        --out "$OUT/run-smoke" --no-report
    run report-smoke 60 "$BIN" report "$OUT/run-smoke"
    run certify-smoke 300 "$BIN" certify --captures "$CAPS" --batches 1,16 --limit 6
fi

if want torch; then
    if python3 -c 'import torch, safetensors' 2>/dev/null; then
        run peer-torch 240 python3 scripts/peer_torch.py --captures "$CAPS" \
            --out "$OUT/torch.jsonl" --batches 1,16 --limit 6
    else
        echo "== peer-torch: SKIPPED (python3 lacks torch or safetensors)" | tee -a "$SUMMARY"
    fi
fi

echo "failed steps: $FAILED" | tee -a "$SUMMARY"
exit $FAILED
