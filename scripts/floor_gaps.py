#!/usr/bin/env python3
"""Where an arm is far from the latency floor (a `grid --floor` run).

    scripts/floor_gaps.py RUN_DIR [--arm ss] [--base radix]

Joins RUN_DIR/results.jsonl with RUN_DIR/floor.jsonl (either may be gzipped,
as committed reports keep them) on the case and prints,
per (arm's family, N band, B band): cases, geomean arm/floor, geomean
base/floor (the most any kernel of the floor's launch shapes could gain on
the base there), median floor and arm µs; then the issue-4 target subsets
measured on the floor itself (B = 1 median; B >= 256 & N >= 64K mean read
bandwidth; whole-grid mean roofline) next to the arm's. Means of the cold
reps, as in the report; only exact, timed records enter.
"""
import argparse
import gzip
import json
import math
import os
import signal
import statistics
import sys

BW = 4.49e12


def mean(xs):
    return sum(xs) / len(xs)


def gm(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def n_band(n):
    for top, label in ((2100, "N<=2K"), (4300, "N<=4K"), (8500, "N<=8K"), (17500, "N<=16K"),
                       (70000, "N<=64K"), (140000, "N<=128K")):
        if n <= top:
            return label
    return "N>128K"


def b_band(b):
    return "B=1" if b == 1 else "B2-8" if b <= 8 else "B16-64" if b <= 64 else "B128-256" if b <= 256 else "B512+"


def records(run, name):
    """The JSON lines of RUN/NAME, or of RUN/NAME.gz."""
    for path, opener in ((os.path.join(run, name), open), (os.path.join(run, name + ".gz"), gzip.open)):
        if os.path.isfile(path):
            with opener(path, "rt") as f:
                return [json.loads(line) for line in f if line.strip()]
    sys.exit(f"{run}: no {name} or {name}.gz (a run made with `gvr-bench grid --floor`)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("run")
    ap.add_argument("--arm", default="ss")
    ap.add_argument("--base", default="radix")
    a = ap.parse_args()
    results = records(a.run, "results.jsonl")
    floors = records(a.run, "floor.jsonl")
    t = {}
    fam = {}
    for r in results:
        if r["exact"].get("status") == "exact" and r["cold_us"] and r["arm"] in (a.arm, a.base):
            t[(r["case"], r["arm"])] = mean(r["cold_us"])
            if r["arm"] == a.arm:
                fam[r["case"]] = (r.get("variant") or "?").split("/")[0]
    groups = {}
    rows = []
    for f in floors:
        c = f["case"]
        if not f["cold_us"] or (c, a.arm) not in t or (c, a.base) not in t:
            continue
        fl = mean(f["cold_us"])
        row = dict(case=c, n=f["n"], b=f["b"], bytes=f["bytes"], floor=fl,
                   arm=t[(c, a.arm)], base=t[(c, a.base)], fam=fam[c])
        rows.append(row)
        groups.setdefault((row["fam"], n_band(f["n"]), b_band(f["b"])), []).append(row)
    print(f"{len(rows)} cases with {a.arm}, {a.base} and a floor")
    print(f"{'family':9} {'N':8} {'B':9} {'cases':>5} {a.arm + '/floor':>10} {a.base + '/floor':>12} "
          f"{'floor us':>9} {a.arm + ' us':>8}")
    order = ["N<=2K", "N<=4K", "N<=8K", "N<=16K", "N<=64K", "N<=128K", "N>128K"]
    border = ["B=1", "B2-8", "B16-64", "B128-256", "B512+"]
    for key in sorted(groups, key=lambda k: (k[0], order.index(k[1]), border.index(k[2]))):
        g = groups[key]
        print(f"{key[0]:9} {key[1]:8} {key[2]:9} {len(g):5} {gm([r['arm'] / r['floor'] for r in g]):10.2f} "
              f"{gm([r['base'] / r['floor'] for r in g]):12.2f} {statistics.median(r['floor'] for r in g):9.2f} "
              f"{statistics.median(r['arm'] for r in g):8.2f}")
    print()
    print(f"whole grid: {a.arm}/floor {gm([r['arm'] / r['floor'] for r in rows]):.3f}, "
          f"{a.base}/floor {gm([r['base'] / r['floor'] for r in rows]):.3f}, "
          f"{a.base}/{a.arm} {gm([r['base'] / r['arm'] for r in rows]):.3f}")
    b1 = [r for r in rows if r["b"] == 1]
    print(f"B = 1 median: floor {statistics.median(r['floor'] for r in b1):.2f} us, "
          f"{a.arm} {statistics.median(r['arm'] for r in b1):.2f} us")
    bw = [r for r in rows if r["b"] >= 256 and r["n"] >= 65536]
    print(f"B >= 256 & N >= 64K ({len(bw)} cases) mean read bandwidth / 4.49 TB/s: "
          f"floor {mean([r['bytes'] / (r['floor'] * 1e-6) / BW for r in bw]):.1%}, "
          f"{a.arm} {mean([r['bytes'] / (r['arm'] * 1e-6) / BW for r in bw]):.1%}")
    cells = {}
    for r in bw:
        cells.setdefault(r["n"], {}).setdefault(r["b"], []).append(r)
    for n in sorted(cells):
        parts = []
        for b in sorted(cells[n]):
            g = cells[n][b]
            parts.append(f"B{b} floor {mean([r['bytes'] / (r['floor'] * 1e-6) / BW for r in g]):.0%} "
                         f"{a.arm} {mean([r['bytes'] / (r['arm'] * 1e-6) / BW for r in g]):.0%}")
        print(f"  N {n}: " + ", ".join(parts))
    print(f"whole-grid mean roofline: floor {mean([r['bytes'] / (r['floor'] * 1e-6) / BW for r in rows]):.2%}, "
          f"{a.arm} {mean([r['bytes'] / (r['arm'] * 1e-6) / BW for r in rows]):.2%}")
    best = max(rows, key=lambda r: r["base"] / r["floor"])
    print(f"largest {a.base}/floor: {best['case']} {best['base'] / best['floor']:.2f} "
          f"(floor {best['floor']:.2f} us)")


if __name__ == "__main__":
    # A reader that stops early (`| head`) ends the script quietly, as it would a shell tool.
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    main()
