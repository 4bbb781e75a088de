#!/bin/sh
# Compares compactd's counts with the reference tokenizers' on the generated
# corpus (the npm_ci.sh fixture installed them); deep: js-tiktoken on the
# runs and the long pieces too.
#   exactness.sh <source root> <count_texts binary> <ranks folder> [deep]
set -eu
exec node "$1/tests/unit/service/tokenizer/exactness.mjs" "$2" "$3" "$1" ${4:+"$4"}
