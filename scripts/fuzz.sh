#!/usr/bin/env bash
# Runs libFuzzer targets built by `make fuzz-build`: each for SECONDS from its committed seed corpus
# (Fuzz/Corpus/<target>, read only) plus a working corpus in .build-fuzz/corpus/<target>. A crash or a
# violated property saves the input under .build-fuzz/findings/<target>/ and makes this script fail.
# Prints one line a target: executions, executions per second, corpus size, findings.
#   scripts/fuzz.sh SECONDS [TARGET…]      (default: every target)
set -uo pipefail
cd "$(dirname "$0")/.."
seconds=${1:?usage: scripts/fuzz.sh SECONDS [TARGET…]}
shift
bin=.build-fuzz/bin
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=($(ls Fuzz/Corpus))
failed=0
# Swift's own crash handler reads the stack in ways ASan reports as a second error; libFuzzer's is enough.
export SWIFT_BACKTRACE=enable=no
for t in "${targets[@]}"; do
    [ -x "$bin/$t" ] || { echo "fuzz: $bin/$t is not built (make fuzz-build)" >&2; exit 2; }
    mkdir -p ".build-fuzz/corpus/$t" ".build-fuzz/findings/$t"
    log=".build-fuzz/$t.log"
    # Swift's runtime keeps caches for the life of the process: leak reports would be noise. libFuzzer's
    # timeout is wall time: at 10 s a fuzzer starved beside a build reported inputs that replay in 50 ms.
    "$bin/$t" -max_total_time="$seconds" -timeout="${FUZZ_TIMEOUT:-60}" -rss_limit_mb=2048 -max_len=16384 -detect_leaks=0 \
        -print_final_stats=1 -artifact_prefix=".build-fuzz/findings/$t/" \
        ".build-fuzz/corpus/$t" "Fuzz/Corpus/$t" >"$log" 2>&1
    status=$?
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
    units=$(ls ".build-fuzz/corpus/$t" | wc -l)
    findings=$(ls ".build-fuzz/findings/$t" | wc -l)
    printf '%-22s %12s runs %8s exec/s %6s corpus %3s findings (exit %s)\n' "$t" "${runs:-?}" "${speed:-?}" "$units" "$findings" "$status"
    if [ "$status" -ne 0 ]; then
        failed=1
        grep -m3 -E 'property violated|ERROR: |Fatal error|SUMMARY' "$log" | sed 's/^/    /'
    fi
done
exit $failed
