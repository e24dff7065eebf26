#!/usr/bin/env python3
"""Phase breakdown of `gvr-bench phases` records per family × N band × B band.

    scripts/phase_table.py PHASES_DIR [PHASES_DIR ...] [--floor RUN_DIR] [--median-cta]

Reads PHASES_DIR/phases.jsonl (or .jsonl.gz) and prints, per (family of the
record's variant, N band, B band): the
cases, the median probe-build cold time, the median launch span (first CTA
entry to last exit, global timer) and the median µs of each phase of the
critical CTA (the one that left last; `--median-cta`: the median CTA per
phase). With `--floor RUN_DIR` (a `grid --floor` run, e.g.
its directory, with floor.jsonl[.gz] and results.jsonl[.gz]) it adds, for the same cases, the
median floor and timed ss µs, so each chain's phases can be read against what
one read-and-meet of the same rows costs. Only exact records with launches
enter; the others are counted at the end.
"""
import argparse
import gzip
import json
import os
import signal
import statistics
import sys


def mean(xs):
    return sum(xs) / len(xs)


def n_band(n):
    """The row-length band a case belongs to (the grid's ISL rungs, padded)."""
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
    sys.exit(f"{run}: no {name} or {name}.gz")

PHASES = ["length", "sample", "histogram", "threshold", "pass", "hand-off", "verify", "emit", "finish"]


def phase_us(rec, critical):
    """µs per phase of one record: median over its launches (None if absent)."""
    ghz = rec["clock_ghz"]
    out = {}
    for phase in PHASES:
        vals = []
        for launch in rec["launches"]:
            if critical:
                vals += [c for p, c in launch["critical"] if p == phase]
            else:
                vals += [s["median_cycles"] for s in launch["phases"] if s["phase"] == phase]
        out[phase] = statistics.median(vals) / (ghz * 1e3) if vals else None
    return out


def fmt(x):
    return "–" if x is None else f"{x:.2f}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dirs", nargs="+")
    ap.add_argument("--floor", help="a `grid --floor` run directory (results.jsonl, floor.jsonl)")
    ap.add_argument("--median-cta", action="store_true", help="the median CTA per phase instead of the critical CTA")
    a = ap.parse_args()
    recs = [r for d in a.dirs for r in records(d, "phases.jsonl")]
    floor, ss = {}, {}
    if a.floor:
        for f in records(a.floor, "floor.jsonl"):
            if f["cold_us"]:
                floor[f["case"]] = mean(f["cold_us"])
        for r in records(a.floor, "results.jsonl"):
            if r["arm"] == "ss" and r["cold_us"] and r["exact"].get("status") == "exact":
                ss[r["case"]] = mean(r["cold_us"])
    groups, skipped = {}, 0
    for r in recs:
        if r["exact"] != "exact" or not r["launches"]:
            skipped += 1
            continue
        fam = (r.get("variant") or "?").split("/")[0]
        groups.setdefault((r["arm"], fam, n_band(r["n"]), b_band(r["b"])), []).append(r)
    cols = ["arm", "family", "N", "B", "cases", "probe us", "span us"]
    if a.floor:
        cols += ["grid ss us", "floor us"]
    print("| " + " | ".join(cols + PHASES) + " |")
    print("|" + "---|" * 4 + "---:|" * (len(cols) - 4 + len(PHASES)))
    for key in sorted(groups, key=lambda k: (k[0], k[1], k[2], k[3])):
        rs = groups[key]
        probe = statistics.median(mean(r["cold_us"]) for r in rs if r["cold_us"]) if any(r["cold_us"] for r in rs) else None
        span = statistics.median(statistics.median(l["launch_ns"] for l in r["launches"]) / 1e3 for r in rs)
        row = list(key) + [str(len(rs)), fmt(probe), fmt(span)]
        if a.floor:
            g = [ss[r["case"]] for r in rs if r["case"] in ss]
            f = [floor[r["case"]] for r in rs if r["case"] in floor]
            row += [fmt(statistics.median(g) if g else None), fmt(statistics.median(f) if f else None)]
        per = [phase_us(r, not a.median_cta) for r in rs]
        for phase in PHASES:
            vals = [p[phase] for p in per if p[phase] is not None]
            row.append(fmt(statistics.median(vals) if vals else None))
        print("| " + " | ".join(row) + " |")
    what = "median CTA" if a.median_cta else "critical CTA (the last to leave)"
    print(f"\nPhases: {what}, µs, median over the group's cases of each case's median over its launches.")
    if skipped:
        print(f"{skipped} record(s) not exact or without launches left out.")


if __name__ == "__main__":
    # A reader that stops early (`| head`) ends the script quietly, as it would a shell tool.
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    main()
