#!/usr/bin/env bash
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64 GVR_CACHE_DIR=/tmp/gvr-kernel-cache
B=target/strip/gvr-bench
mkdir -p $OUT/t
$B --version | tee $OUT/t/version.txt
( time GVR_GPU_TESTS=1 timeout 120 devbin/ss_reg_gpu --include-ignored --test-threads 1 ) > $OUT/t/ss_reg_gpu.log 2>&1; echo "ss_reg_gpu rc=$?" | tee -a $OUT/t/ss_reg_gpu.log
tail -5 $OUT/t/ss_reg_gpu.log
SEL="grid --grid grids/dsa886.csv --cold-reps 7 --n-max 17500 --batches 256,512,1024 --sample 500 --arms ss,radix"
EXPERIMENTS="W-on|-|$SEL
W-off|GVR_SS_NEXT_WAVE=off|$SEL
W-on2|-|$SEL" BUDGET_S=150 OUT=$OUT/t GVR_BIN=$B scripts/h200_experiments.sh
[ -n "${NO_CAMPAIGN:-}" ] && exit 0
SHARD=0/2 ARMS=ss,radix,radix-mcta,filtered,gvr1,ss-varlen GVR_BIN=$B BUDGET_S=$((585 - SECONDS)) OUT=$OUT scripts/h200_campaign.sh > $OUT/campaign0.log 2>&1
echo "campaign rc=$? total ${SECONDS}s"; tail -5 $OUT/campaign0.log
