# Shared prologue and helpers of the ad-hoc device call scripts (scripts/.callN.sh, archived
# as reports/*/callN.*.sh): source it, then call `device_setup`. Sourcing runs nothing.
# (campaign.sh and device_check.sh keep their own setup: changing them needs a GPU run.)
#
#   source scripts/device_lib.sh
#   device_setup                       # paths, card line, H200 / FLUSH, synth captures
#   step NAME LIMIT_S CMD...           # CMD under timeout, output to /tmp/logs/NAME.log
#   ab NAME FILE [LIMIT_S]             # `experiment FILE` as step NAME into /tmp/x/NAME; its
#                                      # table to $OUT/NAME-experiment.md, ss rows to the log
#   pack NAME PATH...                  # tar of PATHs (relative to /tmp) to $OUT/NAME.tgz
#   finish_out                         # last: more than eight files under $OUT go into rest.tgz
#
# A call returns at most eight files under $OUT: pack logs, records and profiles.

# The L2 flush for a card named $1: 512 MiB on an H200 (its flush A/B has not run), 128 MiB on
# an H100 (within 0.4 % of 512 MiB there, reports/h100/2026-12-07d).
gvr_flush_mib() {
    case "$1" in
        *H200*) echo 512 ;;
        *) echo 128 ;;
    esac
}

# CUDA and CUPTI libraries, the kernel cache, B (the binary), L (the call log), the card line,
# SECONDS from 0, H200 (0/1), FLUSH (MiB), the synth captures in /tmp/gvr-caps.
device_setup() {
    export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64:${LD_LIBRARY_PATH:-}
    export GVR_CACHE_DIR=/tmp/gvr-kernel-cache
    B=$PWD/devbin/new/gvr-bench
    L=$OUT/call.log
    mkdir -p /tmp/x /tmp/logs /tmp/prof
    local card
    card=$(nvidia-smi --query-gpu=name,uuid,driver_version --format=csv,noheader)
    echo "$card" | tee "$L"
    SECONDS=0
    H200=0
    case "$card" in *H200*) H200=1 ;; esac
    FLUSH=$(gvr_flush_mib "$card")
    echo "flush $FLUSH MiB" | tee -a "$L"
    "$B" capture synth --out /tmp/gvr-caps --steps 4 --seed 0 > /dev/null 2>&1
    echo "synth rc=$? at $SECONDS s" | tee -a "$L"
}

# step NAME LIMIT_S CMD...: run CMD under `timeout -s INT`, its output to /tmp/logs/NAME.log;
# the exit status and the time go to the call log. Never aborts the call.
step() {
    local name="$1" limit="$2"
    shift 2
    mkdir -p /tmp/logs
    timeout -s INT "$limit" "$@" > "/tmp/logs/$name.log" 2>&1
    local rc=$?
    echo "$name rc=$rc at $SECONDS s" | tee -a "$L"
    return 0
}

# ab NAME FILE [LIMIT_S]: the experiment file FILE as step NAME (LIMIT_S, default 150) into
# /tmp/x/NAME, at the call's flush; its A/B table to $OUT/NAME-experiment.md and the table's
# whole-set ss rows to the call log. Never aborts the call.
ab() {
    local name="$1" file="$2" limit="${3:-150}"
    step "$name" "$limit" "$B" experiment "$file" --flush-mib "$FLUSH" --out "/tmp/x/$name"
    cp "/tmp/x/$name/experiment.md" "$OUT/$name-experiment.md" 2>/dev/null
    grep -hE "^\| ss \| [a-z0-9]+ \|" "/tmp/x/$name/experiment.md" 2>/dev/null | tee -a "$L"
    return 0
}

# pack NAME PATH...: the PATHs (relative to /tmp; missing ones skipped) as $OUT/NAME.tgz.
pack() {
    local name="$1" have=()
    shift
    for p in "$@"; do
        [ -e "/tmp/$p" ] && have+=("$p")
    done
    [ ${#have[@]} -gt 0 ] && tar czf "$OUT/$name.tgz" -C /tmp "${have[@]}"
    return 0
}

# finish_out: the last line of a call script. A call returns at most eight files under $OUT
# (the rest is lost); when there are more, every file but the call log goes into
# $OUT/rest.tgz, and the call log says so.
finish_out() {
    local n
    n=$(find "$OUT" -type f | wc -l)
    if [ "$n" -gt 8 ]; then
        local tmp
        tmp=$(mktemp /tmp/gvr-rest.XXXXXX)
        (cd "$OUT" && find . -type f ! -name call.log -print0 | tar czf "$tmp" --null -T - --remove-files) \
            && mv "$tmp" "$OUT/rest.tgz"
        echo "finish_out: $n files under \$OUT; all but call.log are in rest.tgz" | tee -a "$L"
    fi
    return 0
}
