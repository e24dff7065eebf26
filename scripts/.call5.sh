set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64 GVR_CACHE_DIR=/tmp/gvr-kernel-cache
B=target/strip/gvr-bench
mkdir -p devbin/x && tar xJf devbin/bins.tar.xz -C devbin/x
for t in ss_clus_gpu ss_reg_gpu; do
  (GVR_GPU_TESTS=1 devbin/x/$t --include-ignored > $OUT/$t.log 2>&1; echo "rc=$?" >> $OUT/$t.log) &
done
$B capture synth --out /tmp/gvr-caps --steps 4 --seed 0 > $OUT/synth.log 2>&1
wait
for t in ss_clus_gpu ss_reg_gpu; do echo "$t: $(grep 'test result' $OUT/$t.log) $(tail -n 1 $OUT/$t.log)"; done
E="full|-|grid --grid grids/dsa886.csv --arms ss,radix"
EXPERIMENTS="$E" BUDGET_S=$((560 - SECONDS)) OUT=$OUT GVR_BIN=$B CAPS=/tmp/gvr-caps bash scripts/h200_experiments.sh
