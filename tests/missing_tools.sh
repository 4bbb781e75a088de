# Sourced by the tests that need tools an ordinary build does not (fuzz,
# container, compose): the suite's one rule for a missing tool. Under CI
# (CI set), which installs everything, the test fails; elsewhere it exits 77,
# which ctest reports as Skipped (SKIP_RETURN_CODE 77) and lists among the
# tests that did not run, so a missing tool is never a silent pass.
#   missing_tools_verdict <test> <install hint> [<what is missing>...]
# Returns when nothing is missing; otherwise exits 1 or 77.
missing_tools_verdict() {
    verdict_test=$1
    verdict_hint=$2
    shift 2
    [ "$#" -eq 0 ] && return 0
    if [ -n "${CI:-}" ]; then
        echo "FAIL: CI is set but the $verdict_test test lacks: $* ($verdict_hint)"
        exit 1
    fi
    echo "SKIP: the $verdict_test test needs: $* ($verdict_hint)"
    exit 77
}
