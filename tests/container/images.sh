# shellcheck shell=bash
# Shared by the image tests (tests/container/container_test.sh,
# tests/compose/compose_cluster_test.sh): pass/fail counting, the
# debian:bookworm-slim base image made with debootstrap and kept in local
# container storage, and buildah builds of the repository's Dockerfiles.
# container_test.sh's header says why each step is done the way it is.
#
# Source it after setting ROOT (the repository root) and TEST_NAME (the name
# the closing line gives); WORK (a scratch folder) must be set before the
# base image and build functions run.

# The suite's python3 (ctest passes the one CMake found as PYTHON3).
PYTHON3=${PYTHON3:-python3}

BASE_IMAGE=debian:bookworm-slim
SOURCES_LABEL=compactd.test.base-settings

passed=0
failed=0
pass() { echo "PASS: $*"; passed=$((passed + 1)); }
fail() { echo "FAIL: $*"; failed=$((failed + 1)); }
note() { echo "  $*"; }

finish() {
  echo "$TEST_NAME: $passed passed, $failed failed"
  [ "$failed" -eq 0 ] && exit 0
  exit 1
}

# Prints the last lines of a log file, indented, for a failure's context.
show_log() {
  [ -s "$1" ] || return 0
  echo "  --- last lines of $(basename "$1") ---"
  tail -n "${2:-25}" "$1" | sed 's/^/  | /'
}

now() { date +%s; }

