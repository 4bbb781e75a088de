#!/usr/bin/env bash
# Compose cluster test: docker/compose.cluster.yaml as a user starts it, under
# podman-compose, without a Docker engine and without a registry.
#
#   1. The images the compose file builds, built with buildah from the same
#      Dockerfiles (docker/Dockerfile, docker/Dockerfile.redis) on the
#      debian:bookworm-slim base of tests/container (images.sh), under the
#      names the test passes as COMPACTD_IMAGE and COMPACTD_REDIS_IMAGE. The
#      compactd image is the container test's, so after it only the layer
#      cache is consulted.
#   2. podman-compose -p <unique> -f docker/compose.cluster.yaml up -d
#      --no-build, compactd published on two free loopback ports
#      (COMPACTD_PORT_1, COMPACTD_PORT_2); then waits for cluster-init to
#      exit 0 and for both replicas' /readyz.
#   3. compose_failover.py: each replica reads back the other's spills byte
#      for byte; under load through both, a master is SIGKILLed (its replica
#      stalled just before), its replica promoted, the old master restarted;
#      every spill answered with a 200 is read back: acknowledged, refused
#      (503) and lost are printed, and lost must be 0.
#   4. podman-compose down -v, then the project's network (podman-compose
#      1.0.3 leaves it); anything of the project still there fails the test.
#      The same teardown runs on any exit.
#
# Exit status: 0 all passed, 1 something failed, 77 skipped (a tool missing,
# or not root) unless CI is set, where that fails.
#
# What it takes on this kind of machine (see also tests/container's header):
# - Runtime: runc. crun, podman's default, fails here ("cgroups in hybrid
#   mode not supported"). A containers.conf in the test's folder, named by
#   CONTAINERS_CONF, sets it, and sets ulimits no higher than this process's
#   hard limits (podman's defaults are higher: "setrlimit RLIMIT_NOFILE:
#   Operation not permitted"). Nothing in /etc is changed.
# - DNS between services: podman 4.3's CNI backend (named in that file too,
#   so that an installed netavark is not picked instead) resolves container
#   names only with the dnsname plugin
#   (golang-github-containernetworking-plugin-dnsname).
# - podman-compose 1.0.3 ignores depends_on conditions and starts every
#   container at once: cluster-init waits for the nodes itself, and compactd
#   answers /readyz 503 until the cluster serves every slot. Health checks
#   need systemd timers; without systemd podman logs an error and runs the
#   container without them.
# - Network: the test talks to compactd on 127.0.0.1 only, and to Redis only
#   through `podman exec ... redis-cli` inside the project's own network.

set -u

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
TEST_NAME=compose_cluster
COMPOSE_FILE=docker/compose.cluster.yaml
COMPACTD_TEST_IMAGE=localhost/compactd-test:latest
REDIS_TEST_IMAGE=localhost/compactd-redis-test:latest
# shellcheck source=tests/container/images.sh
. "$ROOT/tests/container/images.sh"

# ---- Tools ----

missing=()
for tool in buildah podman podman-compose runc debootstrap; do
  command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
for plugin in /usr/lib/cni/bridge /usr/lib/cni/dnsname; do
  [ -x "$plugin" ] || missing+=("$plugin")
done
if [ "$EUID" -ne 0 ]; then
  missing+=("root (rootless podman is not set up by this test)")
fi
# shellcheck source=tests/missing_tools.sh
. "$ROOT/tests/missing_tools.sh"
missing_tools_verdict "compose cluster" "apt-get install buildah podman podman-compose runc \
containernetworking-plugins golang-github-containernetworking-plugin-dnsname debootstrap" \
  "${missing[@]}"
for tool in curl "$PYTHON3" tar; do
  command -v "$tool" >/dev/null 2>&1 || fail "missing tool: $tool"
done
[ "$failed" -eq 0 ] || finish

WORK=$(mktemp -d /var/tmp/compactd-compose.XXXXXX)
PROJECT="compactd-cc-$$-$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')"
UP=no

# Docker Compose v2's and podman-compose's name for the default network.
NETWORK="${PROJECT}_default"

compose() {
  (cd "$ROOT" && podman-compose -p "$PROJECT" -f "$COMPOSE_FILE" "$@")
}

# What of the project is left: containers, volumes, its network.
leftovers() {
  podman ps -a -q --filter "label=io.podman.compose.project=$PROJECT" 2>/dev/null
  podman volume ls -q --filter "label=io.podman.compose.project=$PROJECT" 2>/dev/null
  podman network exists "$NETWORK" 2>/dev/null && echo "$NETWORK"
}

