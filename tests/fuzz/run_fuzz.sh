#!/bin/sh
# Builds the libFuzzer targets with clang (-fsanitize=fuzzer,address,
# undefined) in their own build folder, or runs one of them over a copy of
# its seed corpus. Fails on any crash, leak, timeout, sanitizer report or
# failed check of the harness; the input that caused it is left in the
# build folder as <target>-crash-*, -leak-* or -timeout-*, to replay with:
# <build folder>/tests/fuzz/<target> <that file>.
#   run_fuzz.sh <source root> <build folder> build
#   run_fuzz.sh <source root> <build folder> <target> [deep]
#
# The suite's run is a regression gate, so it is the same on every machine:
# a fixed seed (FUZZ_SEED, default 1) and a fixed number of inputs for each
# target (below; FUZZ_RUNS sets another), with FUZZ_SECONDS (default 300)
# only as a cap. Every run replays the whole seed corpus first. The default
# pass (fuzz_<target>) then runs a small number of inputs, a few seconds'
# worth; the deep pass (fuzz_<target>_deep, ctest label deep, which CI
# runs) the campaign's full number. A campaign that looks for new findings
# sets FUZZ_SEED=0 (a seed of its own each run), FUZZ_RUNS=-1 (no count) and
# the seconds it may take; the corpus it grows is in FUZZ_WORK when that
# names a folder (kept), else in a temporary one.
set -eu
src=$1
build=$2
what=$3
budget=${4:-default}
seed=${FUZZ_SEED:-1}
seconds=${FUZZ_SECONDS:-300}

# A missing clang is a skip locally and a failure under CI (tests/missing_tools.sh).
. "$src/tests/missing_tools.sh"
missing=
command -v clang >/dev/null || missing=clang
missing_tools_verdict fuzz "apt-get install clang libclang-rt-14-dev" $missing

if [ "$what" = build ]; then
    cmake -S "$src" -B "$build" -DCMAKE_C_COMPILER=clang -DCOMPACTD_FUZZ=ON \
        -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
    exec cmake --build "$build" --target fuzz_request fuzz_http fuzz_json_read fuzz_tokenizer \
        fuzz_media fuzz_upstream -j "$(nproc)"
fi

# Each target's corpus, inputs in the deep pass's run and in the default
# pass's, longest input and options of its own. The deep counts are the
# campaigns the suite was tuned on; the default ones take seconds, so that
# every target still meets new inputs in the everyday run.
dict=
case "$what" in
fuzz_request) corpus=corpus runs=150000 quick_runs=3000 max_len=16384 ;;
fuzz_http) corpus=corpus_http runs=150000 quick_runs=20000 max_len=16384 ;;
fuzz_json_read) corpus=corpus_json_read runs=200000 quick_runs=10000 max_len=8192 dict=json.dict ;;
fuzz_tokenizer) corpus=corpus_tokenizer runs=20000 quick_runs=300 max_len=4096 ;;
fuzz_media) corpus=corpus_media runs=150000 quick_runs=10000 max_len=8192 ;;
fuzz_upstream) corpus=corpus_upstream runs=25000 quick_runs=2000 max_len=16384 ;;
*) echo "run_fuzz.sh: no target $what" >&2; exit 2 ;;
esac
case "$budget" in
deep) ;;
default) runs=$quick_runs ;;
*) echo "run_fuzz.sh: budget is deep or nothing, not $budget" >&2; exit 2 ;;
esac
runs=${FUZZ_RUNS:-$runs}
binary="$build/tests/fuzz/$what"
[ -x "$binary" ] || { echo "run_fuzz.sh: $binary is not built (the fuzz_build test builds it)" >&2; exit 1; }

if [ -n "${FUZZ_WORK:-}" ]; then
    work=$FUZZ_WORK
    mkdir -p "$work"
else
    work=$(mktemp -d "${TMPDIR:-/tmp}/compactd-$what.XXXXXX")
    trap 'rm -rf "$work"' EXIT INT TERM
fi
mkdir -p "$work/corpus"
cp "$src/tests/fuzz/$corpus"/* "$work/corpus/"
options=
[ -n "$dict" ] && options="-dict=$src/tests/fuzz/$dict"
echo "fuzz: running $what (seed $seed, $runs runs, at most ${seconds}s) over $(ls "$work/corpus" | wc -l) inputs"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# libFuzzer exits 77 on a crash by default, which ctest takes for this
# test's skip code: every finding must be a failure.
# shellcheck disable=SC2086
"$binary" -seed="$seed" -runs="$runs" -max_total_time="$seconds" -timeout=20 \
    -rss_limit_mb=2048 -error_exitcode=1 -timeout_exitcode=1 -max_len="$max_len" \
    -print_final_stats=1 -artifact_prefix="$build/$what-" $options "$work/corpus"
