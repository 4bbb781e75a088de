#!/bin/sh
# Installs the pinned reference tokenizers (npm ci, first run only) and
# compares compactd's counts with theirs on the generated corpus.
#   exactness.sh <source root> <count_texts binary> <ranks folder>
set -eu
here=$1/tests/tokenizer
if [ ! -f "$here/node_modules/.package-lock.json" ] ||
   [ "$here/package-lock.json" -nt "$here/node_modules/.package-lock.json" ]; then
    (cd "$here" && npm ci --ignore-scripts --no-audit --no-fund >&2)
fi
exec node "$here/exactness.mjs" "$2" "$3" "$1"
