#!/usr/bin/env bash
# Two scripts/run of one clone: the second refuses at once and leaves the
# first one's private Redis alone (it used to start its own on the same
# socket, fail, stop it, and Redis removed the socket the first one used).
#   run_twice_test.sh <source dir> <compactd binary>
set -uo pipefail
src=$1
bin=$2
. "$src/scripts/lib.sh"
tmp=$(mktemp -d)
port=$(free_port)
first=
cleanup() {
    [ -n "$first" ] && kill -TERM "$first" 2>/dev/null && wait "$first" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
passed=0 failed=0
check() { if eval "$2"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL: $1" >&2; fi; }

export COMPACTD_RUN_DIR="$tmp/run" COMPACTD_BIN="$bin"
unset COMPACTD_REDIS_URL
"$src/scripts/run" --listen "127.0.0.1:$port" 2>"$tmp/first.log" &
first=$!
for _ in $(seq 300); do
    curl -fs "http://127.0.0.1:$port/readyz" >/dev/null && break
    sleep 0.1
done
check "the first scripts/run is ready" 'curl -fs "http://127.0.0.1:$port/readyz" >/dev/null'

start=$(date +%s)
timeout 20 "$src/scripts/run" --listen "127.0.0.1:$port" 2>"$tmp/second.log"
status=$?
check "the second scripts/run refuses (exit $status)" '[ "$status" = 1 ]'
check "it refuses at once" '[ $(( $(date +%s) - start )) -lt 10 ]'
check "it says why" 'grep -q "another scripts/run of this clone is running" "$tmp/second.log"'

# The first one's Redis still answers: a compaction that spills is written.
body='{"budget":60,"units":[{"key":"fact","class":"protected","tokens":400,"text":"'$(printf 'x%.0s' $(seq 400))'"}]}'
code=$(curl -s -o "$tmp/compact.json" -w '%{http_code}' -H 'Content-Type: application/json' \
    -d "$body" "http://127.0.0.1:$port/v1/sessions/twice/compact")
check "the first one still spills to its Redis (HTTP $code)" '[ "$code" = 200 ] && grep -q "\"externalized\":\[{" "$tmp/compact.json"'
check "its Redis socket is still there" '[ -S "$COMPACTD_RUN_DIR/redis/redis.sock" ]'

# (A job in the background of a script ignores SIGINT: TERM, as a service
# manager would send.)
kill -TERM "$first"
wait "$first"
first=
check "the first one's Redis is stopped with it" '! pgrep -f "$COMPACTD_RUN_DIR/redis/redis.sock" >/dev/null'
echo "run_twice: $passed passed, $failed failed"
[ "$failed" = 0 ]
