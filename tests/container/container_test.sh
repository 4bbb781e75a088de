#!/usr/bin/env bash
# Container test: builds docker/Dockerfile unchanged with buildah and runs the
# image against a private Redis on loopback, without a Docker engine and
# without a registry.
#
#   1. debian:bookworm-slim: taken from local container storage when present,
#      else made here (debootstrap --variant=minbase from the Debian mirror
#      apt on this machine uses, trimmed like the official slim image) and
#      imported with `podman import`. The image stays in local storage, so
#      later runs skip this step.
#   2. buildah bud --isolation chroot --pull=never -f docker/Dockerfile.
#   3. buildah from + buildah run --isolation chroot --network host of the
#      image's entrypoint, against a redis-server started here with
#      docker/redis.conf on a free port; then /healthz, one compaction that
#      spills, the spill read back through the container byte for byte, and
#      an o200k_base token count from the rank files in the image.
#
# Exit status: 0 all passed, 1 something failed, 77 skipped (buildah, podman
# or debootstrap missing, or not root) unless CI is set, where that fails.
#
# What works on a machine without a Docker engine, and why (gotchas):
# - Isolation: chroot. The default (oci, through crun) fails on this kind of
#   sandboxed machine: "cgroups in hybrid mode not supported" (cgroup v1 with
#   an empty v2 mount), and `podman run` fails with "setrlimit RLIMIT_NOFILE:
#   Operation not permitted" (it raises the open-files limit above the hard
#   limit). chroot isolation needs no cgroups and creates no network
#   namespace, so RUN steps use the host's network and DNS, and
#   `buildah run --network host` serves on the host's loopback, where curl
#   here reaches it. It still runs the command as the image's USER.
# - Storage: podman's and buildah's default for root (overlay under
#   /var/lib/containers/storage) works here; where the kernel refuses overlay
#   mounts, set STORAGE_DRIVER=vfs in the environment (slower, more disk;
#   the storage must not hold images made with another driver).
#   Both tools share that storage, so `podman import` feeds `buildah bud`.
# - Naming: `podman import - debian:bookworm-slim` stores the image as
#   localhost/debian:bookworm-slim; with --pull=never, buildah resolves the
#   Dockerfile's short name "debian:bookworm-slim" to it.
# - Mirror: only the mirror apt already uses is reachable, so the base root is
#   bootstrapped from it and its sources point at it (read from
#   `apt-get indextargets`, which covers both sources.list formats). apt's
#   Check-Valid-Until / Check-Date / proxy settings of this machine are copied
#   too, for mirrors that serve frozen snapshots. The cached image is labelled
#   with a digest of those settings and made again when they change.
# - npm: the ranks stage runs `npm ci` against the registry. Where this
#   machine's npm trusts a CA of its own (`npm config get cafile`: a proxy
#   that intercepts TLS), that file is mounted into the build and named by
#   the Dockerfile's NPM_CAFILE build argument; the image does not keep it.
# - Image format: buildah writes OCI images by default, and OCI image configs
#   have no HEALTHCHECK (buildah warns and drops it): --format docker keeps it.
# - Signals: `buildah run` does not forward SIGTERM to the command (it kills
#   its chroot runtime, orphaning the command). The test signals compactd
#   itself, found by walking the process tree below `buildah run`, and gets
#   compactd's exit status back from `buildah run`.
# - Layer cache: --layers keeps the apt steps cached, so a cached run only
#   copies the tree and compiles. Superseded build layers stay in local
#   storage as untagged images; `buildah rmi --prune` clears them. A failed
#   RUN step leaves its working container behind unless --force-rm is given.

set -u

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
TEST_NAME=container
TEST_IMAGE=localhost/compactd-test:latest
# shellcheck source=tests/container/images.sh
. "$ROOT/tests/container/images.sh"

# ---- Tools ----

missing=()
for tool in buildah podman debootstrap; do
  command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
if [ "$EUID" -ne 0 ]; then
  missing+=("root (rootless buildah is not set up by this test)")
fi
# shellcheck source=tests/missing_tools.sh
. "$ROOT/tests/missing_tools.sh"
missing_tools_verdict container "apt-get install buildah podman debootstrap" "${missing[@]}"
for tool in curl redis-server redis-cli "$PYTHON3" tar; do
  command -v "$tool" >/dev/null 2>&1 || fail "missing tool: $tool"
done
[ "$failed" -eq 0 ] || finish

