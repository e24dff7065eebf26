set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64 GVR_CACHE_DIR=/tmp/gvr-kernel-cache
B=target/strip/gvr-bench
mkdir -p devbin/x && tar xJf devbin/bins.tar.xz -C devbin/x
(for t in ss_reg_gpu ss_clus_gpu; do GVR_GPU_TESTS=1 devbin/x/$t --include-ignored > $OUT/$t.log 2>&1; echo "rc=$?" >> $OUT/$t.log; done) &
$B capture synth --out /tmp/gvr-caps --steps 4 --seed 0 > $OUT/synth.log 2>&1
wait
tail -3 $OUT/ss_reg_gpu.log $OUT/ss_clus_gpu.log
G="grid --grid grids/dsa886.csv --cold-reps 7"
E="kcl|-|$G --segment v32 --n-min 30000 --batches 1,2,4,8,16,32 --arms ss,radix,ss-clus,ss-regclus --sample 400
r1024v2|GVR_SS_REG_ENTRY=ss_reg_b1024_v2|$G --n-min 8000 --n-max 8300 --arms ss,radix,ss-reg --sample 400
r1024v4|GVR_SS_REG_ENTRY=ss_reg_b1024_v4|$G --n-min 8000 --n-max 8300 --arms ss,radix,ss-reg --sample 400
r512v2|GVR_SS_REG_ENTRY=ss_reg_b512_v2|$G --segment v32 --n-min 4100 --n-max 4200 --batches 64,128,256 --arms ss,radix,ss-reg
kcl2|-|$G --segment v32 --n-min 30000 --batches 1,2,4,8,16,32 --arms ss,radix,ss-clus,ss-regclus --sample 400"
EXPERIMENTS="$E" BUDGET_S=$((480 - SECONDS)) OUT=$OUT GVR_BIN=$B CAPS=/tmp/gvr-caps bash scripts/h200_experiments.sh
NCU_CASES='r8k1|-|ss|v32_8k_L00|1|ss_reg_b512_v4|brief
r8k128|-|ss|v32_8k_L00|128|ss_reg_b512_v4|brief' BUDGET_S=$((585 - SECONDS)) OUT=$OUT GVR_BIN=$B CAPS=/tmp/gvr-caps bash scripts/h200_ncu.sh
