#!/usr/bin/env bash
# Fails when the tracked files of the repository add up to more than the limit
# (default 15 MiB; TREE_LIMIT_BYTES overrides). The tree is meant to hold the
# code, the sample captures and the reports of record only: raw device results
# and superseded reports live in git history (reports/README.md says where).
set -euo pipefail
cd "$(dirname "$0")/.."

limit="${TREE_LIMIT_BYTES:-$((15 * 1024 * 1024))}"
# Summed with awk, not `du -c`: xargs may split a long list over several du calls.
total=$(git ls-files -z | xargs -0 du -b | awk '{ s += $1 } END { print s + 0 }')
mib() { awk -v b="$1" 'BEGIN { printf "%.2f MiB", b / 1048576 }'; }

if [ "$total" -gt "$limit" ]; then
  echo "check_tree: FAILED: tracked files total $total bytes ($(mib "$total")), limit $limit bytes ($(mib "$limit"))" >&2
  echo "check_tree: the biggest tracked paths:" >&2
  git ls-files -z | xargs -0 du -b | sort -rn | head -n 20 >&2
  echo "check_tree: per top-level directory:" >&2
  git ls-files -z | xargs -0 du -b \
    | awk '{ n = split($2, p, "/"); d = (n > 2) ? p[1] "/" p[2] : p[1]; s[d] += $1 } END { for (d in s) print s[d] "\t" d }' \
    | sort -rn | head -n 10 >&2
  echo "check_tree: move raw results out of the tree (they stay in git history) and list them in reports/README.md" >&2
  exit 1
fi
echo "check_tree: tracked files total $total bytes ($(mib "$total")), limit $(mib "$limit")"
