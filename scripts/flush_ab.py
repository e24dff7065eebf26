#!/usr/bin/env python3
"""Flush-size A/B/A: runs a (512 MiB), b (128), c (256), d (512 again) of one sample.
Per (case, arm) mean cold us (floor.jsonl as arm 'floor'); ratios X/a; picks the smallest
flush whose every arm stays within 1 % of the A/A (d/a) geomean, overall and on the
small-footprint cases (<= 8 MiB of rows), where a partial eviction would show first."""
import json, os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ab_compare import geomean  # noqa: E402  (the A/B scripts' one geomean)
root = sys.argv[1]
runs = {"a": 512, "b": 128, "c": 256, "d": 512}
def load(t):
    out = {}
    d = os.path.join(root, t)
    for name, arm_of in (("results.jsonl", None), ("floor.jsonl", "floor")):
        p = os.path.join(d, name)
        if not os.path.exists(p):
            continue
        for line in open(p):
            r = json.loads(line)
            cold = r.get("cold_us") or []
            if not cold or (arm_of is None and (r.get("exact") or {}).get("status") != "exact"):
                continue
            out[(r["case"], arm_of or r["arm"])] = (sum(cold) / len(cold), r.get("bytes", 0))
    return out
data = {t: load(t) for t in runs}
def gm(xs):
    return geomean(xs) if xs else float("nan")
def pct(xs, q):
    xs = sorted(xs); return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")
arms = sorted({a for (_, a) in data["a"]})
res = {}
for t in ("b", "c", "d"):
    for arm in arms:
        for subset in ("all", "small"):
            rs = [data[t][k][0] / v[0] for k, v in data["a"].items() if k[1] == arm and k in data[t]
                  and (subset == "all" or v[1] <= 8 << 20)]
            res[(t, arm, subset)] = rs
            print(f"{runs[t]:>4} MiB / 512 [{t}/a] {arm:8} {subset:5} n={len(rs):4} gm={gm(rs):.4f} "
                  f"P5={pct(rs, .05):.3f} P50={pct(rs, .5):.3f} P95={pct(rs, .95):.3f}")
choice = 512
for t in ("b", "c"):
    ok = True
    for arm in arms:
        for subset in ("all", "small"):
            x, aa = gm(res[(t, arm, subset)]), gm(res[("d", arm, subset)])
            if not (len(res[(t, arm, subset)]) >= 20 and min(aa, 1) * 0.99 <= x <= max(aa, 1) * 1.01):
                ok = False
    print(f"flush {runs[t]} MiB: {'accepted' if ok else 'rejected'} (every arm within 1 % of the A/A geomean, all and small)")
    if ok:
        choice = runs[t]; break
print(f"choice: {choice} MiB")
open(os.path.join(root, "choice"), "w").write(str(choice))
