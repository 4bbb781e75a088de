#!/usr/bin/env bash
# Compose quick-start test: README.md's podman commands for
# docker/compose.yaml, run as written, on podman-compose without a Docker
# engine and without a registry.
#
#   1. The commands are read from README.md: the fenced block whose info
#      string is `sh compose podman` (an `up`, a `down`, a `down -v` line),
#      not copied here. Each line runs by bash from the repository root, in
#      the environment a user sets: COMPOSE_PROJECT_NAME (a project of this
#      run's own), COMPACTD_PORT (a free loopback port), COMPACTD_NPM_CA (this
#      machine's own CAs, /usr/local/share/ca-certificates, where npm trusts
#      a CA bundle of its own: a TLS-intercepting proxy), and the image
#      names COMPACTD_IMAGE and COMPACTD_REDIS_IMAGE (test images).
#   2. `up` with a planted bad build argument (COMPACTD_NPM_CA holding no
#      certificate) must exit non-zero, say why, and start nothing.
#   3. `up`: exits 0 only once Redis and compactd are healthy; then /readyz
#      answers 200 at once, Redis has the limits the compose file gives it
#      (maxclients + 32 = nofile), and a compaction's spill reads back byte
#      for byte.
#   4. `down`: no container and no network of the project is left (`podman
#      network ls`), the spills' volume stays; `up` again reads the spill
#      back; `down -v`: nothing of the project is left.
#
# Exit status: 0 all passed, 1 something failed, 77 skipped where the
# compose cluster test skips (a tool missing, or not root) unless CI is set.
#
# This kind of machine (see tests/container and tests/compose/
# compose_cluster_test.sh for why): podman build with BUILDAH_ISOLATION=chroot,
# runc named in a containers.conf given by CONTAINERS_CONF, with the CNI
# backend (dnsname resolves the service names). That file sets no ulimits:
# the compose file's must be enough.

set -u

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
TEST_NAME=compose_readme
COMPOSE_FILE=docker/compose.yaml
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
missing_tools_verdict "compose readme" "apt-get install buildah podman podman-compose runc \
containernetworking-plugins golang-github-containernetworking-plugin-dnsname debootstrap" \
  "${missing[@]}"
for tool in curl "$PYTHON3"; do
  command -v "$tool" >/dev/null 2>&1 || fail "missing tool: $tool"
done
[ "$failed" -eq 0 ] || finish

WORK=$(mktemp -d /var/tmp/compactd-compose-readme.XXXXXX)
PROJECT="compactd-cr-$$-$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')"
NETWORK="${PROJECT}_default"

leftovers() {
  podman ps -a -q --filter "label=io.podman.compose.project=$1" 2>/dev/null
  podman network ls --format '{{ .Name }}' 2>/dev/null | grep -x "${1}_default"
  [ "${2:-}" = volumes ] && podman volume ls -q --filter "label=io.podman.compose.project=$1" 2>/dev/null
  return 0
}

