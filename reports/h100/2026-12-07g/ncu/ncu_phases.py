#!/usr/bin/env python3
"""Split an Nsight Compute SASS source page (ncu --import R --page source --csv --print-source sass)
into the spans between barriers / exits: executed warp instructions, share of stall samples,
top opcodes per span. Usage: ncu_phases.py FILE-sass.csv"""
import csv,sys,collections
def num(x):
    try: return float(x.replace(',',''))
    except: return 0.0
p=sys.argv[1]
rows=list(csv.reader(open(p))); hdr=rows[1]; d=[dict(zip(hdr,r)) for r in rows[2:] if len(r)==len(hdr)]
tot=sum(num(r['Instructions Executed']) for r in d); ts=sum(num(r['Warp Stall Sampling (All Samples)']) for r in d)
seg_ex=0; seg_s=0; ops=collections.Counter(); start=0
def flush(i,why):
    global seg_ex,seg_s,ops,start
    if seg_ex>0:
        print(f"[{start:5d}-{i:5d}] ex {int(seg_ex):6d} ({seg_ex/tot:5.1%}) samples {seg_s/ts:5.1%} | {why:28s} | "+' '.join(f"{k}:{int(v)}" for k,v in ops.most_common(7)))
    seg_ex=0; seg_s=0; ops=collections.Counter(); start=i+1
for i,r in enumerate(d):
    src=r['Source'].strip(); e=num(r['Instructions Executed']); s=num(r['Warp Stall Sampling (All Samples)'])
    seg_ex+=e; seg_s+=s
    o=src.split()[0] if src else '?'
    if o.startswith('@'): o=src.split()[1]
    if e>0: ops[o.split('.')[0]]+=e
    if 'BAR.SYNC' in src or src.startswith('EXIT') or ' EXIT' in src or 'BAR.RED' in src:
        flush(i, src[:28])
flush(len(d),'end')