free_port() {
  "$PYTHON3" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Unmounts whatever debootstrap left mounted below a folder (proc, sys, dev
# binds stay behind when it fails half-way), so that removing it is safe.
unmount_below() {
  findmnt -rn -o TARGET | awk -v r="$1/" 'index($0, r) == 1' | sort -r |
    while read -r m; do umount -l "$m" 2>/dev/null; done
}

# Removes $WORK, after unmounting what is left mounted below it.
remove_work() {
  unmount_below "$WORK"
  rm -rf --one-file-system "$WORK"
}

# Lines "URI SUITE COMPONENT" of the bookworm package sources apt uses here.
mirror_entries() {
  apt-get indextargets --format '$(REPO_URI) $(RELEASE) $(CODENAME) $(COMPONENT)' \
    'Identifier: Packages' 'Target-Of: deb' 2>/dev/null |
    awk '$3 ~ /^bookworm/ { print $1, $2, $4 }' | sort -u
}

# Writes the files the base image gets in /etc to the tree $1/etc: apt
# sources (one deb822 stanza per mirror apt uses here), this machine's
# settings for its mirror, and the slimming settings of the official
# debian:bookworm-slim image (no docs, man pages, translations or apt caches,
# then or after later installs).
write_base_settings() {
  local etc=$1/etc uri suites comps
  mkdir -p "$etc/apt/sources.list.d" "$etc/apt/apt.conf.d" "$etc/dpkg/dpkg.cfg.d"
  : >"$etc/apt/sources.list.d/debian.sources"
  for uri in $(mirror_entries | awk '{ print $1 }' | sort -u); do
    suites=$(mirror_entries | awk -v u="$uri" '$1 == u { print $2 }' | sort -u | tr '\n' ' ')
    comps=$(mirror_entries | awk -v u="$uri" '$1 == u { print $3 }' | sort -u | tr '\n' ' ')
    {
      echo "Types: deb"
      echo "URIs: $uri"
      echo "Suites: ${suites% }"
      echo "Components: ${comps% }"
      echo "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg"
      echo
    } >>"$etc/apt/sources.list.d/debian.sources"
  done
  local vu="" cd="" hp="" sp=""
  eval "$(apt-config shell vu Acquire::Check-Valid-Until cd Acquire::Check-Date \
    hp Acquire::http::Proxy sp Acquire::https::Proxy)"
  {
    echo "// Copied from the machine that made this image: its mirror's needs."
    [ -n "$vu" ] && echo "Acquire::Check-Valid-Until \"$vu\";"
    [ -n "$cd" ] && echo "Acquire::Check-Date \"$cd\";"
    [ -n "$hp" ] && echo "Acquire::http::Proxy \"$hp\";"
    [ -n "$sp" ] && echo "Acquire::https::Proxy \"$sp\";"
  } >"$etc/apt/apt.conf.d/90mirror"
  cat >"$etc/apt/apt.conf.d/docker-clean" <<'EOF'
// No package caches in image layers (as in the official image).
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
EOF
  echo 'Acquire::GzipIndexes "true";' >"$etc/apt/apt.conf.d/docker-gzip-indexes"
  echo 'Acquire::Languages "none";' >"$etc/apt/apt.conf.d/docker-no-languages"
  cat >"$etc/dpkg/dpkg.cfg.d/docker" <<'EOF'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
path-include /usr/share/locale/locale.alias
path-exclude /usr/share/lintian/*
path-exclude /usr/share/groff/*
EOF
}

make_base_image() {
  local settings=$1 digest=$2 rootfs="$WORK/rootfs" mirror
  mirror=$(mirror_entries | awk '$2 == "bookworm" { print $1; exit }')
  if [ -z "$mirror" ]; then
    fail "no bookworm mirror among apt's sources here (apt-get indextargets)"
    return 1
  fi
  note "debootstrap --variant=minbase bookworm from $mirror"
  if ! debootstrap --variant=minbase bookworm "$rootfs" "$mirror" >"$WORK/debootstrap.log" 2>&1; then
    fail "debootstrap of bookworm"
    show_log "$WORK/debootstrap.log"
    unmount_below "$rootfs"
    return 1
  fi
  unmount_below "$rootfs"

  # apt: the mirrors of this machine, nothing else; then trim what the
  # dpkg excludes would have kept out.
  rm -f "$rootfs/etc/apt/sources.list"
  cp -R "$settings/etc/." "$rootfs/etc/"
  find "$rootfs/usr/share/doc" -mindepth 2 ! -name copyright ! -type d -delete
  find "$rootfs/usr/share/locale" -mindepth 1 -maxdepth 1 ! -name locale.alias -exec rm -rf {} +
  rm -rf "$rootfs"/usr/share/man/* "$rootfs"/usr/share/info/* \
    "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/*.bin \
    "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/log/*.log \
    "$rootfs/etc/hostname" "$rootfs/etc/resolv.conf"
  # The runtime provides /dev, /proc, /sys and /run; the host's DNS and name
  # come in at run time too.
  if ! tar --numeric-owner -C "$rootfs" \
    --exclude=./dev/* --exclude=./proc/* --exclude=./sys/* --exclude=./run/* \
    -cf - . |
    podman import --change 'CMD ["bash"]' --change "LABEL $SOURCES_LABEL=$digest" \
      - "$BASE_IMAGE" >"$WORK/import.log" 2>&1; then
    fail "podman import of the bootstrapped root as $BASE_IMAGE"
    show_log "$WORK/import.log"
    return 1
  fi
  rm -rf --one-file-system "$rootfs"
  return 0
}

# Makes sure $BASE_IMAGE is in local storage, made for the apt settings of
# this machine (see make_base_image). Returns 1, having said why, if not.
ensure_base_image() {
  # One base image maker at a time across concurrent runs.
  exec 9>/var/tmp/compactd-container-base.lock
  flock 9
  write_base_settings "$WORK/settings"
  if [ ! -s "$WORK/settings/etc/apt/sources.list.d/debian.sources" ]; then
    note "apt has no package lists yet: apt-get update"
    apt-get update -qq >"$WORK/apt-update.log" 2>&1
    write_base_settings "$WORK/settings"
  fi
  local t0 digest have made_base
  t0=$(now)
  digest=$(cd "$WORK/settings" && find etc -type f | LC_ALL=C sort | xargs cat | sha256sum | cut -c1-16)
  made_base=no
  if podman image exists "$BASE_IMAGE"; then
    have=$(podman image inspect --format "{{ index .Labels \"$SOURCES_LABEL\" }}" "$BASE_IMAGE" 2>/dev/null)
    if [ -z "$have" ] || [ "$have" = "<no value>" ] || [ "$have" = "$digest" ]; then
      pass "base image $BASE_IMAGE found in local storage"
    else
      note "cached $BASE_IMAGE was made for other apt settings; making it again"
      podman rmi "$BASE_IMAGE" >/dev/null 2>&1
      made_base=yes
    fi
  else
    made_base=yes
  fi
  if [ "$made_base" = yes ]; then
    if make_base_image "$WORK/settings" "$digest"; then
      pass "base image $BASE_IMAGE made with debootstrap and imported ($(($(now) - t0)) s)"
    else
      flock -u 9
      exec 9>&-
      return 1
    fi
  fi
  flock -u 9
  exec 9>&-
  return 0
}

# build_image DOCKERFILE TAG: buildah bud of DOCKERFILE (relative to the
# repository root, the build context) as TAG, log in $WORK/build-<name>.log;
# the image it replaces is removed. Passes or fails; returns 1 on failure.
build_image() {
  local dockerfile=$1 tag=$2 log t1 old_id new_id
  log="$WORK/build-$(basename "$dockerfile").log"
  # The ranks stage fetches from the npm registry; a CA bundle this machine's
  # npm is configured with (a TLS-intercepting proxy) is mounted for it.
  local npm_args=() npm_cafile
  npm_cafile=$(npm config get cafile 2>/dev/null || true)
  if [ -n "$npm_cafile" ] && [ -f "$npm_cafile" ]; then
    npm_args=(--volume "$npm_cafile:/run/npm-ca.crt:ro" --build-arg NPM_CAFILE=/run/npm-ca.crt)
  fi
  t1=$(now)
  old_id=$(buildah images --quiet --no-trunc "$tag" 2>/dev/null | head -n 1)
  if ! (cd "$ROOT" && buildah bud --isolation chroot --pull=never --format docker --layers --force-rm \
    "${npm_args[@]}" -f "$dockerfile" -t "$tag" .) >"$log" 2>&1; then
    fail "buildah bud of $dockerfile"
    show_log "$log" 40
    return 1
  fi
  pass "buildah bud of $dockerfile ($(($(now) - t1)) s)"
  new_id=$(buildah images --quiet --no-trunc "$tag" 2>/dev/null | head -n 1)
  if [ -n "$old_id" ] && [ "$old_id" != "$new_id" ]; then
    buildah rmi "$old_id" >/dev/null 2>&1
  fi
  return 0
}
