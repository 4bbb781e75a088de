#!/bin/sh
# Runs the MCP tests with the official MCP TypeScript SDK client pinned in
# package-lock.json (npm ci into tests/mcp/node_modules unless the locked
# version is already there) against a real compactd and redis-server.
# Usage: tests/mcp/run.sh --install          the npm ci alone
#        tests/mcp/run.sh [<test file>...]   those suites (default: all)
#        (COMPACTD_BIN: the compactd to test)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
. "$here/../npm_locked.sh"
npm_locked @modelcontextprotocol/sdk
[ "${1:-}" = --install ] && exit 0
[ $# -gt 0 ] || set -- mcp.test.mjs session_mcp.test.mjs large_spills.test.mjs paging.test.mjs
exec node --test --test-concurrency=1 "$@"
