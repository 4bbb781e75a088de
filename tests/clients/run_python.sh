#!/bin/sh
# Runs the Python client's tests (clients/python/test) on Debian's python3:
# the client (blocking and asyncio) against a real compactd and redis-server, then the wheel built
# with python3 -m build, installed into a fresh venv, running the quick starts.
# Usage: tests/clients/run_python.sh   (COMPACTD_BIN: the compactd to test)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/../../clients/python/test"
exec "${PYTHON3:-python3}" -m unittest -v test_client test_aio test_package