# Removes everything of project $1, whatever state it is in.
sweep() {
  local project=$1 ids
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

# Projects of earlier runs whose process is gone (a timeout's SIGKILL).
sweep_stale() {
  local p pid
  for p in $( (podman ps -a --format '{{ index .Labels "io.podman.compose.project" }}'
    podman volume ls --format '{{ index .Labels "io.podman.compose.project" }}'
    podman network ls --format '{{ .Name }}' | sed -n 's/_default$//p') 2>/dev/null | sort -u); do
    [[ "$p" =~ ^compactd-cr-([0-9]+)-[0-9a-f]{6}$ ]] || continue
    pid=${BASH_REMATCH[1]}
    [ "$pid" != $$ ] && kill -0 "$pid" 2>/dev/null && continue
    note "removing project $p, left by an earlier run"
    sweep "$p"
  done
}

cleanup() {
  sweep "$PROJECT"
  remove_work
}
trap cleanup EXIT
trap 'exit 130' INT TERM

t0=$(now)
sweep_stale

# ---- The README's commands ----

if "$PYTHON3" - "$ROOT/README.md" "$COMPOSE_FILE" >"$WORK/commands.txt" 2>"$WORK/commands.err" <<'EOF'; then
import re, sys
path, compose_file = sys.argv[1], sys.argv[2]
lines = open(path, encoding="utf-8").read().split("\n")
blocks, i = [], 0
while i < len(lines):
    m = re.match(r"^```(.*)$", lines[i])
    if m and m.group(1).split()[:3] == ["sh", "compose", "podman"]:
        body, i = [], i + 1
        while lines[i] != "```":
            body.append(lines[i]); i += 1
        blocks.append(body)
    i += 1
if len(blocks) != 1:
    sys.exit("README.md has %d `sh compose podman` blocks, not one" % len(blocks))
cmds = [l for l in blocks[0] if l.strip() and not l.lstrip().startswith("#")]
def kind(c):
    words = c.split("#")[0].split()
    if compose_file not in words:
        sys.exit("a command of the block is not about %s: %s" % (compose_file, c))
    if words[-1] == "up": return "up"
    if words[-1] == "down": return "down"
    if words[-2:] == ["down", "-v"]: return "down-v"
    sys.exit("neither up, down nor down -v: %s" % c)
kinds = [kind(c) for c in cmds]
if kinds != ["up", "down", "down-v"]:
    sys.exit("the block's commands are %s, not up, down, down -v" % kinds)
for k, c in zip(kinds, cmds):
    print("%s\t%s" % (k, c))
EOF
  pass "README.md's \`sh compose podman\` block: up, down, down -v of $COMPOSE_FILE"
  sed 's/^[^\t]*\t/  $ /' "$WORK/commands.txt"
else
  fail "the README's compose commands"
  sed 's/^/  /' "$WORK/commands.err"
  finish
fi
UP_CMD=$(awk -F'\t' '$1 == "up" { print $2 }' "$WORK/commands.txt")
DOWN_CMD=$(awk -F'\t' '$1 == "down" { print $2 }' "$WORK/commands.txt")
DOWN_V_CMD=$(awk -F'\t' '$1 == "down-v" { print $2 }' "$WORK/commands.txt")

# Runs one of them as written, from the repository root; output in $WORK/$1.log.
run_cmd() {
  local name=$1 cmd=$2
  (cd "$ROOT" && bash -c "$cmd") >"$WORK/$name.log" 2>&1
}

# The limits the compose file gives Redis and the maxclients of redis.conf
# must agree: maxclients plus the 32 descriptors Redis keeps = nofile.
if "$PYTHON3" - "$ROOT/$COMPOSE_FILE" "$ROOT/docker/redis.conf" >"$WORK/limits.txt" 2>&1 <<'EOF'; then
import re, sys
import yaml
services = yaml.safe_load(open(sys.argv[1]))["services"]
conf = open(sys.argv[2]).read()
m = re.search(r"^maxclients\s+(\d+)\s*$", conf, re.M)
problems = []
if not m:
    problems.append("redis.conf sets no maxclients")
for name in ("redis", "compactd"):
    nofile = ((services[name].get("ulimits") or {}).get("nofile")) or {}
    if not isinstance(nofile, dict) or nofile.get("soft") != nofile.get("hard") or not nofile.get("soft"):
        problems.append("%s: nofile %r is not one soft = hard limit" % (name, nofile))
    if not (services[name].get("ulimits") or {}).get("nproc"):
        problems.append("%s sets no nproc limit" % name)
nofile = ((services["redis"].get("ulimits") or {}).get("nofile") or {}).get("soft")
if m and nofile and int(m.group(1)) + 32 != int(nofile):
    problems.append("maxclients %s + 32 != redis nofile %s" % (m.group(1), nofile))
print("\n".join(problems) if problems else "nofile %s, maxclients %s" % (nofile, m.group(1)))
sys.exit(1 if problems else 0)
EOF
  pass "$COMPOSE_FILE's limits and redis.conf's maxclients agree ($(cat "$WORK/limits.txt"))"
else
  fail "limits"
  sed 's/^/  /' "$WORK/limits.txt"
fi

# ---- This machine's podman ----

ensure_base_image || finish
cat >"$WORK/containers.conf" <<EOF
[engine]
runtime = "runc"

[network]
network_backend = "cni"
EOF
export CONTAINERS_CONF="$WORK/containers.conf" BUILDAH_ISOLATION=chroot

export COMPOSE_PROJECT_NAME="$PROJECT"
export COMPACTD_IMAGE=localhost/compactd-compose-test:latest
export COMPACTD_REDIS_IMAGE=localhost/compactd-redis-compose-test:latest
PORT=$(free_port)
export COMPACTD_PORT="$PORT"
BASE_URL="http://127.0.0.1:$PORT"
# As README.md says: the CAs this machine added (the proxy's), where npm
# trusts a bundle of its own.
ca_files=()
npm_cafile=$(npm config get cafile 2>/dev/null || true)
if [ -n "$npm_cafile" ] && [ "$npm_cafile" != null ]; then
  for f in /usr/local/share/ca-certificates/*.crt; do
    [ -f "$f" ] && ca_files+=("$f")
  done
fi
if [ "${#ca_files[@]}" -gt 0 ]; then
  COMPACTD_NPM_CA=$(cat "${ca_files[@]}")
  export COMPACTD_NPM_CA
  note "COMPACTD_NPM_CA: ${ca_files[*]}"
else
  unset COMPACTD_NPM_CA
fi

show_errors() {
  grep -v -e systemd -e '^Setting up' -e '^Get:' -e '^Unpacking' -e '^Selecting' -e '^Preparing' "$1" >"$1.short"
  show_log "$1.short" "${2:-25}"
}

# ---- A build that fails ----

t1=$(now)
if COMPACTD_NPM_CA="not a certificate" run_cmd up-bad "$UP_CMD"; then
  fail "up with COMPACTD_NPM_CA='not a certificate' exited 0"
  show_errors "$WORK/up-bad.log"
else
  rc=$?
  if grep -q "holds no PEM certificate" "$WORK/up-bad.log"; then
    pass "up with a planted bad build argument exits $rc and says why ($(($(now) - t1)) s)"
  else
    fail "up with a bad build argument exited $rc without naming it"
    show_errors "$WORK/up-bad.log"
  fi
fi
left=$(leftovers "$PROJECT" volumes)
if [ -z "$left" ]; then
  pass "the failed build started nothing"
else
  fail "after the failed build the project has: $(echo "$left" | tr '\n' ' ')"
  sweep "$PROJECT"
fi

# ---- Up ----

t2=$(now)
if run_cmd up "$UP_CMD"; then
  up_s=$(($(now) - t2))
  pass "up exits 0 once healthy (${up_s} s, the images' builds included)"
else
  fail "up exited $?"
  show_errors "$WORK/up.log" 40
  finish
fi

code=$(curl -s -o "$WORK/readyz.out" -w '%{http_code}' --max-time 5 "$BASE_URL/readyz")
if [ "$code" = 200 ] && grep -q '"ready"' "$WORK/readyz.out"; then
  pass "GET $BASE_URL/readyz answers 200 as soon as up returns"
else
  fail "GET /readyz after up: $code $(head -c 300 "$WORK/readyz.out" 2>/dev/null)"
fi

got=$(podman exec "${PROJECT}_redis_1" sh -c 'ulimit -n; redis-cli config get maxclients | tail -n 1' 2>&1 | tr '\n' ' ')
if podman logs "${PROJECT}_redis_1" 2>&1 | grep -q -i "maxclients"; then
  fail "Redis lowered maxclients: $(podman logs "${PROJECT}_redis_1" 2>&1 | grep -i maxclients | head -n 1)"
elif [ "$got" = "4096 4064 " ]; then
  pass "Redis runs with 4096 open files and maxclients 4064, no warning"
else
  fail "Redis's open files and maxclients: $got"
fi

# The README's first request's build.log: 80 bytes, protected, against a
# budget of 60, must be spilled; its href reads it back.
TEXT='FAILED test_parse: expected 3, got 4 (src/a.c:42); 211 passed, 1 failed in 3.2 s'
printf '%s' "$TEXT" >"$WORK/text.bin"
"$PYTHON3" -c 'import json, sys
print(json.dumps({"budget": 60, "units": [{"key": "build.log", "class": "protected", "text": open(sys.argv[1]).read()}]}))' \
  "$WORK/text.bin" >"$WORK/compact.json"
code=$(curl -s -o "$WORK/compact.out" -w '%{http_code}' --max-time 10 \
  -H 'Content-Type: application/json' --data-binary "@$WORK/compact.json" \
  "$BASE_URL/v1/sessions/compose-readme/compact")
href=$("$PYTHON3" -c 'import json, sys
reply = json.load(open(sys.argv[1]))
spilled = [u for u in reply.get("externalized", []) if u.get("key") == "build.log"]
print(spilled[0]["href"] if len(spilled) == 1 else "")' "$WORK/compact.out" 2>/dev/null)
if [ "$code" = 200 ] && [ -n "$href" ]; then
  pass "a compaction spills build.log: $href"
else
  fail "POST /v1/sessions/compose-readme/compact: $code $(head -c 300 "$WORK/compact.out" 2>/dev/null)"
fi

# read_back NAME: the spill through $href, byte for byte.
read_back() {
  local code
  [ -n "$href" ] || { fail "$1: no spill to read"; return; }
  code=$(curl -s -o "$WORK/spill.out" -w '%{http_code}' --max-time 10 "$BASE_URL$href")
  if [ "$code" = 200 ] && "$PYTHON3" -c 'import json, sys
got = json.load(open(sys.argv[1])).get("text", "").encode("utf-8")
sys.exit(0 if got == open(sys.argv[2], "rb").read() else 1)' "$WORK/spill.out" "$WORK/text.bin"; then
    pass "$1: GET $href returns the text byte for byte"
  else
    fail "$1: GET $href: $code $(head -c 300 "$WORK/spill.out" 2>/dev/null)"
  fi
}
read_back "after up"

# ---- Down, up again, down -v ----

t3=$(now)
if run_cmd down "$DOWN_CMD"; then
  pass "down exits 0 ($(($(now) - t3)) s)"
else
  fail "down exited $?"
  show_errors "$WORK/down.log"
fi
left=$(leftovers "$PROJECT")
vols=$(podman volume ls -q --filter "label=io.podman.compose.project=$PROJECT" 2>/dev/null)
if [ -z "$left" ] && [ "$vols" = "${PROJECT}_redis-data" ]; then
  pass "after down: no container, no network in podman network ls; the volume ${PROJECT}_redis-data stays"
else
  fail "after down: left $(echo "$left" | tr '\n' ' '), volumes $(echo "$vols" | tr '\n' ' ')"
fi

t4=$(now)
if run_cmd up-again "$UP_CMD"; then
  pass "up again exits 0 once healthy ($(($(now) - t4)) s)"
  read_back "after down and up again"
else
  fail "up again exited $?"
  show_errors "$WORK/up-again.log" 40
fi

t5=$(now)
if run_cmd down-v "$DOWN_V_CMD"; then
  pass "down -v exits 0 ($(($(now) - t5)) s)"
else
  fail "down -v exited $?"
  show_errors "$WORK/down-v.log"
fi
left=$(leftovers "$PROJECT" volumes)
if [ -z "$left" ]; then
  pass "after down -v nothing of project $PROJECT is left (containers, network, volume)"
else
  fail "after down -v: left $(echo "$left" | tr '\n' ' ')"
fi

note "timings: total $(($(now) - t0)) s"
finish
