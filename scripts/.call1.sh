#!/usr/bin/env bash
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64 GVR_CACHE_DIR=/tmp/gvr-kernel-cache
export GVR_BIN=target/strip/gvr-bench
mkdir -p $OUT/t
( time $GVR_BIN capture synth --out /tmp/gvr-caps --steps 4 --seed 0 ) > $OUT/t/synth.log 2>&1
GVR_GPU_TESTS=1 timeout 120 devbin/ss_varlen_gpu --include-ignored --test-threads 1 > $OUT/t/varlen_gpu.log 2>&1; echo "varlen rc=$?" >> $OUT/t/varlen_gpu.log
tail -5 $OUT/t/varlen_gpu.log
G="grid --grid grids/dsa886.csv"
A="--n-min 65536 --batches 128,256,512,1024 --sample 200 --arms ss-main,radix"
B="--n-min 8000 --n-max 40000 --batches 64,128,256,512,1024 --sample 200 --arms ss-main,radix"
C="--batches 1,2,4,8,16,32 --sample 200 --arms ss-main,radix"
D="--n-max 7999 --batches 64,128,256,512,1024 --sample 200 --arms ss-main,radix"
C0="SS_WALK_COOP=1"
EXPERIMENTS="A|-|$G $A
A-c|GVR_SS_MAIN_DEFINES=$C0|$G $A
B|-|$G $B
B-c|GVR_SS_MAIN_DEFINES=$C0|$G $B
C|-|$G $C
C-c|GVR_SS_MAIN_DEFINES=$C0|$G $C
D|-|$G $D
D-c|GVR_SS_MAIN_DEFINES=$C0|$G $D
A2-c|GVR_SS_MAIN_DEFINES=$C0|$G $A
A2|-|$G $A" BUDGET_S=440 OUT=$OUT/t scripts/h200_experiments.sh
NCU_CASES="coop|GVR_SS_MAIN_DEFINES=$C0|ss-main|v32_128k_L22|256|ss_main_b512_u8|brief
base|-|ss-main|v32_128k_L22|256|ss_main_b512_u8|brief" BUDGET_S=100 OUT=$OUT/t scripts/h200_ncu.sh
tar czf $OUT/call1.tgz -C $OUT/t . && rm -rf $OUT/t
