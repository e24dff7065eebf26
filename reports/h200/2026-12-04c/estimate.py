import gzip,json,statistics as st,math,collections
def load(p):
    d={}
    for l in gzip.open(p,'rt'):
        r=json.loads(l); d.setdefault(r['case'],{})[r['arm']]=r
    return d
def factors(base,cand):
    g=collections.defaultdict(list)
    for c,a in base.items():
        if c in cand and 'ss' in a and 'ss' in cand[c]:
            sb=st.median(a['radix']['cold_us'])/st.median(a['ss']['cold_us'])
            sc=st.median(cand[c]['radix']['cold_us'])/st.median(cand[c]['ss']['cold_us'])
            g[(a['ss']['variant'],a['ss']['k'],a['ss']['b'])].append(sc/sb)
    return {k:math.exp(sum(map(math.log,v))/len(v)) for k,v in g.items()}
D='reports/h200/2026-12-04c/experiments/'
f=factors(load(D+'5-a8ed607/hn_old1.jsonl.gz'),load(D+'5-a8ed607/hn_new1.jsonl.gz'))
fw1=factors(load(D+'4-89e0281/hw_def1.jsonl.gz'),load(D+'4-89e0281/hw_smask1.jsonl.gz'))
fw2=factors(load(D+'4-89e0281/hw_def2.jsonl.gz'),load(D+'4-89e0281/hw_smask2.jsonl.gz'))
for k in fw1:
    if k[0].startswith('reg'): f[k]=math.sqrt(fw1[k]*fw2[k])
# Moved out of the tree in 2026-12-04d: `git show 652e89f:<this path> > <this path>` first.
camp=load('reports/h200/2026-12-04b/campaign-e28cf70/run/results.jsonl.gz')
def changed(s):
    v,k,b=s['variant'],s['k'],s['b']
    return (v=='reg/blk512/v4' and (k==2048 or (k==1024 and b>132))) or (v=='reg/blk1024/v4' and k==2048 and b>=32)
logs=[];logs2=[];n=0;fam=collections.defaultdict(lambda:[[],[]])
for c,a in camp.items():
    s=a['ss']; r=st.median(a['radix']['cold_us'])/st.median(s['cold_us'])
    x=f.get((s['variant'],s['k'],s['b']),1.0) if changed(s) else 1.0
    n+= x!=1.0
    logs.append(math.log(r)); logs2.append(math.log(r*x))
    fm=s['variant'].split('/')[0]; fam[fm][0].append(math.log(r)); fam[fm][1].append(math.log(r*x))
g=lambda l: math.exp(sum(l)/len(l))
print('cases',len(logs),'changed',n,'ss vs radix geomean: campaign %.3f, estimate with the change %.3f'%(g(logs),g(logs2)))
for fm,(a,b) in sorted(fam.items()): print('  %-9s %5d  %.3f -> %.3f'%(fm,len(a),g(a),g(b)))
