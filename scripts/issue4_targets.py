#!/usr/bin/env python3
"""Issue 4's performance targets from one run's records (results.jsonl or .gz).

    scripts/issue4_targets.py RUN/results.jsonl[.gz] [--arm ss] [--base radix] [--read-tbs 4.49]

Prints, over the cases where both arms are exact: the geomean of base/arm (mean
of the cold reps, as `gvr-bench report`), the share of cases where the arm is
faster and the closest cases; the B = 1 median (median over cases of each
case's median cold rep); the mean achieved read bandwidth (minimum traffic
4·B·(N+K) bytes over the mean cold time) as a share of the read bandwidth
(--read-tbs; default 4.49 TB/s, the H200's measured read; another GPU's run
needs its own measured figure, or its share reads low) for
B >= 256 & N >= 64K with its model × N × B table; the whole-grid mean of the
same fraction (roofline); and the geomean per family (the variant's first word).
"""
import argparse
import gzip
import json
import math
import signal
import statistics
from collections import defaultdict

H200_READ_TBS = 4.49


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        for line in f:
            yield json.loads(line)


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("results")
    ap.add_argument("--arm", default="ss")
    ap.add_argument("--base", default="radix")
    ap.add_argument("--read-tbs", type=float, default=H200_READ_TBS,
                    help="read bandwidth the shares are of, TB/s (default: the H200's 4.49)")
    a = ap.parse_args()
    if not a.read_tbs > 0:
        ap.error("--read-tbs must be a positive number of TB/s")
    read_bw = a.read_tbs * 1e12
    arm, base, inexact = {}, {}, 0
    for r in load(a.results):
        if r["arm"] not in (a.arm, a.base):
            continue
        if r["exact"]["status"] != "exact":
            inexact += 1
            continue
        (arm if r["arm"] == a.arm else base)[r["case"]] = r
    cases = sorted(set(arm) & set(base))
    ratio = {c: statistics.mean(base[c]["cold_us"]) / statistics.mean(arm[c]["cold_us"]) for c in cases}
    print(f"{a.arm} vs {a.base}: {len(cases)} cases both exact ({inexact} records not exact)")
    print(f"  geomean {geomean(ratio.values()):.3f}x, faster in "
          f"{100 * sum(v > 1 for v in ratio.values()) / len(cases):.1f} %")
    print("  closest: " + ", ".join(f"{c} {ratio[c]:.3f}" for c in sorted(cases, key=ratio.get)[:5]))

    b1 = [statistics.median(arm[c]["cold_us"]) for c in cases if arm[c]["b"] == 1]
    print(f"B = 1 median: {statistics.median(b1):.2f} us over {len(b1)} cases")
    for model in sorted({arm[c]["model"] for c in cases}):
        xs = [statistics.median(arm[c]["cold_us"]) for c in cases if arm[c]["b"] == 1 and arm[c]["model"] == model]
        print(f"  {model}: {statistics.median(xs):.2f} us")

    frac = {c: arm[c]["bytes"] / (statistics.mean(arm[c]["cold_us"]) * 1e-6) / read_bw for c in cases}
    big = [c for c in cases if arm[c]["b"] >= 256 and arm[c]["n"] >= 65536]
    big_frac = statistics.mean(frac[c] for c in big)
    print(f"B >= 256 & N >= 64K mean read BW: {100 * big_frac:.1f} % "
          f"of {a.read_tbs:g} TB/s = {big_frac * a.read_tbs:.2f} TB/s ({len(big)} cases)")
    table = defaultdict(list)
    for c in big:
        r = arm[c]
        table[(r["model"], r["n"], r["b"])].append(frac[c])
    for model, n in sorted({(m, n) for m, n, _ in table}):
        cells = " ".join(f"B{b}={100 * statistics.mean(table[(model, n, b)]):.0f}%"
                         for b in (256, 512, 1024) if (model, n, b) in table)
        print(f"  {model} {n}: {cells}")
    print(f"whole-grid mean roofline: {100 * statistics.mean(frac.values()):.2f} %")

    fam = defaultdict(list)
    for c in cases:
        fam[arm[c]["variant"].split("/")[0]].append(ratio[c])
    for f, xs in sorted(fam.items()):
        print(f"  family {f}: {geomean(xs):.2f}x vs {a.base} over {len(xs)} cases")


if __name__ == "__main__":
    # A reader that stops early (`| head`) ends the script quietly, as it would a shell tool.
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    main()
