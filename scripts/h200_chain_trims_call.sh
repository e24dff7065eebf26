#!/usr/bin/env bash
# One H200 device call (~8 min; NOTES "What to do next" item 0): same-run A/B of the
# small-B chain trims prepared in the twenty-third session, all default off —
#   SS_SCAN_FORM=1       ss_scan256 finds crossings by counting (main + clus),
#   SS_THRESHOLD_TRIM=1  no middle barrier in the threshold phase (main + clus),
#   SS_HANDOFF_FENCE=1|2 SPLIT hand-off with acquire-release fences (main),
#   SS_SAMPLE_BATCH=2    two sample pairs' loads per trip (main; big-B rows of 262K),
#   SS_PIECE_FIRST=1|2   the one-CTA (1) / SPLIT (2) pass walks its partial tile first, tail
#                        scalars with the first tile (main; no dependent trip left at the end),
#   CL_TAIL_FIRST=1      clus rank 0's tail scalars loaded with its first chunk,
#   SS_L2_START=2|3      two / three start tiles at one-wave B 256 (an existing knob),
#   SS_SAMPLE_SMEM=1|2   one-CTA entries keep the sample in the staging area for the
#                        histogram (1), or copy it in there with cp.async, all pairs at
#                        once, min/max from there too (2) (main; twenty-fourth session),
#   GVR_SS_MAIN_BLK=512  one-CTA rows at B > SMs on BLK 512 x 2 CTAs/SM instead of the
#                        wave-aware tie's BLK 256 x 4 at K <= 1,024 (host only; the B 512 and 1,024
#                        rows of the big-B set are the test; twenty-fourth session),
# each against radix in its own run (scripts/ab_compare.py), base re-run as A/A; the
# phases of the combined builds; certify (poisoned pads, soak) of the knob builds;
# a GPU soak of every GPU arm. Everything is packed into $OUT/experiments.tgz.
#
# Usage (device, after unpacking the binary): OUT=$OUT GVR_BIN=devbin/x/gvr-bench \
#   PART=1|2 [BUDGET_S=555] bash scripts/h200_chain_trims_call.sh
# PART 1 (one call): the A/B runs with their A/A repeats; PART 2 (a second call, on the warm
# machine if it is still held): phases, certify and soak of the knob builds, second rounds.
# Each part writes its own $OUT/experiments.tgz; unpack them into DIR/part1, DIR/part2.
# Locally: scripts/ab_compare.py --by k,b RUNS base:scan,trim,f1,f2,all3,base2:ss-main
#          (and cbase:cscan,ctrim,cboth,cbase2:ss-clus, rbase:rsb,rsm,rsm2,rb512,rboth,rbase2:ss-main --by k,n,b).
set -u
: "${OUT:?set OUT}"
B="${GVR_BIN:-target/release/gvr-bench}"
G="--grid grids/dsa886.csv"
RUNS=/tmp/experiments/runs
SPL="grid $G --batches 1,2,4,8,16,32 --n-min 100000 --arms ss-main,radix"
CLU="grid $G --batches 1,2,4,8,16,32 --n-min 32768 --sample 600 --arms ss-clus,radix"
BIG="grid $G --batches 256,512,1024 --n-min 60000 --sample 240 --arms ss-main,radix"
# One-wave launches (B 256): two start tiles instead of one (SS_L2_START=2 lost 2.5 % over
# N >= 64K x B 128-1,024 in 2026-12-03d, not split by B; at one wave the fixed phases are
# the whole gap to the floor, reports/h200/2026-12-05b)
W1="grid $G --batches 256 --n-min 60000 --sample 120 --arms ss-main,radix"
PHM="phases $G --arms ss-main --batches 1,2,4,8 --n-min 100000 --sample 48 --reps 5"
PHB="phases $G --arms ss-main --batches 256,1024 --n-min 200000 --sample 12 --reps 3"
PHC="phases $G --arms ss-clus --batches 1,2,4,8 --n-min 16000 --sample 48 --reps 5"
M=GVR_SS_MAIN_DEFINES
C=GVR_SS_CLUS_DEFINES
ALL3=SS_SCAN_FORM=1,SS_THRESHOLD_TRIM=1,SS_HANDOFF_FENCE=2
BOTH=SS_SCAN_FORM=1,SS_THRESHOLD_TRIM=1
ARMS=radix,radix-mcta,filtered,gvr1,ss,ss-main,ss-main-base,ss-reg,ss-clus,ss-varlen,ss-varlen-hints,ss-regclus
PART1="base|-|$SPL
scan|$M=SS_SCAN_FORM=1|$SPL
trim|$M=SS_THRESHOLD_TRIM=1|$SPL
f1|$M=SS_HANDOFF_FENCE=1|$SPL
f2|$M=SS_HANDOFF_FENCE=2|$SPL
pf2|$M=SS_PIECE_FIRST=2|$SPL
all3|$M=$ALL3|$SPL
base2|-|$SPL
rbase|-|$BIG
rpf|$M=SS_PIECE_FIRST=1|$BIG
rsb|$M=SS_SAMPLE_BATCH=2|$BIG
rboth|$M=$BOTH|$BIG
rbig4|$M=$BOTH,SS_SAMPLE_BATCH=2,SS_PIECE_FIRST=1|$BIG
rsm|$M=SS_SAMPLE_SMEM=1|$BIG
rsm2|$M=SS_SAMPLE_SMEM=2|$BIG
rb512|GVR_SS_MAIN_BLK=512|$BIG
rbase2|-|$BIG
w1base|-|$W1
w1pf|$M=SS_PIECE_FIRST=1|$W1
w1l2s2|$M=SS_L2_START=2|$W1
w1l2s3|$M=SS_L2_START=3|$W1
w1base2|-|$W1
cbase|-|$CLU
cscan|$C=SS_SCAN_FORM=1|$CLU
ctrim|$C=SS_THRESHOLD_TRIM=1|$CLU
cboth|$C=$BOTH|$CLU
ctail|$C=CL_TAIL_FIRST=1|$CLU
cthree|$C=$BOTH,CL_TAIL_FIRST=1|$CLU
cbase2|-|$CLU"
PART2="ph_base|-|$PHM --out $RUNS/ph_base
ph_all3|$M=$ALL3,SS_PIECE_FIRST=2|$PHM --out $RUNS/ph_all3
ph_big_base|-|$PHB --out $RUNS/ph_big_base
ph_big_new|$M=SS_SAMPLE_BATCH=2,SS_PIECE_FIRST=1|$PHB --out $RUNS/ph_big_new
ph_big_sm|$M=SS_SAMPLE_SMEM=1|$PHB --out $RUNS/ph_big_sm
ph_big_sm2|$M=SS_SAMPLE_SMEM=2|$PHB --out $RUNS/ph_big_sm2
ph_cbase|-|$PHC --out $RUNS/ph_cbase
ph_cboth|$C=$BOTH,CL_TAIL_FIRST=1|$PHC --out $RUNS/ph_cboth
cert_all3|$M=$ALL3,SS_SAMPLE_BATCH=2,SS_PIECE_FIRST=3,SS_SAMPLE_SMEM=2|certify --arms ss-main --poison-pad $G --batches 1,8,32,256 --n-min 30000 --sample 60 --soak 300 --soak-seed 7001
cert_cboth|$C=$BOTH,CL_TAIL_FIRST=1|certify --arms ss-clus --poison-pad $G --batches 1,8,32 --n-min 30000 --sample 60 --soak 300 --soak-seed 7002
soak_all|-|certify --arms $ARMS --poison-pad --sample 30 --soak 300 --soak-seed 20261205
base3|-|$SPL
all3_2|$M=$ALL3|$SPL
pf2_2|$M=SS_PIECE_FIRST=2|$SPL
rbase3|-|$BIG
rpf_2|$M=SS_PIECE_FIRST=1|$BIG
rsb_2|$M=SS_SAMPLE_BATCH=2|$BIG
rbig4_2|$M=$BOTH,SS_SAMPLE_BATCH=2,SS_PIECE_FIRST=1|$BIG
rsm_2|$M=SS_SAMPLE_SMEM=1|$BIG
rsm2_2|$M=SS_SAMPLE_SMEM=2|$BIG
rb512_2|GVR_SS_MAIN_BLK=512|$BIG
rbig5_2|$M=$BOTH,SS_PIECE_FIRST=1,SS_SAMPLE_SMEM=2|$BIG
cbase3|-|$CLU
cthree_2|$C=$BOTH,CL_TAIL_FIRST=1|$CLU"
case "${PART:-1}" in
  1) EXPERIMENTS="$PART1" ;;
  2) EXPERIMENTS="$PART2" ;;
  *) echo "PART is 1 or 2" >&2; exit 2 ;;
esac
EXPERIMENTS="$EXPERIMENTS" OUT="$OUT" GVR_BIN="$B" BUDGET_S="${BUDGET_S:-555}" \
  bash scripts/h200_experiments.sh > /dev/null 2>&1
tail -n 3 /tmp/experiments/experiments.log
grep -c "rc=0" /tmp/experiments/experiments.log
grep "rc=[1-9]" /tmp/experiments/experiments.log
