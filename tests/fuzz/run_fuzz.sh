#!/bin/sh
# Builds fuzz_request and fuzz_http with clang (-fsanitize=fuzzer,address,
# undefined) in their own build folder and runs fuzz_request for FUZZ_SECONDS
# (default 60) over a copy of corpus/, then fuzz_http for FUZZ_HTTP_SECONDS
# (default 20) over a copy of corpus_http/. Fails on any crash, leak, timeout or sanitizer report; the
# input that caused it is left in the build folder as crash-*, leak-* or
# timeout-*, to replay with: fuzz_request <that file>.
#   run_fuzz.sh <source root> <build folder>
set -eu
src=$1
build=$2
seconds=${FUZZ_SECONDS:-60}
http_seconds=${FUZZ_HTTP_SECONDS:-20}

command -v clang >/dev/null || {
    echo "fuzz: clang is not installed (apt-get install clang libclang-rt-14-dev)" >&2
    exit 1
}
cmake -S "$src" -B "$build" -DCMAKE_C_COMPILER=clang -DCOMPACTD_FUZZ=ON \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" --target fuzz_request fuzz_http -j "$(nproc)"

work=$(mktemp -d "${TMPDIR:-/tmp}/compactd-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM
cp -R "$src/tests/fuzz/corpus" "$work/corpus"
cp -R "$src/tests/fuzz/corpus_http" "$work/corpus_http"
echo "fuzz: running fuzz_request for ${seconds}s over $(ls "$work/corpus" | wc -l) seeds"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
"$build/tests/fuzz/fuzz_request" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=2048 \
    -max_len=16384 -print_final_stats=1 -artifact_prefix="$build/" "$work/corpus"
echo "fuzz: running fuzz_http for ${http_seconds}s over $(ls "$work/corpus_http" | wc -l) seeds"
"$build/tests/fuzz/fuzz_http" -max_total_time="$http_seconds" -timeout=20 -rss_limit_mb=2048 \
    -max_len=16384 -print_final_stats=1 -artifact_prefix="$build/http-" "$work/corpus_http"
