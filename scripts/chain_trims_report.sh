#!/usr/bin/env bash
# Tables of scripts/h200_chain_trims_call.sh, from one part's unpacked tarball:
#   scripts/chain_trims_report.sh DIR      (DIR holds runs/ and experiments.log)
# (part 2's second rounds: base3 / rbase3 / cbase3 are their bases.)
# Each A/B is scripts/ab_compare.py (every case normalised by its own run's radix;
# > 1: the candidate is faster); the phases are scripts/phase_table.py of each build.
set -u
D="${1:?usage: $0 DIR}"
R="$D/runs"
here="$(dirname "$0")"
have() { for l in "$@"; do [ -f "$R/$l/results.jsonl" ] || return 1; done; }
ab() { # ab BASE CANDS ARM [--by ...]: the candidates that ran
  local base="$1" arm="$3" c present=""; local IFS=,
  for c in $2; do have "$c" && present="${present:+$present,}$c"; done
  unset IFS; shift 3
  [ -n "$present" ] || return 0
  echo "### $base : $present ($arm) $*"
  python3 "$here/ab_compare.py" "$@" "$R" "$base:$present:$arm" 2>&1 || true
  echo
}
echo "## Exit codes"
awk '/^== /{label=$2} /^   rc=/{print label, $1, $3, $4}' "$D/experiments.log"; echo
have base && ab base scan,trim,f1,f2,pf2,all3,base2 ss-main --by k,b
have base3 && ab base3 all3_2,pf2_2 ss-main --by k,b
have rbase && ab rbase rpf,rsb,rsm,rsm2,rb512,rboth,rbig4,rbase2 ss-main --by k,n,b
have rbase3 && ab rbase3 rpf_2,rsb_2,rbig4_2,rsm_2,rsm2_2,rb512_2,rbig5_2 ss-main --by k,n,b
have w1base && ab w1base w1pf,w1l2s2,w1l2s3,w1base2 ss-main --by n
have cbase && ab cbase cscan,ctrim,cboth,ctail,cthree,cbase2 ss-clus --by k,b
have cbase3 && ab cbase3 cthree_2 ss-clus --by k,b
for p in ph_base ph_all3 ph_big_base ph_big_new ph_big_sm ph_big_sm2 ph_cbase ph_cboth; do
  [ -d "$R/$p" ] || continue
  echo "### phases $p"; python3 "$here/phase_table.py" "$R/$p" 2>&1 || true; echo
done
for c in cert_all3 cert_cboth soak_all; do
  [ -f "$D/logs/$c.log" ] || continue
  echo "### $c"; tail -n 12 "$D/logs/$c.log"; echo
done
