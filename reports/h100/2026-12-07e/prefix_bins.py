#!/usr/bin/env python3
"""Issue 48 design check for a reg histogram on fixed key prefixes (no bracket round), on
the synthetic captures (`gvr-bench capture synth --steps 4 --seed 0 --out CAPS`), last step of
every cell: how many of 2^11 / 2^12 top-bit bins the row uses and how many values its
crossing bin holds (m, what the refine must then sort out), against the hint-bracketed BRL
bins of reg (2,048 bins over [min, max] of the hinted values) and their trash share.

    python3 prefix_bins.py CAPS > fixed-prefix-bins.txt      (numpy, safetensors)
"""
import glob
import sys

import numpy as np
from safetensors.numpy import load_file


def fkey(x):
    u = x.view(np.uint32).astype(np.uint64)
    return np.where((u >> 31) == 1, (~u) & 0xFFFFFFFF, u | 0x80000000).astype(np.uint64)


def crossing(cnt, k):
    above = np.cumsum(cnt[::-1])
    return len(cnt) - 1 - int(np.searchsorted(above, k))


res = {}
for path in sorted(glob.glob(sys.argv[1] + "/*.safetensors")):
    cell = path.split("/")[-1][: -len(".safetensors")]
    f = load_file(path)
    n = int(f["n"][-1])
    x = f["logits"][-1, :n]
    k = f["hints"].shape[1]
    if n <= k:
        continue
    key = fkey(x)
    row = [n, k]
    for bits in (11, 12):
        cnt = np.bincount((key >> (32 - bits)).astype(np.int64), minlength=1 << bits)
        row += [cnt[crossing(cnt, k)], (cnt > 0).sum()]
    h = f["hints"][-1]
    hv = x[h[(h >= 0) & (h < n)]]
    lo, hi = float(hv.min()), float(hv.max())
    bins = np.clip(np.floor(np.minimum((x - lo) * (2046.0 / (hi - lo)) + 1, 2047)), 0, 2047).astype(int)
    cnt = np.bincount(bins, minlength=2048)
    row += [cnt[crossing(cnt, k)], cnt[0] / n]
    res.setdefault(cell.rsplit("_L", 1)[0], []).append(row)
print("| segment | n | k | 11-bit m (median / max) | 11-bit bins used | 12-bit m | BRL m | BRL trash |")
print("|---|---:|---:|---:|---:|---:|---:|---:|")
for seg, v in res.items():
    a = np.array(v, dtype=float)
    print(f"| {seg} | {int(a[0, 0])} | {int(a[0, 1])} | {np.median(a[:, 2]):.0f} / {a[:, 2].max():.0f} | "
          f"{np.median(a[:, 3]):.0f} | {np.median(a[:, 4]):.0f} | {np.median(a[:, 6]):.0f} | {np.median(a[:, 7]):.2f} |")
