#!/usr/bin/env bash
# Runs the libFuzzer targets of the Fuzz package (CONTRIBUTING.md, "Fuzzing") one after the other; `make fuzz` and the
# smoke in `make test` call it once they have built them (FUZZ_CONFIGURATION: release, the default, or debug).
#   fuzz.sh run SECONDS [TARGET...]    fuzzes each target for SECONDS into its working corpus, $FUZZ_DIR/TARGET/corpus
#                                      (outside git), with the committed seeds in Fuzz/Corpus/TARGET read as well
#   fuzz.sh smoke SECONDS [TARGET...]  runs each target for SECONDS from the committed seeds only, into a corpus
#                                      folder thrown away after (a fixed seed, so runs start alike)
# No TARGET: every target (`offer-signer-fuzz --list`). Each target prints one line: runs, executions per second,
# corpus size and the crash, if any; a crash's input is kept as $FUZZ_DIR/TARGET/crashes/crash-SHA1 and the exit
# status is 1 once every target has run. libFuzzer's own output is in $FUZZ_DIR/TARGET/last.log.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="$root/Fuzz/.build/${FUZZ_CONFIGURATION:-release}/offer-signer-fuzz"
fuzz_dir="${FUZZ_DIR:-$root/.fuzz}"
mode="${1:-}"
seconds="${2:-}"
if [[ "$mode" != run && "$mode" != smoke ]] || ! [[ "$seconds" =~ ^[1-9][0-9]*$ ]]; then
    echo "usage: fuzz.sh run|smoke SECONDS [TARGET...]" >&2
    exit 2
fi
shift 2
if [[ ! -x "$bin" ]]; then
    echo "fuzz.sh: $bin is not built: \`make fuzz-build\` builds it (release), \`make fuzz-smoke\` in debug" >&2
    exit 2
fi
if (($# > 0)); then targets=("$@"); else read -r -a targets <<<"$("$bin" --list)"; fi

# Swift's backtracer would report itself instead of the crash under AddressSanitizer.
export SWIFT_BACKTRACE=enable=no
failed=()
for target in "${targets[@]}"; do
    seeds="$root/Fuzz/Corpus/$target"
    if [[ ! -d "$seeds" ]]; then
        echo "fuzz $target: no seed corpus $seeds" >&2
        failed+=("$target")
        continue
    fi
    mkdir -p "$fuzz_dir/$target/crashes"
    log="$fuzz_dir/$target/last.log"
    flags=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
        -artifact_prefix="$fuzz_dir/$target/crashes/")
    if [[ "$mode" == run ]]; then
        corpus="$fuzz_dir/$target/corpus"
        mkdir -p "$corpus"
        "$bin" "$target" "${flags[@]}" "$corpus" "$seeds" >"$log" 2>&1
        status=$?
    else
        # libFuzzer writes new inputs into its first corpus folder: never the committed one.
        corpus="$(mktemp -d)"
        "$bin" "$target" "${flags[@]}" -seed=1 "$corpus" "$seeds" >"$log" 2>&1
        status=$?
        rm -rf "$corpus"
        corpus=""
    fi
    runs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")"
    speed="$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")"
    size="$([[ -n "$corpus" ]] && find "$corpus" -type f | wc -l)"
    line="fuzz $target: ${runs:-?} runs in ${seconds} s, ${speed:-?} exec/s${size:+, corpus $size inputs}"
    if ((status == 0)); then
        echo "$line, no crash"
    else
        echo "$line: FAILED (exit $status), see $log"
        grep -m1 -E '^==[0-9]+==ERROR|Fatal error|deadly signal|timeout after|out-of-memory' "$log" | sed 's/^/  /'
        grep -m1 -E 'Test unit written to' "$log" | sed 's/^/  /'
        failed+=("$target")
    fi
done
if ((${#failed[@]} > 0)); then
    echo "fuzz: ${failed[*]} failed; a crash's input reproduces with $bin TARGET FILE" >&2
    exit 1
fi
