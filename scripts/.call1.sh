#!/usr/bin/env bash
# session 2026-12-03c call 1: reg 512/8 on GPU + A/B; pro 1027 and main 64K briefs
set -u
export GVR_BIN=target/strip/gvr-bench GVR_CACHE_DIR=/tmp/gvr-kernel-cache
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64
R=/tmp/call1; mkdir -p $R
pack() { tar czf "$OUT/call1.tgz" -C $R .; }
trap pack EXIT
( time $GVR_BIN capture synth --out /tmp/gvr-caps --steps 4 --seed 0 ) > $R/synth.log 2>&1
$GVR_BIN gpu info > $R/gpu-info.log 2>&1
GVR_GPU_TESTS=1 timeout 150 devbin/ss_reg_gpu --include-ignored --test-threads 1 > $R/ss_reg_gpu.log 2>&1; echo "ss_reg_gpu rc=$?" >> $R/ss_reg_gpu.log
G='grid --grid grids/dsa886.csv'
EXPERIMENTS="R|-|$G --segment v32 --n-min 8000 --n-max 17000 --batches 128,256,512,1024 --sample 200 --arms ss-reg,radix
R8|GVR_SS_REG_ENTRY=ss_reg_b512_v8|$G --segment v32 --n-min 8000 --n-max 17000 --batches 128,256,512,1024 --sample 200 --arms ss-reg,radix
F|-|$G --segment flash,pro --n-min 16000 --n-max 17000 --batches 64,128,256,512,1024 --sample 120 --arms ss-reg,ss,radix
F8|GVR_SS_REG_ENTRY=ss_reg_b512_v8|$G --segment flash,pro --n-min 16000 --n-max 17000 --batches 64,128,256,512,1024 --sample 120 --arms ss-reg,ss,radix" \
  BUDGET_S=260 OUT=$R scripts/h200_experiments.sh > $R/exp.out 2>&1
NCU_CASES='p1027b1|-|ss|v4_pro_4k_L02|1|ss_reg|brief
p1027b256|-|ss|v4_pro_4k_L02|256|ss_reg|brief
m64k|-|ss-main|v32_64k_L00|256|ss_main_b512_u8|brief
m64ks1|GVR_SS_MAIN_DEFINES=SS_L2_START=1|ss-main|v32_64k_L00|256|ss_main_b512_u8|brief
r16k8|GVR_SS_REG_ENTRY=ss_reg_b512_v8|ss-reg|v32_16k_L00|256|ss_reg|brief' BUDGET_S=150 OUT=$R scripts/h200_ncu.sh > $R/ncu.out 2>&1
