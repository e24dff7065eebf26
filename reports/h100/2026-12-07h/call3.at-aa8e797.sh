#!/usr/bin/env bash
# Issue 48: SS_REG_KEEP_BIN 1 and 2 (experiments/reg_keep_bin.toml), certify and compute-sanitizer
# with 2 (both emit forms), Nsight Compute (clocks left alone) of 16K x K 2,048 at B 1 and 1,024
# with 2; the floor sample with route and keep2 if keep2 gains; on an H200 the flush A/B/A.
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
keep() { # tar of a run's records and tables
  tar czf $OUT/$1.tgz -C /tmp/x $1/results.jsonl $1/manifest.json $1/experiment.md $(cd /tmp/x && ls $1/floor.jsonl 2>/dev/null) 2>/dev/null
}
timeout -s INT 200 $B experiment experiments/reg_keep_bin.toml --flush-mib $FLUSH --out /tmp/x/keep > /tmp/x/keep.log 2>&1
echo "== experiment rc=$? at $SECONDS s (flush $FLUSH)" | tee -a $L
cp /tmp/x/keep/experiment.md $OUT/keep-experiment.md 2>/dev/null; keep keep
grep -hE "^\| ss \| [a-z0-9]+ \|" /tmp/x/keep/experiment.md | tee -a $L
timeout -s INT 120 $B certify --captures /tmp/gvr-caps --grid grids/dsa886.csv --n-max 17500 --sample 800 --arms ss \
  --knob SS_REG_KEEP_BIN=2 --poison-pad --soak 2 > $OUT/certify.log 2>&1
echo "certify rc=$? at $SECONDS s" | tee -a $L; grep -E "^\| ss" $OUT/certify.log | tee -a $L
for form in slots cur; do
  for cell in v32_16k_L00 v32_4k_L00; do
    for tool in memcheck racecheck synccheck; do
      echo "== $tool $cell b8 $form keep2" >> $OUT/sanitize.log
      timeout 40 compute-sanitizer --tool $tool --error-exitcode 9 $B certify --captures /tmp/gvr-caps --cells $cell \
        --batches 8 --arms ss --no-adversarial --knob SS_REG_KEEP_BIN=2 --knob reg.emit=$form >> $OUT/sanitize.log 2>&1
      echo "$tool $cell $form rc=$? at $SECONDS s" | tee -a $L
    done
  done
done
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
for b in 1 1024; do
  for v in 0 2; do
    timeout 100 $NCU --clock-control none --set full --warp-sampling-interval 0 --kernel-name regex:'^ss_reg' --launch-count 1 \
      -f -o /tmp/prof/16kb$b-k$v $B certify --captures /tmp/gvr-caps --cells v32_16k_L00 --batches $b --arms ss \
      --no-adversarial --knob SS_REG_KEEP_BIN=$v > /tmp/prof/16kb$b-k$v.log 2>&1
    echo "ncu b$b keep $v rc=$? at $SECONDS s" | tee -a $L
    $NCU --import /tmp/prof/16kb$b-k$v.ncu-rep --page details --csv > /tmp/prof/16kb$b-k$v-details.csv 2>&1
    $NCU --import /tmp/prof/16kb$b-k$v.ncu-rep --page source --csv --print-source sass > /tmp/prof/16kb$b-k$v-sass.csv 2>&1
    gzip -f /tmp/prof/16kb$b-k$v-sass.csv; rm -f /tmp/prof/16kb$b-k$v.ncu-rep
  done
done
tar czf $OUT/prof.tgz -C /tmp prof
G=$(grep -hE "^\| ss \| keep2 \|" /tmp/x/keep/experiment.md | awk -F'|' '{print $5}' | tr -d ' ')
echo "keep2 geomean $G" | tee -a $L
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
if python3 -c "import sys; sys.exit(0 if float('${G:-0}') >= 1.005 else 1)" || [ $H200 = 1 ]; then
  printf 'base = "route"\narms = ["ss"]\nby = ["b"]\nfloor = true\n[selection]\ncaptures = "/tmp/gvr-caps"\ngrid = "grids/dsa886.csv"\nsample = 1500\n[variants.route]\n[variants.keep2]\nSS_REG_KEEP_BIN = 2\n' > $OUT/floor_keep2.toml
  timeout -s INT $(( 520 - SECONDS )) $B experiment $OUT/floor_keep2.toml --flush-mib $FLUSH --out /tmp/x/floor > $OUT/floor.log 2>&1
  echo "floor rc=$? at $SECONDS s (flush $FLUSH)" | tee -a $L
  $B report /tmp/x/floor > /tmp/x/floor/report.log 2>&1
  cp /tmp/x/floor/experiment.md $OUT/floor-experiment.md 2>/dev/null; keep floor
  cp /tmp/x/floor/report/summary.md $OUT/floor-summary.md 2>/dev/null
  grep -hE "^\| ss \| [a-z0-9]+ \|" /tmp/x/floor/experiment.md | tee -a $L
  grep -A5 "^| Arm | Cases | Geometric" /tmp/x/floor/report/summary.md 2>/dev/null | tee -a $L
fi
echo "done at $SECONDS s" | tee -a $L
