#!/usr/bin/env bash
# Issue 48 evidence for the next session: Nsight Compute (clocks left alone) of reg_clus, clus and
# main launches of production (5934347), as reports/h100/2026-12-07g did for reg.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64:${LD_LIBRARY_PATH:-}
export GVR_CACHE_DIR=/tmp/gvr-kernel-cache
B=$PWD/devbin/new/gvr-bench
L=$OUT/call.log
nvidia-smi --query-gpu=name,uuid,driver_version --format=csv,noheader | tee $L
SECONDS=0
$B capture synth --out /tmp/gvr-caps --steps 4 --seed 0 > /dev/null 2>&1; echo "synth rc=$? at $SECONDS s" | tee -a $L
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
mkdir -p /tmp/prof
for spec in rc32kb1:v32_32k_L00:1:ss_regclus cl64kb1:v32_64k_L00:1:ss_clus main32kb1024:v32_32k_L00:1024:ss_main rc32kb8:v32_32k_L00:8:ss_regclus; do
  IFS=: read name cell b kre <<< "$spec"
  [ $SECONDS -lt 300 ] || break
  timeout 100 $NCU --clock-control none --set full --warp-sampling-interval 0 --kernel-name regex:"^$kre" \
    --launch-count 1 -f -o /tmp/prof/$name $B certify --captures /tmp/gvr-caps --cells $cell --batches $b \
    --arms ss --no-adversarial > /tmp/prof/$name.log 2>&1
  echo "ncu $name rc=$? at $SECONDS s" | tee -a $L
  $NCU --import /tmp/prof/$name.ncu-rep --page details --csv > /tmp/prof/$name-details.csv 2>&1
  $NCU --import /tmp/prof/$name.ncu-rep --page source --csv --print-source sass > /tmp/prof/$name-sass.csv 2>&1
  python3 reports/h100/2026-12-07g/ncu/ncu_phases.py /tmp/prof/$name-sass.csv > /tmp/prof/$name-phases.txt 2>&1
  gzip -f /tmp/prof/$name-sass.csv; rm -f /tmp/prof/$name.ncu-rep
  grep -m1 "Kernel Name" /tmp/prof/$name-details.csv >/dev/null && head -2 /tmp/prof/$name-details.csv | tail -1 | cut -d, -f5-9 | tee -a $L
done
tar czf $OUT/prof.tgz -C /tmp prof
echo "done at $SECONDS s" | tee -a $L
