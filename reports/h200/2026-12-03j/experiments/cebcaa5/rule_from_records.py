#!/usr/bin/env python3
"""The reg_stage_out rule applied to this call's records (no device run of
the rule binary was left in the session's budget): a case the rule stages
takes its record from a staged run, every other case from the other unstaged
run, then scripts/ab_compare.py compares that mix with the first unstaged
run. Usage: rule_from_records.py (in this directory) writes rules/<set>_rule{1,2}
and prints the estimated full-grid effect (the last line of rule.txt).
"""
import gzip, json, os

NBH = {"blk256/v1": 1024, "blk512/v1": 1024, "blk1024/v1": 2048,
       "blk512/v2": 1024, "blk1024/v4": 2048, "blk512/v4": 2048}
SMS = 132


def staged(r):  # src/route/dispatch.rs reg_stage_out, for the route's slots launches
    v = r["variant"]
    if not v.startswith("reg/"):
        return False
    entry = "/".join(v.split("+")[0].split("/")[1:3])
    blk = int(entry.split("/")[0][3:])
    return r["b"] > SMS and 4 * blk <= r["k"] <= NBH[entry]


def load(label):
    return {(r["case"], r["arm"]): r for r in map(json.loads, gzip.open(label + ".jsonl.gz", "rt"))}


for s in ("wave", "one"):
    for staged_run, other, name in ((f"{s}_st1", f"{s}_off2", f"{s}_rule1"), (f"{s}_st2", f"{s}_off1", f"{s}_rule2")):
        a, b = load(staged_run), load(other)
        os.makedirs(f"rules/{name}", exist_ok=True)
        with open(f"rules/{name}/results.jsonl", "w") as f:
            for key, rec in b.items():
                src = a if staged(b[(key[0], "ss")]) else b
                f.write(json.dumps(src[key]) + "\n")

# Estimated full-grid effect (not measured): each (entry, n, k, B) group the
# rule stages, its geomean staged/unstaged speed over both rounds of both
# sets, applied to the 9f3d684 full grid's cases of that group.
import math
from collections import defaultdict


def speed(rec_ss, rec_radix):
    return (sum(rec_radix["cold_us"]) / len(rec_radix["cold_us"])) / (sum(rec_ss["cold_us"]) / len(rec_ss["cold_us"]))


def group(r):
    return ("/".join(r["variant"].split("+")[0].split("/")[1:3]), r["n"], r["k"], r["b"])


logs = defaultdict(list)
for s in ("wave", "one"):
    for off, st in ((f"{s}_off1", f"{s}_st1"), (f"{s}_off2", f"{s}_st2")):
        a, b = load(off), load(st)
        for (case, arm), r in a.items():
            if arm == "ss" and staged(r):
                logs[group(r)].append(math.log(speed(b[(case, "ss")], b[(case, "radix")]) / speed(r, a[(case, "radix")])))
full = [json.loads(x) for x in gzip.open("../../../2026-12-03i/experiments/9f3d684/full_D.jsonl.gz", "rt")]
by_case = defaultdict(dict)
for r in full:
    by_case[r["case"]][r["arm"]] = r
total, reg_total, touched, shift, reg_n = 0.0, 0.0, 0, 0.0, 0
for arms in by_case.values():
    r = arms["ss"]
    lg = math.log(speed(r, arms["radix"]))
    total += lg
    if r["variant"].startswith("reg/"):
        reg_total += lg
        reg_n += 1
    if staged(r):
        g = logs[group(r)]
        touched += 1
        shift += sum(g) / len(g)
n = len(by_case)
print(f"full grid (9f3d684): {touched} of {n} cases staged; ss vs radix {math.exp(total / n):.3f} -> "
      f"{math.exp((total + shift) / n):.3f} (estimated); reg family {math.exp(reg_total / reg_n):.3f} -> "
      f"{math.exp((reg_total + shift) / reg_n):.3f}")
