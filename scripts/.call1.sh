#!/usr/bin/env bash
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64 GVR_CACHE_DIR=/tmp/gvr-kernel-cache
mkdir -p devbin/x $OUT/checks && tar xJf devbin/bins.tar.xz -C devbin/x
B=target/strip/gvr-bench
nvidia-smi --query-gpu=name,uuid,clocks.sm,clocks.mem --format=csv > $OUT/checks/gpu.txt
( GVR_GPU_TESTS=1 timeout 150 devbin/x/ss_reg_gpu --include-ignored; echo "rc=$?" ) > $OUT/checks/ss_reg_gpu.log 2>&1 &
TP=$!
# captures while the test runs
$B capture synth --out /tmp/gvr-caps --steps 4 --seed 0 > $OUT/checks/synth.log 2>&1
wait $TP
tail -5 $OUT/checks/ss_reg_gpu.log
G="grid --grid grids/dsa886.csv --cold-reps 7 --n-max 17500"
WAVE="$G --batches 256,512,1024 --sample 500 --arms ss,radix"
ONE="$G --batches 1,8,64,128,256,512,1024 --sample 700 --arms ss,radix"
EXPERIMENTS="wave_off1|-|$WAVE
wave_sm1|GVR_SS_REG_SMROW=on|$WAVE
wave_nc1|GVR_SS_REG_DEFINES=SS_REG_HINT_NC=1|$WAVE
wave_off2|-|$WAVE
wave_sm2|GVR_SS_REG_SMROW=on|$WAVE
wave_nc2|GVR_SS_REG_DEFINES=SS_REG_HINT_NC=1|$WAVE
one_off1|-|$ONE
one_sm1|GVR_SS_REG_SMROW=on|$ONE
force_wave|GVR_SS_REG_ENTRY=ss_regsm_b1024_v4|$G --batches 256,512,1024 --sample 500 --arms ss,ss-reg,radix
full_sm|GVR_SS_REG_SMROW=on|grid --grid grids/dsa886.csv --arms ss,radix" \
BUDGET_S=${BUDGET_S:-480} OUT=$OUT GVR_BIN=$B CAPS=/tmp/gvr-caps bash scripts/h200_experiments.sh
ls -la $OUT
