#!/usr/bin/env python3
"""The reg_stage_out rule applied to this call's records (no device run of
the rule binary was left in the session's budget): a case the rule stages
takes its record from a staged run, every other case from the other unstaged
run, then scripts/ab_compare.py compares that mix with the first unstaged
run. Usage: rule_from_records.py (in this directory) writes rules/<set>_rule{1,2}.
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
