#!/bin/sh
# Runs the MCP tests with the official MCP TypeScript SDK client pinned in
# package-lock.json (npm ci into tests/mcp/node_modules unless the locked
# version is already there) against a real compactd and redis-server.
# Usage: tests/mcp/run.sh   (COMPACTD_BIN: the compactd to test)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    echo "run.sh: node and npm are needed (Debian: apt-get install -y nodejs npm)" >&2
    exit 1
fi
locked=$(node -e 'const l = require("./package-lock.json");
                  process.stdout.write(l.packages["node_modules/@modelcontextprotocol/sdk"].version)')
installed=$(node -e 'try { process.stdout.write(require("./node_modules/@modelcontextprotocol/sdk/package.json").version) }
                     catch (e) { }')
if [ "$installed" != "$locked" ]; then
    echo "run.sh: installing @modelcontextprotocol/sdk $locked with npm ci" >&2
    npm ci --no-audit --no-fund --loglevel=error >&2
fi
exec node --test --test-concurrency=1 mcp.test.mjs
