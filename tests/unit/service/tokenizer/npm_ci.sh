#!/bin/sh
# Installs the pinned reference tokenizers into tests/tokenizer/node_modules
# (npm ci), unless the lockfile is already installed. A ctest fixture runs it
# once before the tests that need them.
#   npm_ci.sh <source root>
set -eu
here=$1/tests/unit/service/tokenizer
if [ -f "$here/node_modules/.package-lock.json" ] &&
   [ "$here/node_modules/.package-lock.json" -nt "$here/package-lock.json" ]; then
    echo "tokenizer references: installed"
    exit 0
fi
cd "$here"
exec npm ci --ignore-scripts --no-audit --no-fund
