#!/usr/bin/env python3
"""Stall samples of an Nsight Compute per-SASS source page, by code region.

    scripts/ncu_sass_regions.py SASS_CSV[.gz] --marks            # landmarks
    scripts/ncu_sass_regions.py SASS_CSV[.gz] --barriers         # a region per barrier / exit
    scripts/ncu_sass_regions.py SASS_CSV[.gz] CUT,CUT,... NAME,NAME,... [LINE,...]

SASS_CSV is Nsight Compute's per-SASS source page of one profiled launch, e.g.
    ncu --clock-control none --set full -k regex:ss_main -c 1 -o prof \
        target/release/gvr-bench certify --arms ss-main --cells CELL --batches 1 --no-adversarial
    ncu --import prof.ncu-rep --page source --csv --print-source sass > prof.sass.csv
(plain or gzipped). `--clock-control none` is required: by default ncu locks the
GPU's clocks to base for the profile, and this project never changes clocks.
With --marks it lists the executed loads, barriers, calls and exits (row index,
executions, samples), from which the region cuts are chosen. With --barriers
every region ends at a barrier or an exit (the phases of a kernel whose phases
are separated by barriers) and each line also names its most executed opcodes.
Otherwise it prints each region [cut_i, cut_i+1)'s share of all warp stall
samples and of the executed warp instructions, then each listed row's own share
and instruction. Shares of samples approximate shares of warp time; they are
not kernel time.
"""
import collections
import csv
import gzip
import sys


def rows_of(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        rows = list(csv.reader(f))
    for i, row in enumerate(rows):
        if row and row[0] == "Address":
            return row, rows[i + 1:]
    sys.exit(f"{path}: no 'Address' header row (not an ncu source page CSV)")


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    hdr, rows = rows_of(argv[1])
    samples_col = hdr.index("Warp Stall Sampling (All Samples)")
    exec_col = hdr.index("Instructions Executed")
    samples = [int(r[samples_col] or 0) for r in rows]
    total = sum(samples)
    print(f"{total} samples over {len(rows)} SASS rows")
    if argv[2] == "--marks":
        for i, r in enumerate(rows):
            text = r[1].strip()
            if int(r[exec_col] or 0) > 0 and any(m in text for m in ("LDG", "BAR.SYNC", "CALL", "RET", "EXIT")):
                print(f"{i:6d} exec={r[exec_col]:>8} samples={samples[i]:5d} {text[:60]}")
        return
    if argv[2] == "--barriers":
        barriers(rows, samples, [int(r[exec_col] or 0) for r in rows])
        return
    cuts = [int(c) for c in argv[2].split(",")]
    names = argv[3].split(",")
    bounds = [0] + cuts + [len(rows)]
    if len(names) != len(bounds) - 1:
        sys.exit(f"{len(cuts)} cuts make {len(bounds) - 1} regions, {len(names)} names given")
    executed = [int(r[exec_col] or 0) for r in rows]
    total_executed = sum(executed)
    for name, a, b in zip(names, bounds, bounds[1:]):
        print(f"{name:12s} [{a}, {b}) {sum(samples[a:b]):6d} = {100 * sum(samples[a:b]) / total:5.1f} %"
              f" of samples, {100 * sum(executed[a:b]) / total_executed:5.1f} % of executed warp instructions")
    for line in argv[4].split(",") if len(argv) > 4 else []:
        i = int(line)
        print(f"  row {i:5d}: {samples[i]:5d} = {100 * samples[i] / total:4.1f} %  {rows[i][1].strip()[:60]}")


def opcode(text):
    """The opcode of a SASS line without its predicate and modifiers."""
    words = text.split()
    if words and words[0].startswith("@"):
        words = words[1:]
    return words[0].split(".")[0] if words else "?"


def barriers(rows, samples, executed):
    """One region per span that ends at a barrier or an exit, if executed."""
    total, total_executed = max(sum(samples), 1), max(sum(executed), 1)
    start, ops = 0, collections.Counter()
    for i, r in enumerate(rows):
        text = r[1].strip()
        if executed[i]:
            ops[opcode(text)] += executed[i]
        if any(m in text for m in ("BAR.SYNC", "BAR.RED", "EXIT")) or i == len(rows) - 1:
            span = sum(executed[start:i + 1])
            if span:
                top = " ".join(f"{k}:{v}" for k, v in ops.most_common(6))
                print(f"[{start:5d}, {i + 1:5d}) {span:10d} = {100 * span / total_executed:5.1f} % of executed,"
                      f" {100 * sum(samples[start:i + 1]) / total:5.1f} % of samples | {text[:28]:28s} | {top}")
            start, ops = i + 1, collections.Counter()


if __name__ == "__main__":
    main(sys.argv)
