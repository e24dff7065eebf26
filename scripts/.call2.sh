#!/usr/bin/env bash
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64 GVR_CACHE_DIR=/tmp/gvr-kernel-cache
B=target/strip/gvr-bench
mkdir -p $OUT/t
SEL="grid --grid grids/dsa886.csv --cold-reps 7 --n-max 17500 --batches 256,512,1024 --sample 500 --arms ss,radix"
EXPERIMENTS="L-off|GVR_SS_NEXT_WAVE=off|$SEL
L-on|-|$SEL
L-on2|-|$SEL
L-off2|GVR_SS_NEXT_WAVE=off|$SEL" BUDGET_S=90 OUT=$OUT/t GVR_BIN=$B scripts/h200_experiments.sh
mkdir -p /tmp/ab && tar xzf $OUT/t/experiments.tgz -C /tmp/ab
python3 scripts/ab_compare.py --by variant,b /tmp/ab/runs L-off:L-on,L-on2,L-off2:ss | tee $OUT/t/ab.txt
S=$(grep -E "^   L-on2?:" $OUT/t/ab.txt | sed -E 's/.*speed vs L-off ([0-9.]+).*/\1/' | tr '\n' ' ')
echo "speeds: $S"
if ! python3 -c "import sys; v=[float(x) for x in sys.argv[1:]]; sys.exit(0 if len(v)==2 and min(v)>=1.0 else 1)" $S; then echo "next-wave not kept: no campaign"; exit 0; fi
[ -n "${NO_CAMPAIGN:-}" ] && exit 0
SAMPLE=${SAMPLE:-1200} ARMS=ss,radix,radix-mcta,filtered,gvr1,ss-varlen GVR_BIN=$B BUDGET_S=$((330 - SECONDS)) OUT=$OUT scripts/h200_campaign.sh > $OUT/campaign-call.log 2>&1
echo "campaign rc=$? total ${SECONDS}s"; tail -3 $OUT/campaign-call.log
