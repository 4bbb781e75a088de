#!/bin/sh
# Runs the inspector page's tests in Debian's chromium (/usr/bin/chromium,
# never a downloaded browser) through puppeteer-core pinned in
# package-lock.json (npm ci into tests/ui/node_modules unless the locked
# version is already there), against a real compactd and redis-server.
# Usage: tests/ui/run.sh   (COMPACTD_BIN: the compactd to test;
# UI_TEST_OUTPUT: where the screenshots go)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
if [ ! -x "${CHROMIUM_BIN:-/usr/bin/chromium}" ]; then
    echo "chromium is needed (Debian: apt-get install -y chromium)" >&2
    exit 1
fi
. "$here/../npm_locked.sh"
npm_locked puppeteer-core
exec node --test --test-concurrency=1 inspector.test.mjs scale.test.mjs
