#!/usr/bin/env python3
"""Mean read bandwidth per floor shape and per (B, N band), next to ss, from the ring
call's run (experiments.tgz here: runs/ring/{floor,results}.jsonl).

    mkdir -p /tmp/fr && tar xzf experiments.tgz -C /tmp/fr && python3 by_shape.py /tmp/fr/runs/ring [TB/s]

Bandwidth = the record's bytes (the whole batch) / mean cold µs, over TB/s (default 3.35,
the H100 SXM's nominal HBM3 rate; the call ran on an H100)."""
import collections
import json
import statistics
import sys

run = sys.argv[1]
peak = float(sys.argv[2]) if len(sys.argv) > 2 else 3.35
floors = [json.loads(line) for line in open(f"{run}/floor.jsonl")]
ss = {}
for line in open(f"{run}/results.jsonl"):
    r = json.loads(line)
    if r["arm"] == "ss":
        ss[r["case"]] = statistics.mean(r["cold_us"])


def label(s):
    if s.get("ring"):
        return f"b{s['block']} ring {s['ring']['stages']}x{s['ring']['chunk'] // 1024}K"
    if s["parts"] > 1:
        return f"b{s['block']} x{s['parts']} {'cluster' if s['cluster'] else 'grid'}"
    return f"b{s['block']}"


groups = collections.defaultdict(lambda: collections.defaultdict(list))
for r in floors:
    key = (r["b"], 65536 if r["n"] < 131072 else 131072 if r["n"] < 200000 else 262144)
    for t in r["tried"]:
        if t["mean_cold_us"]:
            groups[key][label(t["shape"])].append(r["bytes"] / t["mean_cold_us"] / 1e6 / peak)
    groups[key]["ss"].append(r["bytes"] / ss[r["case"]] / 1e6 / peak)
shapes = ["ss", "b256", "b1024"] + sorted({s for g in groups.values() for s in g if "ring" in s or s == "b512"})
print("B × N band, cases | " + " | ".join(shapes))
for key in sorted(groups):
    g = groups[key]
    cells = [f"{100 * statistics.mean(g[s]):.0f}" if g[s] else "-" for s in shapes]
    print(f"{key[0]} × {key[1] // 1024}K, {len(g['ss'])} | " + " | ".join(cells))
