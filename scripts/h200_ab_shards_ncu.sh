set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64 GVR_CACHE_DIR=/tmp/gvr-kc
B=target/release/gvr-bench; C=/tmp/gvr-caps; R=$OUT/runs; L=$OUT/logs; mkdir -p $R $L
s() { local n=$1; shift; local t0=$SECONDS; timeout 200 "$@" > $L/$n.log 2>&1; echo "== $n rc=$? $((SECONDS-t0)) s"; tail -4 $L/$n.log; }
s synth $B capture synth --out $C --steps 4 --seed 0
s ab $B grid --captures $C --grid grids/dsa886.csv --sample 600 --arms ss,ss-main,ss-main-base,ss-reg,radix --peer torch --out $R/ab
s single $B grid --captures $C --grid grids/dsa886.csv --sample 300 --arms ss,radix --out $R/single --no-report
s shard0 $B grid --captures $C --grid grids/dsa886.csv --sample 300 --arms ss,radix --shard 0/2 --out $R/s0 --no-report
s shard1 $B grid --captures $C --grid grids/dsa886.csv --sample 300 --arms ss,radix --shard 1/2 --out $R/s1 --no-report
s merge $B merge $R/s0 $R/s1 --out $R/merged
for spec in "v4_pro_512k_L10:256:b512" "v4_pro_512k_L10:1024:b256" "v32_8k_L12:512:b256"; do IFS=: read cell b k <<< "$spec"
  s ncu-$cell-$b ncu --clock-control none --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section WarpStateStats --section SourceCounters --section SchedulerStats --section LaunchStats -k regex:ss_main_$k -c 1 $B certify --captures $C --cells $cell --batches $b --arms ss-main --no-adversarial
done
tar czf $OUT/b.tgz -C $OUT logs runs
