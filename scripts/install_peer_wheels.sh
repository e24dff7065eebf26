#!/usr/bin/env bash
# On the GPU machine (no network): install the carried peer wheels of
# scripts/fetch_peer_wheels.sh into a target folder, and flashinfer's prebuilt
# top-K module of scripts/build_flashinfer_aot.sh when it was carried too
# (.whl/aot/topk.so: flashinfer then loads it instead of compiling: unfinished after 8.5 minutes on the device).
#
#   source <(scripts/install_peer_wheels.sh [TARGET])   # default /tmp/site; sets PYTHONPATH
#
# Prints the `export PYTHONPATH=...` line to evaluate; everything else goes to stderr.
set -euo pipefail
cd "$(dirname "$0")/.."
TARGET="${1:-/tmp/site}"
ls .whl/*.whl > /dev/null 2>&1 || { echo "no .whl/*.whl: run scripts/fetch_peer_wheels.sh here and carry .whl" >&2; exit 2; }
python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target "$TARGET" .whl/*.whl >&2
if [ -f .whl/aot/topk.so ]; then
  mkdir -p "$TARGET/flashinfer/data/aot/topk"
  cp .whl/aot/topk.so "$TARGET/flashinfer/data/aot/topk/topk.so"
  echo "flashinfer top-K module: prebuilt ($(head -1 .whl/aot/BUILD.txt 2>/dev/null || echo 'no BUILD.txt'))" >&2
else
  echo "flashinfer top-K module: not carried; flashinfer's JIT builds it on first use (unfinished after 8.5 min on the device)" >&2
fi
echo "export PYTHONPATH=\"$TARGET\${PYTHONPATH:+:\$PYTHONPATH}\""
