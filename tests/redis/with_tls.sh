#!/bin/sh
# Runs a store suite against a Redis that speaks TLS only: makes fresh test
# certificates (tls_certs.sh) in a temporary folder, runs the command with
# COMPACTD_TEST_TLS_DIR naming it (tests/unit/store/redis_proc.h then starts
# redis-server on its TLS port and connects over rediss://), and removes the
# folder.
#   with_tls.sh <command> [argument...]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d "${TMPDIR:-/tmp}/compactd-tls-XXXXXX")
trap 'rm -rf "$dir"' EXIT INT TERM
"$here/tls_certs.sh" "$dir"
status=0
COMPACTD_TEST_TLS_DIR=$dir "$@" || status=$?
exit $status
