#!/bin/sh
# Runs the chat-history tests: installs the pinned reference clients
# (package-lock.json) with npm ci unless they are there, then the Python
# driver, which starts redis-server and compactd and runs check.mjs.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    echo "run.sh: node and npm are needed (Debian: apt-get install -y nodejs npm)" >&2
    exit 1
fi
# The lockfile's versions, against what node_modules holds.
if ! node -e 'const l = require("./package-lock.json").packages;
              for (const [k, v] of Object.entries(l)) if (k && require("./" + k + "/package.json").version !== v.version) process.exit(1)' 2>/dev/null; then
    echo "run.sh: installing the pinned clients with npm ci" >&2
    npm ci --no-audit --no-fund --loglevel=error >&2
fi
# --install: only the install above (the suites' ctest fixture, so that two
# suites never run npm ci at once in this folder).
[ "${1:-}" = "--install" ] && exit 0
exec "${PYTHON3:-python3}" -m unittest -v "$@"
