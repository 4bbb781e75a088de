# Sourced by the node-based tests: npm_locked PACKAGE installs the folder's
# package-lock.json with `npm ci` unless the locked version of PACKAGE is
# already in its node_modules, and leaves that version in $locked. Run from
# the folder holding the lockfile.
npm_locked() {
    if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
        echo "node and npm are needed (Debian: apt-get install -y nodejs npm)" >&2
        return 1
    fi
    locked=$(node -e 'const l = require("./package-lock.json");
                      process.stdout.write(l.packages["node_modules/" + process.argv[1]].version)' "$1")
    installed=$(node -e 'try { process.stdout.write(require("./node_modules/" + process.argv[1] + "/package.json").version) }
                         catch (e) { }' "$1")
    if [ "$installed" != "$locked" ]; then
        echo "installing $1 $locked with npm ci" >&2
        npm ci --no-audit --no-fund --loglevel=error >&2
    fi
}
