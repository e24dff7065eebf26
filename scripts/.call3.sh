set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64 GVR_CACHE_DIR=/tmp/gvr-kernel-cache
B=target/strip/gvr-bench
mkdir -p devbin/x && tar xJf devbin/bins.tar.xz -C devbin/x
for t in ss_reg_gpu ss_clus_gpu ss_varlen_gpu ss_gpu_exact ss_clus_stream_gpu; do
  (GVR_GPU_TESTS=1 devbin/x/$t --include-ignored > $OUT/$t.log 2>&1; echo "rc=$?" >> $OUT/$t.log) &
done
$B capture synth --out /tmp/gvr-caps --steps 4 --seed 0 > $OUT/synth.log 2>&1
wait
for t in ss_reg_gpu ss_clus_gpu ss_varlen_gpu ss_gpu_exact ss_clus_stream_gpu; do echo "$t: $(grep 'test result' $OUT/$t.log) $(tail -n 1 $OUT/$t.log)"; done
G="grid --grid grids/dsa886.csv --cold-reps 7 --arms ss,radix"
KCL="$G --segment v32 --n-min 30000 --batches 1,2,4,8,16,32 --sample 400"
K8="$G --n-min 8000 --n-max 8300 --sample 400"
K4="$G --segment v32 --n-min 4100 --n-max 4200 --batches 64,128,256,512"
A=devbin/x/gvr-bench-A
E=""
for r in 1 2; do
E+="kclA$r|-|$KCL|$A
kclB$r|-|$KCL
k8A$r|-|$K8|$A
k8B$r|-|$K8
k4A$r|-|$K4|$A
k4B$r|-|$K4
"
done
E+="fullB|-|grid --grid grids/dsa886.csv --arms ss,radix"
EXPERIMENTS="$E" BUDGET_S=$((590 - SECONDS)) OUT=$OUT GVR_BIN=$B CAPS=/tmp/gvr-caps bash scripts/h200_experiments.sh
