#!/bin/sh
# The one way every test suite (C, Python, node, shell) starts a Redis of its
# own: redis-server with the shipped docker/redis.conf (AOF on, appendfsync
# always), listening on 127.0.0.1:<port> only, its data and redis.log in
# <folder>, in the foreground. It replaces itself with redis-server (exec), so
# the pid the caller spawned is redis-server's, and the caller stops it by
# that pid. The caller picks a free port, makes and removes the folder, and
# waits until PING answers.
#   launch.sh [--cluster <node timeout ms>] <folder> <port> [redis-server option...]
# --cluster starts a cluster node (nodes.conf in <folder>). REDIS_SERVER
# names another redis-server binary.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
conf="$here/../../docker/redis.conf"
cluster=
if [ "${1:-}" = --cluster ]; then
    [ $# -ge 2 ] || { echo "launch.sh: --cluster needs the node timeout in ms" >&2; exit 2; }
    cluster=$2
    shift 2
fi
if [ $# -lt 2 ]; then
    echo "usage: launch.sh [--cluster <node timeout ms>] <folder> <port> [redis-server option...]" >&2
    exit 2
fi
dir=$1
port=$2
shift 2
[ -d "$dir" ] || { echo "launch.sh: no folder $dir" >&2; exit 2; }
if [ -n "$cluster" ]; then
    set -- --cluster-enabled yes --cluster-config-file nodes.conf \
        --cluster-node-timeout "$cluster" "$@"
fi
exec "${REDIS_SERVER:-redis-server}" "$conf" --port "$port" --bind 127.0.0.1 --dir "$dir" \
    --daemonize no --logfile "$dir/redis.log" "$@"
