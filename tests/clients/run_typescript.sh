#!/bin/sh
# Runs the TypeScript client's tests: installs clients/typescript's
# package-lock.json with npm ci unless node_modules holds exactly its
# versions, builds the package (types generated from openapi.yaml, tsc
# --strict), runs the node suites against a real compactd and redis-server,
# then holds every answer they recorded to openapi.yaml (exchanges.py).
# Usage: tests/clients/run_typescript.sh   (COMPACTD_BIN: the compactd to test)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
pkg="$here/../../clients/typescript"
cd "$pkg"
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    echo "node and npm are needed (Debian: apt-get install -y nodejs npm)" >&2
    exit 1
fi
if ! node -e 'const l = require("./package-lock.json").packages;
              for (const [k, v] of Object.entries(l)) if (k && require("./" + k + "/package.json").version !== v.version) process.exit(1)' 2>/dev/null; then
    echo "installing clients/typescript's locked packages with npm ci" >&2
    npm ci --no-audit --no-fund --loglevel=error >&2
fi
npm run --silent build
out=$(mktemp -d "${TMPDIR:-/tmp}/compactd-exchanges-XXXXXX")
trap 'rm -rf "$out"' EXIT
for suite in "$here/mock_provider.test.mjs" test/client.test.mjs test/langchain.test.mjs test/langchain_loop.test.mjs test/package.test.mjs; do
    COMPACTD_EXCHANGES_OUT="$out/$(basename "$suite").json" node --test --test-concurrency=1 "$suite"
done
"${PYTHON3:-python3}" "$here/exchanges.py" "$out"/client.test.mjs.json "$out"/langchain.test.mjs.json
