#!/bin/sh
# Runs the proxy suites: installs the pinned SDKs (package-lock.json) with
# npm ci unless they are there, then node's test runner on the files named.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
. ../npm_locked.sh
npm_locked openai
[ "${1:-}" = "--install" ] && exit 0
exec node --test "$@"