# Removes everything of project $1 (this run's by default), whatever state
# it is in.
sweep() {
  local project=${1:-$PROJECT} ids
  ids=$(podman ps -a -q --filter "label=io.podman.compose.project=$project" 2>/dev/null)
  # shellcheck disable=SC2086
  [ -n "$ids" ] && podman rm -f -v -t 0 $ids >/dev/null 2>&1
  ids=$(podman volume ls -q --filter "label=io.podman.compose.project=$project" 2>/dev/null)
  # shellcheck disable=SC2086
  [ -n "$ids" ] && podman volume rm -f $ids >/dev/null 2>&1
  podman network exists "${project}_default" 2>/dev/null &&
    podman network rm -f "${project}_default" >/dev/null 2>&1
  return 0
}

# Projects of earlier runs whose process is gone (killed without its
# cleanup, as by a timeout's SIGKILL): their names carry that process's id.
sweep_stale() {
  local p pid
  for p in $( (podman ps -a --format '{{ index .Labels "io.podman.compose.project" }}'
    podman volume ls --format '{{ index .Labels "io.podman.compose.project" }}'
    podman network ls --format '{{ .Name }}' | sed -n 's/_default$//p') 2>/dev/null | sort -u); do
    [[ "$p" =~ ^compactd-cc-([0-9]+)-[0-9a-f]{6}$ ]] || continue
    pid=${BASH_REMATCH[1]}
    [ "$pid" != $$ ] && kill -0 "$pid" 2>/dev/null && continue
    note "removing project $p, left by an earlier run"
    sweep "$p"
  done
}

cleanup() {
  if [ "$UP" = yes ]; then
    compose down -v -t 5 >>"$WORK/down.log" 2>&1
    sweep
  fi
  remove_work
}
trap cleanup EXIT
trap 'exit 130' INT TERM

t0=$(now)
sweep_stale

# ---- Images ----

ensure_base_image || finish
t1=$(now)
build_image docker/Dockerfile "$COMPACTD_TEST_IMAGE" || finish
build_image docker/Dockerfile.redis "$REDIS_TEST_IMAGE" || finish
note "images: $(($(now) - t1)) s"

# The services build exactly these files, and take their image names from
# the variables set below.
if "$PYTHON3" - "$ROOT/$COMPOSE_FILE" >"$WORK/services.txt" 2>&1 <<'EOF'; then
import sys
import yaml
services = yaml.safe_load(open(sys.argv[1]))["services"]
want = {"compactd-1": ("docker/Dockerfile", "COMPACTD_IMAGE"),
        "compactd-2": ("docker/Dockerfile", "COMPACTD_IMAGE"),
        "cluster-init": ("docker/Dockerfile.redis", "COMPACTD_REDIS_IMAGE")}
want.update({"redis-%d" % n: ("docker/Dockerfile.redis", "COMPACTD_REDIS_IMAGE")
             for n in range(1, 7)})
problems = []
if set(services) != set(want):
    problems.append("services %s" % sorted(services))
for name, (dockerfile, var) in want.items():
    s = services.get(name) or {}
    build = s.get("build") or {}
    if build.get("context") != ".." or build.get("dockerfile") != dockerfile:
        problems.append("%s builds %r" % (name, build))
    if "${%s:-" % var not in str(s.get("image")):
        problems.append("%s image %r is not set by %s" % (name, s.get("image"), var))
print("\n".join(problems))
sys.exit(1 if problems else 0)
EOF
  pass "$COMPOSE_FILE: compactd builds docker/Dockerfile, the Redis nodes docker/Dockerfile.redis"
else
  fail "$COMPOSE_FILE does not build the images this test built"
  sed 's/^/  /' "$WORK/services.txt"
fi

# ---- Runtime settings (this test's podman only, after the builds) ----

# buildah reads the same file: the builds run before it is named.
hard_nofile=$(ulimit -Hn)
[ "$hard_nofile" = unlimited ] && hard_nofile=65536
[ "$hard_nofile" -gt 65536 ] && hard_nofile=65536
# Counted per user id across the machine; the images' users run nothing else.
hard_nproc=$(ulimit -Hu)
[ "$hard_nproc" = unlimited ] && hard_nproc=4096
[ "$hard_nproc" -gt 4096 ] && hard_nproc=4096
cat >"$WORK/containers.conf" <<EOF
[containers]
default_ulimits = ["nofile=$hard_nofile:$hard_nofile", "nproc=$hard_nproc:$hard_nproc"]

[engine]
runtime = "runc"

[network]
network_backend = "cni"
EOF
export CONTAINERS_CONF="$WORK/containers.conf"

# ---- Up ----

PORT_1=$(free_port)
PORT_2=$(free_port)
while [ "$PORT_2" = "$PORT_1" ]; do PORT_2=$(free_port); done
export COMPACTD_IMAGE="$COMPACTD_TEST_IMAGE" COMPACTD_REDIS_IMAGE="$REDIS_TEST_IMAGE"
export COMPACTD_PORT_1="$PORT_1" COMPACTD_PORT_2="$PORT_2"

