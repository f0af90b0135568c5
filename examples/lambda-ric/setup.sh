#!/usr/bin/env bash
# Install the real runtime interface clients that `coldstart lambda --runtime
# python3.11|nodejs20.x|java17` runs, pinned, into one directory:
#   python/  awslambdaric (PyPI), requirements.txt   → pip install --target
#   node/    aws-lambda-ric (npm), package-lock.json → npm ci (builds its native addon:
#            needs make, cmake, g++, autoconf, automake, libtool)
#   java/    the Java client (Maven Central), pom.xml → mvn dependency:copy-dependencies
#
#   examples/lambda-ric/setup.sh [DEST]     default: <repo>/target/lambda-ric
#
# coldstart finds them in target/lambda-ric of the project, or in COLDSTART_LAMBDA_RIC_DIR.
# Idempotent: a client whose pinned list is unchanged is not installed again; each is
# installed beside its place and moved in whole, so a failed install leaves none.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
DEST="${1:-$ROOT/target/lambda-ric}"
mkdir -p "$DEST"
DEST="$(cd "$DEST" && pwd)"

# fresh NAME PIN: the client NAME was installed from this PIN file.
fresh() { cmp -s "$2" "$DEST/$1/.installed-from" 2>/dev/null; }
# done NAME PIN: record the pin and move the new install into place.
finish() {
    cp "$2" "$DEST/.$1.new/.installed-from"
    rm -rf "$DEST/$1"
    mv "$DEST/.$1.new" "$DEST/$1"
}

# Python: the interpreter that python3.11 on PATH really is (a version manager's
# python3.11 may be a shim script), so the client's C extension matches it.
if ! fresh python "$HERE/requirements.txt"; then
    PY=$(python3.11 -c 'import sys; print(sys.executable)' 2>/dev/null || python3 -c 'import sys; print(sys.executable)')
    rm -rf "$DEST/.python.new"
    # --break-system-packages only quiets Debian's externally-managed refusal, which
    # does not apply to a private --target directory.
    pip=("$PY" -m pip install -q --disable-pip-version-check --root-user-action=ignore --no-warn-script-location --target "$DEST/.python.new" -r "$HERE/requirements.txt")
    "${pip[@]}" 2>/dev/null || "${pip[@]}" --break-system-packages
    finish python "$HERE/requirements.txt"
fi

if ! fresh node "$HERE/package-lock.json"; then
    rm -rf "$DEST/.node.new"
    mkdir -p "$DEST/.node.new"
    cp "$HERE/package.json" "$HERE/package-lock.json" "$DEST/.node.new/"
    (cd "$DEST/.node.new" && npm ci --no-audit --no-fund --loglevel=error)
    finish node "$HERE/package-lock.json"
fi

if ! fresh java "$HERE/pom.xml"; then
    rm -rf "$DEST/.java.new"
    mvn -q -B -f "$HERE/pom.xml" dependency:copy-dependencies -DoutputDirectory="$DEST/.java.new"
    finish java "$HERE/pom.xml"
fi
echo "lambda-ric setup: runtime interface clients in $DEST (python/, node/, java/)"
