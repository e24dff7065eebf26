#!/usr/bin/env python3
"""Issue 48's targets from a run that timed the latency floor (an experiment with
`floor = true`, or `grid --floor`): for each arm, time / floor as a geometric mean over
every case, per batch size, over v32 rows of 8K-32K values and over B >= 512, and the
B = 1 median time of the arm and of the floor.

    scripts/floor_targets.py RUN_DIR

RUN_DIR holds `results.jsonl` and `floor.jsonl`. A case's time is the mean of its cold
reps; exact records only. The all-case and per-batch values are the ones
`gvr-bench report RUN_DIR` writes (its floor section); the others are the issue's own
bands, which the report does not cut.
"""
import json
import math
import os
import statistics
import sys
from collections import defaultdict


def mean_cold(rec):
    reps = rec.get("cold_us") or []
    return sum(reps) / len(reps) if reps else None


def geo(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def main(run):
    floor = {}
    for line in open(os.path.join(run, "floor.jsonl")):
        rec = json.loads(line)
        t = mean_cold(rec)
        if rec.get("case") and t:
            floor[rec["case"]] = t
    arms = defaultdict(list)
    for line in open(os.path.join(run, "results.jsonl")):
        rec = json.loads(line)
        t = mean_cold(rec)
        if rec.get("exact", {}).get("status") == "exact" and t and rec["case"] in floor:
            arms[rec["arm"]].append((rec, t / floor[rec["case"]], t))
    for arm, rows in sorted(arms.items()):
        batches = sorted({r["b"] for r, _, _ in rows})
        by_b = " ".join(f"{b}:{geo([x for r, x, _ in rows if r['b'] == b]):.3f}" for b in batches)
        v32 = [x for r, x, _ in rows if r.get("model") == "v32" and 8000 <= r["n"] <= 33000]
        big = [x for r, x, _ in rows if r["b"] >= 512]
        b1 = [t for r, _, t in rows if r["b"] == 1]
        b1_floor = [floor[r["case"]] for r, _, _ in rows if r["b"] == 1]
        print(f"{arm}: {len(rows)} cases, all {geo([x for _, x, _ in rows]):.3f}")
        print(f"  by B {by_b}")
        print(f"  v32 N 8-32K {geo(v32):.3f} ({len(v32)} cases), B >= 512 {geo(big):.3f} ({len(big)} cases)")
        if b1:
            print(
                f"  B = 1 median {statistics.median(b1):.2f} us, floor {statistics.median(b1_floor):.2f} us"
            )


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
