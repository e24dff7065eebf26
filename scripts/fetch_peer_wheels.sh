#!/usr/bin/env bash
# The Python wheels `grid --peer flashinfer` needs on the GPU machine, which
# has no network: downloaded here into .whl/ (git-ignored; add `/.whl/` to
# .git/info/exclude) and carried with the repository to the device.
#
#   scripts/fetch_peer_wheels.sh            # writes .whl/ (about 6 MiB)
#
# What is carried, and why:
# - flashinfer-python 0.7.2.post1, trimmed to its top-K path by
#   scripts/trim_flashinfer.py (the published wheel is 62 MB; the transfer to
#   the device is limited to 64 MiB with the repository). The timed function,
#   flashinfer.topk.top_k, and the JIT sources of its module are unchanged.
# - apache-tvm-ffi 0.1.15.post2 (cp312, manylinux): flashinfer's JIT binds its
#   modules with it, and the device image does not have it.
# Every other Requires-Dist of flashinfer that the top-K path imports (torch,
# numpy, filelock, jinja2, packaging, requests, nvidia-ml-py, tqdm, ninja,
# typing-extensions) is in the device image already; the rest (cutlass-dsl,
# cudnn-frontend, cuda-tile, nccl4py, ...) serve other kernel families and
# are not imported by the trimmed package.
#
# On the device (Python 3.12, PyTorch 2.11, CUDA 13, nvcc, no network):
#   eval "$(scripts/install_peer_wheels.sh /tmp/site)"
# then `gvr-bench grid ... --peer torch,flashinfer`. Without the prebuilt module
# of scripts/build_flashinfer_aot.sh (.whl/aot/topk.so), the first run builds the
# top-K module with nvcc (FlashInfer's JIT: unfinished after 8.5 minutes on the device); that time is in the
# run's manifest, not in any record.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=.whl
PY=${PYTHON:-python3}
FLASHINFER=flashinfer-python==0.7.2.post1
TVM_FFI=apache-tvm-ffi==0.1.15.post2
PLATFORM=(--only-binary=:all: --python-version 3.12 --implementation cp
  --platform manylinux_2_28_x86_64 --platform manylinux_2_24_x86_64
  --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform any)

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$PY" -m pip download -q --no-deps "${PLATFORM[@]}" -d "$tmp" "$FLASHINFER" "$TVM_FFI"
mkdir -p "$OUT"
rm -f "$OUT"/flashinfer_python-*.whl "$OUT"/apache_tvm_ffi-*.whl
"$PY" scripts/trim_flashinfer.py "$tmp"/flashinfer_python-*.whl --out "$OUT"
cp "$tmp"/apache_tvm_ffi-*.whl "$OUT"/
ls -l "$OUT"
du -ch "$OUT"/*.whl | tail -1
