set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64 GVR_CACHE_DIR=/tmp/gvr-kernel-cache
B=target/strip/gvr-bench
mkdir -p devbin/x && tar xJf devbin/bins.tar.xz -C devbin/x
for t in ss_clus_gpu ss_varlen_gpu ss_gpu_exact; do
  (GVR_GPU_TESTS=1 devbin/x/$t --include-ignored > $OUT/$t.log 2>&1; echo "rc=$?" >> $OUT/$t.log) &
done
$B capture synth --out /tmp/gvr-caps --steps 4 --seed 0 > $OUT/synth.log 2>&1
wait
for t in ss_clus_gpu ss_varlen_gpu ss_gpu_exact; do echo "$t: $(grep 'test result' $OUT/$t.log) $(tail -n 1 $OUT/$t.log)"; done
G="grid --grid grids/dsa886.csv --cold-reps 7"
E="rc131|-|$G --segment v32 --n-min 130000 --n-max 140000 --batches 1,2,4,8,16 --arms ss,radix,ss-regclus
mainsmall|-|$G --segment v32 --n-max 17000 --batches 128,256,512,1024 --arms ss,radix,ss-main --sample 300
rc131b|-|$G --segment v32 --n-min 130000 --n-max 140000 --batches 1,2,4,8,16 --arms ss,radix,ss-regclus"
EXPERIMENTS="$E" BUDGET_S=$((400 - SECONDS)) OUT=$OUT GVR_BIN=$B CAPS=/tmp/gvr-caps bash scripts/h200_experiments.sh