WORK=$(mktemp -d /var/tmp/compactd-container.XXXXXX)
CTR=""
RUN_PID=""
REDIS_PID=""
COMPACTD_PID=""


# The port on compactd's "listening on 127.0.0.1:<port> (...)" line of log,
# or nothing while it has not said.
listening_port() {
  sed -n 's/.*"msg":"listening on [^ ]*:\([0-9][0-9]*\) .*/\1/p' "$1" 2>/dev/null | head -n 1
}

# compactd's own pid: the process named compactd below `buildah run`.
find_compactd() {
  local pids=("$RUN_PID") next p
  for _ in 1 2 3 4 5 6; do
    next=()
    for p in "${pids[@]}"; do
      while read -r child; do next+=("$child"); done < <(ps -o pid= --ppid "$p" 2>/dev/null)
    done
    for p in "${next[@]}"; do
      if [ "$(cat "/proc/$p/comm" 2>/dev/null)" = compactd ]; then
        echo "$p"
        return 0
      fi
    done
    [ "${#next[@]}" -gt 0 ] || return 1
    pids=("${next[@]}")
  done
  return 1
}

cleanup() {
  if [ -z "$COMPACTD_PID" ] && [ -n "$RUN_PID" ]; then
    COMPACTD_PID=$(find_compactd)
  fi
  if [ -n "$COMPACTD_PID" ] && kill -0 "$COMPACTD_PID" 2>/dev/null; then
    kill -KILL "$COMPACTD_PID" 2>/dev/null
  fi
  if [ -n "$RUN_PID" ] && kill -0 "$RUN_PID" 2>/dev/null; then
    kill -TERM "$RUN_PID" 2>/dev/null
    wait "$RUN_PID" 2>/dev/null
  fi
  if [ -n "$REDIS_PID" ] && kill -0 "$REDIS_PID" 2>/dev/null; then
    kill -TERM "$REDIS_PID" 2>/dev/null
    wait "$REDIS_PID" 2>/dev/null
  fi
  [ -n "$CTR" ] && buildah rm "$CTR" >/dev/null 2>&1
  remove_work
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- Base image ----

t0=$(now)
ensure_base_image || finish

# ---- Build ----

build_image docker/Dockerfile "$TEST_IMAGE" || finish

# ---- Image configuration ----

buildah inspect --type image "$TEST_IMAGE" >"$WORK/inspect.json" 2>"$WORK/inspect.err"
if "$PYTHON3" - "$WORK/inspect.json" >"$WORK/config-check.txt" 2>&1 <<'EOF'; then
import json, sys
config = json.load(open(sys.argv[1]))["Docker"]["config"]
problems = []
user = config.get("User") or ""
if user.split(":")[0] in ("", "0", "root"):
    problems.append("runs as root (USER %r)" % user)
if "8080/tcp" not in (config.get("ExposedPorts") or {}):
    problems.append("8080/tcp not exposed")
if config.get("StopSignal") != "SIGTERM":
    problems.append("StopSignal is %r" % config.get("StopSignal"))
health = (config.get("Healthcheck") or {}).get("Test") or []
if not any("/healthz" in word for word in health):
    problems.append("no HEALTHCHECK on /healthz: %r" % health)
if "COMPACTD_LISTEN=0.0.0.0:8080" not in (config.get("Env") or []):
    problems.append("COMPACTD_LISTEN is not 0.0.0.0:8080")
if not config.get("Entrypoint"):
    problems.append("no ENTRYPOINT")
print("\n".join(problems) if problems else "user %s, health %s" % (user, " ".join(health)))
sys.exit(1 if problems else 0)
EOF
  pass "image config: non-root, EXPOSE 8080, STOPSIGNAL SIGTERM, HEALTHCHECK, listen 0.0.0.0:8080"
  note "$(cat "$WORK/config-check.txt")"
else
  fail "image config"
  sed 's/^/  /' "$WORK/config-check.txt" "$WORK/inspect.err"
fi
mapfile -t ENTRYPOINT < <("$PYTHON3" -c '
import json, sys
config = json.load(open(sys.argv[1]))["Docker"]["config"]
for word in (config.get("Entrypoint") or []) + (config.get("Cmd") or []):
    print(word)' "$WORK/inspect.json" 2>/dev/null)
[ "${#ENTRYPOINT[@]}" -gt 0 ] || ENTRYPOINT=(/usr/local/bin/compactd)

# ---- Run ----

CTR=$(buildah from --pull=never --name "compactd-test-$$" "$TEST_IMAGE" 2>"$WORK/from.log")
if [ -z "$CTR" ]; then
  fail "buildah from $TEST_IMAGE"
  show_log "$WORK/from.log"
  finish
fi

# The runtime stage carries shared libraries only, no toolchain.
dev=$(buildah run --isolation chroot "$CTR" -- sh -c \
  'command -v gcc cc cmake make; dpkg-query -W -f "\${Package}\n" | grep -e "-dev\$"; exit 0' \
  2>"$WORK/dev.err")
rc=$?
if [ "$rc" -eq 0 ] && [ -z "$dev" ]; then
  pass "runtime image has no compiler and no -dev packages"
else
  fail "runtime image carries build tools: $(echo "$dev" | tr '\n' ' ')(status $rc)"
  show_log "$WORK/dev.err"
fi

# A free port is free only until somebody binds it: the start counts once
# INFO names the process started here; one that exits first is started again
# on another port.
mkdir -p "$WORK/redis"
redis_ours() {
  redis-cli -p "$RPORT" info server 2>/dev/null | tr -d '\r' | grep -qx "process_id:$REDIS_PID"
}
for _ in $(seq 1 20); do
  RPORT=$(free_port)
  "$ROOT/tests/redis/launch.sh" "$WORK/redis" "$RPORT" &
  REDIS_PID=$!
  for _ in $(seq 1 100); do
    redis_ours && break
    kill -0 "$REDIS_PID" 2>/dev/null || break
    sleep 0.1
  done
  kill -0 "$REDIS_PID" 2>/dev/null && break
done
if redis_ours; then
  pass "redis-server with docker/redis.conf on 127.0.0.1:$RPORT"
else
  fail "redis-server with docker/redis.conf did not answer"
  show_log "$WORK/redis/redis.log"
  finish
fi

# compactd binds port 0, so the kernel picks a port nobody holds, and says
# which on its "listening on" line: no port is guessed free and then lost
# to another process before compactd binds it.
t2=$(now)
buildah run --isolation chroot --network host \
  --env "COMPACTD_LISTEN=127.0.0.1:0" \
  --env "COMPACTD_REDIS_URL=redis://127.0.0.1:$RPORT/0" \
  "$CTR" -- "${ENTRYPOINT[@]}" >"$WORK/compactd.log" 2>&1 &
RUN_PID=$!

code=000
PORT=
for _ in $(seq 1 100); do
  kill -0 "$RUN_PID" 2>/dev/null || break
  [ -n "$PORT" ] || PORT=$(listening_port "$WORK/compactd.log")
  if [ -n "$PORT" ]; then
    code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://127.0.0.1:$PORT/healthz")
    [ "$code" = 200 ] && break
  fi
  sleep 0.2
done
BASE_URL="http://127.0.0.1:$PORT"
if [ "$code" = 200 ]; then
  pass "GET /healthz through the container answers 200 ($(($(now) - t2)) s after start)"
else
  fail "GET /healthz through the container: $code"
  show_log "$WORK/compactd.log"
  finish
fi

COMPACTD_PID=$(find_compactd)
uid=$(awk '/^Uid:/ { print $2 }' "/proc/$COMPACTD_PID/status" 2>/dev/null)
if [ -n "$COMPACTD_PID" ] && [ -n "$uid" ] && [ "$uid" != 0 ]; then
  pass "compactd runs in the container as uid $uid"
else
  fail "compactd in the container: pid '${COMPACTD_PID}', uid '${uid}'"
fi

# The health check's own tool, inside the image, against the running server.
if buildah run --isolation chroot --network host "$CTR" -- \
  curl -fsS -o /dev/null --max-time 2 "$BASE_URL/healthz" >"$WORK/incurl.log" 2>&1; then
  pass "curl inside the image reaches /healthz"
else
  fail "curl inside the image reaches /healthz"
  show_log "$WORK/incurl.log"
fi

# One protected unit of 100 tokens against a budget of 60 must be spilled
# (its pointer costs 1 + 39 tokens). The text has quotes, backslashes,
# control characters and multi-byte UTF-8, so the read-back compares bytes.
"$PYTHON3" - "$WORK" <<'EOF'
import json, sys
text = 'tool state: "quoted" \\ back\\slash\ttab\nline two \u00e9\u4e2d\U0001f600 \u0001 end'
open(sys.argv[1] + "/text.bin", "wb").write(text.encode("utf-8"))
body = {"budget": 60,
        "units": [{"key": "k", "class": "protected", "tokens": 100, "text": text}]}
# Multi-byte characters go raw, control characters as \u escapes.
open(sys.argv[1] + "/compact.json", "wb").write(json.dumps(body, ensure_ascii=False).encode("utf-8"))
EOF
code=$(curl -s -o "$WORK/compact.out" -w '%{http_code}' --max-time 10 \
  -H 'Content-Type: application/json' --data-binary "@$WORK/compact.json" \
  "$BASE_URL/v1/sessions/ct/compact")
href=$("$PYTHON3" - "$WORK" <<'EOF' 2>"$WORK/href.err"
import hashlib, json, sys
work = sys.argv[1]
reply = json.load(open(work + "/compact.out"))
spilled = [u for u in reply.get("externalized", []) if u.get("key") == "k"]
if len(spilled) != 1:
    sys.exit("unit k not externalized: %s" % json.dumps(reply)[:400])
href = spilled[0].get("href", "")
digest = hashlib.sha256(open(work + "/text.bin", "rb").read()).hexdigest()
if not href.startswith("/v1/sessions/ct/spills/") or not href.endswith("sha256=" + digest):
    sys.exit("href %r does not name the text's sha256 %s" % (href, digest))
print(href)
EOF
)
if [ "$code" = 200 ] && [ -n "$href" ]; then
  pass "POST /v1/sessions/ct/compact spills unit k: $href"
else
  fail "POST /v1/sessions/ct/compact: status $code"
  sed 's/^/  /' "$WORK/href.err"
  head -c 600 "$WORK/compact.out" 2>/dev/null | sed 's/^/  | /'
  echo
fi

# The image counts o200k_base tokens from the rank files it carries.
code=$(curl -s -o "$WORK/tokens.out" -w '%{http_code}' --max-time 10 \
  -H 'Content-Type: application/json' \
  --data-binary '{"tokenizer": "o200k_base", "texts": ["hello world", "<|endoftext|>"]}' \
  "$BASE_URL/v1/tokens")
if [ "$code" = 200 ] && grep -q '"counts":\[2,7\]' "$WORK/tokens.out"; then
  pass "POST /v1/tokens counts o200k_base in the image"
else
  fail "POST /v1/tokens: status $code"
  head -c 600 "$WORK/tokens.out" 2>/dev/null | sed 's/^/  | /'
  echo
fi

if [ -n "$href" ]; then
  code=$(curl -s -o "$WORK/spill.out" -w '%{http_code}' --max-time 10 "$BASE_URL$href")
  if [ "$code" = 200 ] && "$PYTHON3" - "$WORK" >"$WORK/spill.err" 2>&1 <<'EOF'; then
import json, sys
work = sys.argv[1]
reply = json.load(open(work + "/spill.out"))
want = open(work + "/text.bin", "rb").read()
got = reply.get("text", "").encode("utf-8")
if reply.get("key") != "k" or got != want:
    sys.exit("key %r, text %r, want %r" % (reply.get("key"), got, want))
EOF
    pass "GET $href returns the spilled text byte for byte"
  else
    fail "GET $href: status $code"
    sed 's/^/  /' "$WORK/spill.err" 2>/dev/null
  fi
  keys=$(redis-cli -p "$RPORT" dbsize 2>/dev/null)
  if [ "${keys:-0}" -gt 0 ] 2>/dev/null; then
    pass "the spill is stored in the test's Redis ($keys keys)"
  else
    fail "the test's Redis holds no keys after the spill"
  fi
fi

# ---- Stop ----

if [ -n "$COMPACTD_PID" ]; then
  kill -TERM "$COMPACTD_PID" 2>/dev/null
  for _ in $(seq 1 150); do
    kill -0 "$RUN_PID" 2>/dev/null || break
    sleep 0.1
  done
fi
if kill -0 "$RUN_PID" 2>/dev/null; then
  fail "compactd did not exit within 15 s of SIGTERM"
  kill -KILL "$COMPACTD_PID" 2>/dev/null
  wait "$RUN_PID" 2>/dev/null
else
  wait "$RUN_PID"
  rc=$?
  if [ "$rc" -eq 0 ]; then
    pass "compactd exits 0 on SIGTERM"
  else
    fail "compactd exit status $rc after SIGTERM"
    show_log "$WORK/compactd.log"
  fi
fi
RUN_PID=""
COMPACTD_PID=""

redis-cli -p "$RPORT" shutdown >/dev/null 2>&1
wait "$REDIS_PID" 2>/dev/null
REDIS_PID=""

note "timings: total $(($(now) - t0)) s"
finish