t2=$(now)
UP=yes
if compose up -d --no-build >"$WORK/up.log" 2>&1; then
  pass "podman-compose -p $PROJECT -f $COMPOSE_FILE up -d ($(($(now) - t2)) s)"
else
  fail "podman-compose up"
  grep -v systemd "$WORK/up.log" >"$WORK/up-errors.log"
  show_log "$WORK/up-errors.log" 40
  finish
fi

container() { echo "${PROJECT}_$1_1"; }

# Every service is running (cluster-init may already have exited).
expected=(redis-1 redis-2 redis-3 redis-4 redis-5 redis-6 cluster-init compactd-1 compactd-2)
absent=()
for s in "${expected[@]}"; do
  podman container exists "$(container "$s")" || absent+=("$s")
done
if [ "${#absent[@]}" -eq 0 ]; then
  pass "the project has its nine containers"
else
  fail "containers missing: ${absent[*]}"
  show_log "$WORK/up.log" 40
  finish
fi

# The published ports are on loopback only.
ports=$( (podman port "$(container compactd-1)"; podman port "$(container compactd-2)") 2>&1 | sort)
want_ports=$(printf '8080/tcp -> 127.0.0.1:%s\n8080/tcp -> 127.0.0.1:%s\n' "$PORT_1" "$PORT_2" | sort)
if [ "$ports" = "$want_ports" ]; then
  pass "compactd published on 127.0.0.1:$PORT_1 and 127.0.0.1:$PORT_2 only"
else
  fail "published ports: $(echo "$ports" | tr '\n' ' ')"
fi

state=""
for _ in $(seq 1 180); do
  state=$(podman inspect -f '{{.State.Status}} {{.State.ExitCode}}' "$(container cluster-init)" 2>&1)
  [ "${state%% *}" = exited ] && break
  sleep 1
done
podman logs "$(container cluster-init)" >"$WORK/cluster-init.log" 2>&1
if [ "$state" = "exited 0" ]; then
  pass "cluster-init joined the six nodes and exited 0 ($(($(now) - t2)) s after up)"
else
  fail "cluster-init: $state"
  show_log "$WORK/cluster-init.log"
  finish
fi

for port in "$PORT_1" "$PORT_2"; do
  code=000
  for _ in $(seq 1 120); do
    code=$(curl -s -o "$WORK/readyz.out" -w '%{http_code}' --max-time 2 "http://127.0.0.1:$port/readyz")
    [ "$code" = 200 ] && break
    sleep 0.5
  done
  if [ "$code" = 200 ]; then
    pass "GET http://127.0.0.1:$port/readyz answers 200 ($(($(now) - t2)) s after up)"
  else
    fail "GET http://127.0.0.1:$port/readyz: $code $(head -c 300 "$WORK/readyz.out" 2>/dev/null)"
  fi
done
if [ "$failed" -gt 0 ]; then
  for s in compactd-1 compactd-2; do
    podman logs "$(container "$s")" >"$WORK/$s.log" 2>&1
    show_log "$WORK/$s.log"
  done
  finish
fi

# ---- Spills across replicas, a master killed under load ----

t3=$(now)
PYTHONDONTWRITEBYTECODE=1 "$PYTHON3" "$ROOT/tests/compose/compose_failover.py" \
  "$PROJECT" "$PORT_1" "$PORT_2" 2>&1 | tee "$WORK/failover.log"
py_rc=${PIPESTATUS[0]}
passed=$((passed + $(grep -c '^PASS:' "$WORK/failover.log")))
failed=$((failed + $(grep -c '^FAIL:' "$WORK/failover.log")))
if [ "$py_rc" -ne 0 ] && ! grep -q '^FAIL:' "$WORK/failover.log"; then
  fail "compose_failover.py exited $py_rc"
fi
note "load and failover: $(($(now) - t3)) s"
if [ "$failed" -gt 0 ]; then
  for s in compactd-1 compactd-2; do
    podman logs "$(container "$s")" 2>&1 | grep -v '"level":"info"' >"$WORK/$s.log"
    show_log "$WORK/$s.log" 15
  done
fi

# ---- Down ----

t4=$(now)
if compose down -v -t 5 >"$WORK/down.log" 2>&1; then
  pass "podman-compose down -v ($(($(now) - t4)) s)"
else
  fail "podman-compose down -v"
  show_log "$WORK/down.log"
fi
# podman-compose 1.0.3 removes containers and volumes, not the network.
podman network exists "$NETWORK" 2>/dev/null && podman network rm "$NETWORK" >/dev/null 2>&1
left=$(leftovers)
if [ -z "$left" ]; then
  pass "nothing of project $PROJECT is left (containers, volumes, network)"
else
  fail "left behind: $(echo "$left" | tr '\n' ' ')"
fi
sweep
UP=no

note "timings: total $(($(now) - t0)) s"
finish
