set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64 GVR_CACHE_DIR=/tmp/gvr-kernel-cache
B=target/strip/gvr-bench
mkdir -p devbin/x && tar xJf devbin/bins.tar.xz -C devbin/x
(GVR_GPU_TESTS=1 devbin/x/ss_reg_gpu --include-ignored > $OUT/ss_reg_gpu.log 2>&1; echo "rc=$?" >> $OUT/ss_reg_gpu.log) &
$B capture synth --out /tmp/gvr-caps --steps 4 --seed 0 > $OUT/synth.log 2>&1
wait
tail -5 $OUT/ss_reg_gpu.log
G="grid --grid grids/dsa886.csv --cold-reps 7 --arms ss,radix"
ONE="$G --n-max 17500 --batches 1,8,64,128,256,512,1024 --sample 700"
WAVE="$G --n-max 17500 --batches 256,512,1024 --sample 500"
E=""
for r in 1 2; do
E+="one_off$r|GVR_SS_REG_STAGE_OUT=off|$ONE
one_def$r|-|$ONE
one_slots$r|GVR_SS_REG_EMIT=slots|$ONE
wave_off$r|GVR_SS_REG_STAGE_OUT=off|$WAVE
wave_def$r|-|$WAVE
wave_x$r|GVR_SS_REG_STAGE_EXTRA=on|$WAVE
wave_slots$r|GVR_SS_REG_EMIT=slots|$WAVE
"
done
E+="full|-|grid --grid grids/dsa886.csv --arms ss,radix"
EXPERIMENTS="$E" BUDGET_S=$((590 - SECONDS)) OUT=$OUT GVR_BIN=$B CAPS=/tmp/gvr-caps bash scripts/h200_experiments.sh
