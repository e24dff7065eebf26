#!/usr/bin/env bash
# Issue 48: SS_REG_KEEP_BIN (experiments/reg_keep_bin.toml), certify and compute-sanitizer with the
# knob (both emit forms), Nsight Compute (clocks left alone) of 16K x K 2,048 at B 1 and 1,024
# with it, the floor sample with route and keep; on an H200 first the flush A/B/A.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64:${LD_LIBRARY_PATH:-}
export GVR_CACHE_DIR=/tmp/gvr-kernel-cache
B=$PWD/devbin/new/gvr-bench
L=$OUT/call.log
nvidia-smi --query-gpu=name,uuid,driver_version --format=csv,noheader | tee $L
SECONDS=0
H200=0; nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 && H200=1
FLUSH=128; [ $H200 = 1 ] && FLUSH=512
$B capture synth --out /tmp/gvr-caps --steps 4 --seed 0 > /dev/null 2>&1; echo "synth rc=$? at $SECONDS s" | tee -a $L
mkdir -p /tmp/x /tmp/prof
timeout -s INT 200 $B experiment experiments/reg_keep_bin.toml --flush-mib $FLUSH --out /tmp/x/keep > /tmp/x/keep.log 2>&1
echo "== experiment rc=$? at $SECONDS s (flush $FLUSH)" | tee -a $L
$B report /tmp/x/keep > /tmp/x/keep-report.log 2>&1
cp /tmp/x/keep/experiment.md $OUT/keep-experiment.md 2>/dev/null
grep -hE "^\| ss \| [a-z0-9]+ \|" /tmp/x/keep/experiment.md | tee -a $L
tar czf $OUT/x.tgz -C /tmp x
timeout -s INT 120 $B certify --captures /tmp/gvr-caps --grid grids/dsa886.csv --n-max 17500 --sample 800 --arms ss \
  --knob SS_REG_KEEP_BIN=1 --poison-pad --soak 2 > $OUT/certify.log 2>&1
echo "certify rc=$? at $SECONDS s" | tee -a $L; grep -E "^\| ss" $OUT/certify.log | tee -a $L
for form in slots cursors; do
  for cell in v32_16k_L00 v32_4k_L00; do
    for tool in memcheck racecheck synccheck; do
      echo "== $tool $cell b8 $form keep" >> $OUT/sanitize.log
      timeout 40 compute-sanitizer --tool $tool --error-exitcode 9 $B certify --captures /tmp/gvr-caps --cells $cell \
        --batches 8 --arms ss --no-adversarial --knob SS_REG_KEEP_BIN=1 --knob reg.emit=$form >> $OUT/sanitize.log 2>&1
      echo "$tool $cell $form rc=$? at $SECONDS s" | tee -a $L
    done
  done
done
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
for b in 1 1024; do
  timeout 100 $NCU --clock-control none --set full --warp-sampling-interval 0 --kernel-name regex:'^ss_reg' --launch-count 1 \
    -f -o /tmp/prof/16kb$b-keep $B certify --captures /tmp/gvr-caps --cells v32_16k_L00 --batches $b --arms ss \
    --no-adversarial --knob SS_REG_KEEP_BIN=1 > /tmp/prof/16kb$b-keep.log 2>&1
  echo "ncu b$b rc=$? at $SECONDS s" | tee -a $L
  $NCU --import /tmp/prof/16kb$b-keep.ncu-rep --page details --csv > /tmp/prof/16kb$b-keep-details.csv 2>&1
  $NCU --import /tmp/prof/16kb$b-keep.ncu-rep --page source --csv --print-source sass > /tmp/prof/16kb$b-keep-sass.csv 2>&1
done
tar czf $OUT/prof.tgz -C /tmp prof
if [ $H200 = 1 ]; then
  mkdir -p /tmp/x/fab
  for t in a:512 b:128 c:256 d:512; do
    timeout -s INT 60 $B grid --captures /tmp/gvr-caps --grid grids/dsa886.csv --sample 300 --arms ss,radix --floor \
      --flush-mib ${t#*:} --out /tmp/x/fab/${t%%:*} > /tmp/x/fab/${t%%:*}.log 2>&1
    echo "flush ${t} rc=$? at $SECONDS s" | tee -a $L
  done
  python3 scripts/flush_ab.py /tmp/x/fab > $OUT/flush-ab.txt 2>&1; tail -12 $OUT/flush-ab.txt | tee -a $L
  F=$(grep -oE "^choice: [0-9]+" $OUT/flush-ab.txt | grep -oE "[0-9]+$"); FLUSH=${F:-512}
fi
cat > /tmp/floor_keep.toml <<'T'
base = "route"
arms = ["ss"]
by = ["b"]
floor = true
[selection]
captures = "/tmp/gvr-caps"
grid = "grids/dsa886.csv"
sample = 1500
[variants.route]
[variants.keep]
SS_REG_KEEP_BIN = 1
T
cp /tmp/floor_keep.toml $OUT/
timeout -s INT $(( 540 - SECONDS )) $B experiment /tmp/floor_keep.toml --flush-mib $FLUSH --out /tmp/x/floor > $OUT/floor.log 2>&1
echo "floor rc=$? at $SECONDS s (flush $FLUSH)" | tee -a $L
$B report /tmp/x/floor > /tmp/x/floor/report.log 2>&1
cp /tmp/x/floor/experiment.md $OUT/floor-experiment.md 2>/dev/null
grep -hE "^\| ss \| [a-z0-9]+ \|" /tmp/x/floor/experiment.md | tee -a $L
grep -A5 "^| Arm | Cases | Geometric" /tmp/x/floor/report/summary.md 2>/dev/null | tee -a $L
tar czf $OUT/x.tgz -C /tmp x
echo "done at $SECONDS s" | tee -a $L
