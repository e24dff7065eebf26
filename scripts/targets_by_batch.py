#!/usr/bin/env python3
"""The per-batch-size tables of reports/TARGETS.md from two committed runs.

    scripts/targets_by_batch.py CAMPAIGN/results.jsonl.gz FLOOR_RUN_DIR

CAMPAIGN: a full campaign's records (ss, radix, torch); FLOOR_RUN_DIR: a `grid --floor`
run (results.jsonl[.gz] with ss and radix, floor.jsonl[.gz]). Prints, per B: ss vs radix
and vs torch (geomean of per-case ratios) and ss's mean roofline from the campaign; radix /
floor, ss / floor (geomeans), the floor's mean roofline and median µs from the floor run.
Then the bandwidth target's subset (B >= 256 & N >= 64K) per B, for ss (campaign) and the
floor, and the mean it would reach if B >= 512 ran at 95 % or 100 % of the floor's
throughput with B 256 as it is. Means of the cold reps; only exact records enter.
"""
import collections
import gzip
import json
import math
import os
import statistics
import sys

BW = 4.49e12


def lines(path):
    for p in (path, path + ".gz"):
        if os.path.exists(p):
            with (gzip.open(p, "rt") if p.endswith(".gz") else open(p)) as f:
                yield from f
            return
    sys.exit(f"{path}: not found (plain or .gz)")


def load(path):
    return [json.loads(line) for line in lines(path)]


def gm(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def times(records):
    """case -> arm -> (mean cold µs, record), exact records only."""
    out = collections.defaultdict(dict)
    for r in records:
        if r.get("exact", {}).get("status") == "exact" and r.get("cold_us"):
            out[r["case"]][r["arm"]] = (statistics.mean(r["cold_us"]), r)
    return out


def roofline(r, us):
    return r["bytes"] / (us * 1e-6) / BW


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    camp = times(load(sys.argv[1].removesuffix(".gz")))
    run = sys.argv[2]
    flo = times(load(os.path.join(run, "results.jsonl")))
    floors = {r["case"]: (statistics.mean(r["cold_us"]), r)
              for r in load(os.path.join(run, "floor.jsonl")) if r.get("cold_us")}
    by_b = collections.defaultdict(lambda: collections.defaultdict(list))
    for arms in camp.values():
        if "ss" not in arms:
            continue
        ss, r = arms["ss"]
        g = by_b[r["b"]]
        for base in ("radix", "torch"):
            if base in arms:
                g[base].append(arms[base][0] / ss)
        g["roof"].append(roofline(r, ss))
    for case, (f, r) in floors.items():
        g = by_b[r["b"]]
        for arm in ("radix", "ss"):
            if arm in flo.get(case, {}):
                g["f_" + arm].append(flo[case][arm][0] / f)
        g["f_roof"].append(roofline(r, f))
        g["f_us"].append(f)
    print("| B | ss vs radix | ss vs torch | ss roofline | radix / floor | ss / floor | floor roofline | floor median |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for b in sorted(by_b):
        g = by_b[b]
        print(f"| {b:,} | {gm(g['radix']):.2f}× | {gm(g['torch']):.2f}× | {100 * statistics.mean(g['roof']):.1f} % "
              f"| {gm(g['f_radix']):.2f} | {gm(g['f_ss']):.2f} | {100 * statistics.mean(g['f_roof']):.1f} % "
              f"| {statistics.median(g['f_us']):.2f} µs |")
    # The bandwidth target's subset, the campaign's ss against the floor run's floor.
    bw = {}
    for case, arms in camp.items():
        if "ss" in arms and case in floors:
            ss, r = arms["ss"]
            if r["b"] >= 256 and r["n"] >= 65536:
                bw[case] = (r["b"], roofline(r, ss), roofline(r, floors[case][0]))
    print(f"\nB >= 256 & N >= 64K: {len(bw)} cases, ss {100 * statistics.mean(v[1] for v in bw.values()):.1f} %, "
          f"floor {100 * statistics.mean(v[2] for v in bw.values()):.1f} %")
    for b in sorted({v[0] for v in bw.values()}):
        sel = [v for v in bw.values() if v[0] == b]
        print(f"  B {b}: ss {100 * statistics.mean(v[1] for v in sel):.1f} %, "
              f"floor {100 * statistics.mean(v[2] for v in sel):.1f} %")
    for share in (0.95, 1.0):
        m = [v[1] if v[0] == 256 else share * v[2] for v in bw.values()]
        print(f"  B >= 512 at {share:.0%} of the floor's throughput, B 256 as is: {100 * statistics.mean(m):.1f} %")


if __name__ == "__main__":
    main()
