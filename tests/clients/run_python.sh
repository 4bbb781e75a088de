#!/bin/sh
# Runs the Python client's tests (clients/python/test) on Debian's python3:
# the client (blocking and asyncio) against a real compactd and redis-server, its types under
# mypy --strict (python3-mypy) and a typed program using every answer run for real, then the wheel built
# with python3 -m build, installed into a fresh venv, running the quick starts.
# Usage: tests/clients/run_python.sh   (COMPACTD_BIN: the compactd to test)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/../../clients/python/test"
if ! "${PYTHON3:-python3}" -c 'import mypy' 2>/dev/null; then
    echo "mypy is needed for the client's types (Debian: apt-get install -y python3-mypy)" >&2
    exit 1
fi
exec "${PYTHON3:-python3}" -m unittest -v test_client test_aio test_types test_package
