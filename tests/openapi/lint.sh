#!/bin/sh
# Lints openapi.yaml with the Redocly CLI version pinned in package-lock.json.
# Usage: tests/openapi/lint.sh [repo-root]   (default: two levels above this script)
# Installs the linter into tests/openapi/node_modules with `npm ci` unless the
# locked version is already there. Fails on any lint error or warning.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=${1:-$(cd "$here/../.." && pwd)}
spec="$root/openapi.yaml"

if [ ! -f "$spec" ]; then
    echo "lint.sh: no OpenAPI document at $spec" >&2
    exit 1
fi
cd "$here"
. "$here/../npm_locked.sh"
npm_locked @redocly/cli

# No telemetry and no update check: the lint must not depend on the network.
REDOCLY_TELEMETRY=off
REDOCLY_SUPPRESS_UPDATE_NOTICE=true
export REDOCLY_TELEMETRY REDOCLY_SUPPRESS_UPDATE_NOTICE

out=$(mktemp)
trap 'rm -f "$out"' EXIT
status=0
./node_modules/.bin/redocly lint --config "$here/redocly.yaml" "$spec" >"$out" 2>&1 || status=$?
cat "$out"
if [ "$status" -ne 0 ]; then
    echo "lint.sh: redocly lint failed (exit $status)" >&2
    exit 1
fi
if grep -q 'You have [0-9][0-9]* warning' "$out"; then
    echo "lint.sh: redocly lint reported warnings" >&2
    exit 1
fi
echo "lint.sh: $spec is clean (@redocly/cli $locked)"
