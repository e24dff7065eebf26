#!/usr/bin/env python3
"""Same-inputs A/B of several runs of one selection (e.g. `gvr-bench grid` runs with
different `--knob` values, each with `radix` among its arms), each case normalised by the
radix time of its own run, so run-to-run clock drift cancels. `gvr-bench experiment`
prints the same table for the variants of one experiment file; this script compares runs
made separately.

    scripts/ab_compare.py [--by FIELD,FIELD] RUNS_DIR BASE:CAND1,CAND2:ARM [BASE:CAND:ARM ...]
    scripts/ab_compare.py RUNS_DIR RUN:RUN:ss/ss-main     # two arms of one run

RUNS_DIR holds <label>/results.jsonl or <label>.jsonl.gz. For each spec it
prints the geomean of radix/ARM over BASE's exact cases, then for each
candidate its geomean on the common cases and the geomean, min and max of
(candidate speed-up / base speed-up): > 1 means the candidate is faster.
Cases that are not exact in either run are left out and listed as INEXACT
(`unsupported` ones silently). --by splits each candidate line by record
fields (e.g. `--by model,n,b` or `--by variant`), one line per group.
ARM may be BASE_ARM/CAND_ARM: the base run's BASE_ARM against each candidate
run's CAND_ARM (a forced family against the routed `ss`, in the same run or not).
Two arms of one run (BASE = CAND) need no radix: their times are compared directly.
"""
import gzip
import json
import math
import os
import signal
import statistics
import sys


def records(root, label):
    plain = os.path.join(root, label, "results.jsonl")
    if os.path.exists(plain):
        return open(plain)
    return gzip.open(os.path.join(root, label + ".jsonl.gz"), "rt")


def speedups(root, label, arm, groups=None, norm=True):
    times = {}
    for line in records(root, label):
        r = json.loads(line)
        status = r["exact"]["status"]
        if status == "unsupported":
            continue
        if status != "exact":
            print(f"INEXACT {label} {r['case']} {r['arm']}")
            continue
        times[(r["case"], r["arm"])] = statistics.median(r["cold_us"])
        if groups is not None and r["arm"] == arm:
            groups[r["case"]] = r
    if not norm:  # two arms of one run: the same inputs and clocks, nothing to cancel
        return {c: 1.0 / t for (c, a), t in times.items() if a == arm}
    return {c: times[(c, "radix")] / t for (c, a), t in times.items() if a == arm and (c, "radix") in times}


def geomean(values):
    values = list(values)
    return math.exp(sum(map(math.log, values)) / len(values))


def main(argv):
    by = []
    if len(argv) > 2 and argv[1] == "--by":
        by = argv[2].split(",")
        argv = argv[:1] + argv[3:]
    if len(argv) < 3:
        sys.exit(__doc__)
    root = argv[1]
    for spec in argv[2:]:
        base, cands, arms = spec.split(":")
        arm, _, cand_arm = arms.partition("/")
        cand_arm = cand_arm or arm
        base_records = {}
        norm = any(cand != base for cand in cands.split(","))
        b = speedups(root, base, arm, base_records, norm)
        unit = f"radix/{arm}" if norm else f"1/{arm} (1/us)"
        print(f"{base}: {len(b)} cases, geomean {unit} {geomean(b.values()):.3f}")
        for cand in cands.split(","):
            c = speedups(root, cand, cand_arm, None, norm)
            common = [k for k in b if k in c]
            rel = [c[k] / b[k] for k in common]
            print(f"   {cand} {cand_arm}: {geomean(c[k] for k in common):.3f} on {len(common)};"
                  f" speed vs {base} {geomean(rel):.3f} (min {min(rel):.3f}, max {max(rel):.3f})")
            if by:
                split = {}
                for k in common:
                    key = tuple(str(base_records[k].get(f)) for f in by)
                    split.setdefault(key, []).append(k)
                for key in sorted(split, key=lambda t: [int(x) if x.isdigit() else x for x in t]):
                    ks = split[key]
                    r = [c[k] / b[k] for k in ks]
                    print(f"      {' '.join(key):<28} n={len(ks):<4} base {geomean(b[k] for k in ks):.3f}"
                          f" cand {geomean(c[k] for k in ks):.3f} speed {geomean(r):.3f}")


if __name__ == "__main__":
    # A reader that stops early (`| head`) ends the script quietly, as it would a shell tool.
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    main(sys.argv)
