#!/bin/sh
# Builds fuzz_request and fuzz_http with clang (-fsanitize=fuzzer,address,
# undefined) in their own build folder and runs fuzz_request over a copy of
# corpus/, then fuzz_http over a copy of corpus_http/. Fails on any crash,
# leak, timeout or sanitizer report; the input that caused it is left in the
# build folder as crash-*, leak-* or timeout-*, to replay with:
# fuzz_request <that file>.
#
# The suite's run is a regression gate, so it is the same on every machine:
# a fixed seed (FUZZ_SEED, default 1) and a fixed number of inputs
# (FUZZ_RUNS, default 150000 for fuzz_request; FUZZ_HTTP_RUNS, default
# 150000 for fuzz_http), with FUZZ_SECONDS / FUZZ_HTTP_SECONDS (default 300)
# only as a cap. A campaign that looks for new findings sets FUZZ_SEED=0 (a
# seed of its own each run), FUZZ_RUNS=-1 and FUZZ_HTTP_RUNS=-1 (no count)
# and the seconds it may take.
#   run_fuzz.sh <source root> <build folder>
set -eu
src=$1
build=$2
seed=${FUZZ_SEED:-1}
runs=${FUZZ_RUNS:-150000}
http_runs=${FUZZ_HTTP_RUNS:-150000}
seconds=${FUZZ_SECONDS:-300}
http_seconds=${FUZZ_HTTP_SECONDS:-300}

# A missing clang is a skip locally and a failure under CI (tests/missing_tools.sh).
. "$src/tests/missing_tools.sh"
missing=
command -v clang >/dev/null || missing=clang
missing_tools_verdict fuzz "apt-get install clang libclang-rt-14-dev" $missing
cmake -S "$src" -B "$build" -DCMAKE_C_COMPILER=clang -DCOMPACTD_FUZZ=ON \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" --target fuzz_request fuzz_http -j "$(nproc)"

work=$(mktemp -d "${TMPDIR:-/tmp}/compactd-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM
cp -R "$src/tests/fuzz/corpus" "$work/corpus"
cp -R "$src/tests/fuzz/corpus_http" "$work/corpus_http"
echo "fuzz: running fuzz_request (seed $seed, $runs runs, at most ${seconds}s) over $(ls "$work/corpus" | wc -l) inputs"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
# libFuzzer exits 77 on a crash by default, which ctest takes for this
# test's skip code: every finding must be a failure.
exits="-error_exitcode=1 -timeout_exitcode=1"
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
"$build/tests/fuzz/fuzz_request" -seed="$seed" -runs="$runs" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=2048 \
    $exits -max_len=16384 -print_final_stats=1 -artifact_prefix="$build/" "$work/corpus"
echo "fuzz: running fuzz_http (seed $seed, $http_runs runs, at most ${http_seconds}s) over $(ls "$work/corpus_http" | wc -l) inputs"
"$build/tests/fuzz/fuzz_http" -seed="$seed" -runs="$http_runs" -max_total_time="$http_seconds" -timeout=20 -rss_limit_mb=2048 \
    $exits -max_len=16384 -print_final_stats=1 -artifact_prefix="$build/http-" "$work/corpus_http"
