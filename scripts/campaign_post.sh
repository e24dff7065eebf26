#!/usr/bin/env bash
# Host side of a full campaign (scripts/campaign_calls.sh): both shards' tarballs
# from a device call's files -> one merged run, its report (and one against torch), the
# A/A noise floor and, given an earlier campaign's records, a radix-normalised per-case
# comparison with it. Writes what the tree keeps of a campaign of record (manifest and
# environment, the two summaries, three SVGs, report/cases.csv.gz without the per-rep
# columns, aa.json / aa.txt, the comparison) plus the raw run/results.jsonl.gz and
# both shard logs. Commit the raw files once so that history keeps them, then `git rm`
# them in the next commit and name that first commit in reports/README.md ("raw at"):
# .ci/check_tree.sh holds the tree to 15 MiB.
#
#   scripts/campaign_post.sh FILES_AT DEST [BASE_RESULTS_GZ BASE_LABEL]
#
#   FILES_AT         holds s0/campaign-0of2.tgz and s1/campaign-1of2.tgz (the call's $OUT);
#                    with one of them only, that shard alone is the campaign (half the
#                    grid: the summary says so in its header, notes.shard); or one
#                    campaign.tgz of an unsharded run (scripts/campaign.sh without SHARD,
#                    e.g. SAMPLE=N: notes.selection names the sample)
#   DEST             e.g. reports/<gpu>/<date>/campaign-<sha> (must not exist yet)
#   BASE_RESULTS_GZ  a results.jsonl.gz to compare with (e.g. the previous campaign's,
#                    `git show <raw-at commit>:<its path>`), labelled BASE_LABEL
#
# BIN (default target/release/gvr-bench) does the merge, report and A/A.
set -euo pipefail
if [ $# -ne 2 ] && [ $# -ne 4 ]; then
  sed -n '12,21p' "$0" >&2
  exit 2
fi
FILES_AT=$1 DEST=$2 BASE_GZ=${3:-} BASE_LABEL=${4:-}
BIN="${BIN:-target/release/gvr-bench}"
HERE="$(cd "$(dirname "$0")" && pwd)"
if [ -e "$DEST" ]; then echo "$DEST exists: pick a new directory" >&2; exit 2; fi
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
# A tarball over the device's 16 MiB per file came back in parts (campaign.sh splits it):
# join them here (FILES_AT may be read-only). Prints the tarball's path, or nothing.
tarball() {
  local path=$1 joined="$T/joined-$(basename "$(dirname "$1")")-$(basename "$1")"
  if [ -f "$path" ]; then echo "$path"
  elif [ -f "$path.part00" ]; then cat "$path".part* > "$joined" && echo "$joined"; fi
}
SHARDS=() SHARD_TGZ=()
for s in 0 1; do
  t=$(tarball "$FILES_AT/s$s/campaign-${s}of2.tgz")
  [ -n "$t" ] && SHARDS+=("$s") && SHARD_TGZ[$s]=$t
done
WHOLE=""
[ "${#SHARDS[@]}" -eq 0 ] && WHOLE=$(tarball "$FILES_AT/campaign.tgz")
if [ "${#SHARDS[@]}" -eq 0 ] && [ -z "$WHOLE" ]; then
  echo "no campaign tarball under $FILES_AT (s0/campaign-0of2.tgz, s1/campaign-1of2.tgz, or campaign.tgz): see the call's output" >&2
  exit 1
fi
[ "${#SHARDS[@]}" -eq 1 ] && echo "only shard ${SHARDS[0]} of 2: the campaign is that half of the grid" >&2
mkdir -p "$DEST/logs" "$DEST/report"
if [ -n "$WHOLE" ]; then
  # One unsharded run: its directory is the tarball's only top-level folder besides logs.
  mkdir -p "$T/w" && tar xzf "$WHOLE" -C "$T/w"
  RUN_SRC=$(find "$T/w" -mindepth 2 -maxdepth 2 -name manifest.json -printf '%h\n' | head -1)
  [ -n "$RUN_SRC" ] || { echo "$FILES_AT/campaign.tgz holds no run directory (manifest.json)" >&2; exit 1; }
  cp -r "$RUN_SRC" "$T/run"
  cp "$FILES_AT/campaign.log" "$DEST/logs/campaign.log"
else
  for s in "${SHARDS[@]}"; do
    mkdir -p "$T/s$s"
    tar xzf "${SHARD_TGZ[$s]}" -C "$T/s$s"
    cp "$FILES_AT/s$s/campaign.log" "$DEST/logs/shard$s.log"
  done
  if [ "${#SHARDS[@]}" -eq 2 ]; then
    "$BIN" merge "$T/s0/run-0of2" "$T/s1/run-1of2" --out "$T/run"
  else
    s=${SHARDS[0]}
    cp -r "$T/s$s/run-${s}of2" "$T/run"
  fi
fi
"$BIN" report "$T/run" --out "$T/report" > /dev/null
"$BIN" report "$T/run" --base torch --out "$T/report-torch" --no-plots > /dev/null
# Every arm with its A/A twin (ss#2, radix#2, ...), whichever the run has.
"$BIN" aa "$T/run" --out "$DEST/aa.json" > "$DEST/aa.txt"
if [ -n "$BASE_GZ" ]; then
  mkdir -p "$T/cmp"
  cp "$BASE_GZ" "$T/cmp/$BASE_LABEL.jsonl.gz"
  gzip -c "$T/run/results.jsonl" > "$T/cmp/new.jsonl.gz"
  # (--by variant also prints the whole-grid line first)
  python3 "$HERE/ab_compare.py" --by variant "$T/cmp" "$BASE_LABEL:new:ss" > "$DEST/vs-$BASE_LABEL.txt"
fi
mkdir -p "$DEST/run"
gzip -9 -c "$T/run/results.jsonl" > "$DEST/run/results.jsonl.gz"
# The floor's records (--floor) and what each peer ran (versions, JIT time), when present.
[ -s "$T/run/floor.jsonl" ] && gzip -9 -c "$T/run/floor.jsonl" > "$DEST/run/floor.jsonl.gz"
for meta in "$T"/run/peer-*.json; do [ -f "$meta" ] && cp "$meta" "$DEST/run/"; done
cp "$T/run/manifest.json" "$DEST/run/"
ENV_TXT="$T/run/environment.txt"  # a merged run has none of its own: the first shard's
[ -z "$WHOLE" ] && ENV_TXT="$T/s${SHARDS[0]}/run-${SHARDS[0]}of2/environment.txt"
[ -f "$ENV_TXT" ] && cp "$ENV_TXT" "$DEST/run/"
cp "$T/report/summary.md" "$DEST/report/"
# The per-case table less the columns derived from others or holding every rep
# (results.jsonl keeps those): a third of the size.
python3 - "$T/report/cases.csv" "$DEST/report/cases.csv.gz" <<'PY'
import csv, gzip, io, sys
drop = {"read_bandwidth_gbps", "roofline_fraction", "cold_us", "warm_us"}
with open(sys.argv[1], newline="") as f, gzip.GzipFile(sys.argv[2], "wb", 9, mtime=0) as raw:
    rows = csv.reader(f)
    head = next(rows)
    keep = [i for i, name in enumerate(head) if name not in drop]
    out = io.TextIOWrapper(raw, newline="")
    w = csv.writer(out, lineterminator="\n")
    w.writerow([head[i] for i in keep])
    for row in rows:
        w.writerow([row[i] for i in keep])
    out.flush()
    out.detach()
PY
cp "$T/report-torch/summary.md" "$DEST/report/summary-torch-base.md"
for svg in heatmap_radix ratio_hist_radix ratio_hist_torch; do
  [ -f "$T/report/$svg.svg" ] && cp "$T/report/$svg.svg" "$DEST/report/"
done
sed -n '1,40p' "$DEST/report/summary.md"
echo "kept in $DEST: $(du -sh "$DEST" | cut -f1)"
