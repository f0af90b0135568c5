#!/usr/bin/env bash
# Build the coldstart example targets (and bench/spawn_loop) into OUT_DIR.
#
#   examples/build.sh [OUT_DIR [PART...]]   default: <repo>/target/examples, every part
#
# PART is one of c, go, java, rust, lambda: `coldstart demo` builds only the
# servers it runs (go java rust), since the Lambda clients alone take minutes
# on a fresh clone; the tests (crates/testkit) and CI build every part.
# Idempotent and quick: an artifact is rebuilt only when a source is newer.
# A language whose toolchain is missing is skipped with a message on stderr
# (exit status stays 0 so partial setups work); one summary line per language.
# Go builds offline (GOTOOLCHAIN=local, no deps). Python/Node need no build.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="${1:-$ROOT/target/examples}"
shift $(( $# > 0 ? 1 : 0 ))
PARTS=("$@")
[[ ${#PARTS[@]} -gt 0 ]] || PARTS=(c go java rust lambda)
for part in "${PARTS[@]}"; do
  case "$part" in
    c|go|java|rust|lambda) ;;
    *) echo "build.sh: unknown part '$part' (expected c, go, java, rust or lambda)" >&2; exit 2 ;;
  esac
done
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
EX="$ROOT/examples"

declare -a SUMMARY=()
FAILED=0

# stale OUTPUT SOURCE... : true if OUTPUT is missing or any SOURCE is newer.
stale() {
  local out="$1"; shift
  [[ -e "$out" ]] || return 0
  local src
  for src in "$@"; do
    [[ "$src" -nt "$out" ]] && return 0
  done
  return 1
}

have() { command -v "$1" >/dev/null 2>&1; }
skip() { echo "build.sh: $1: $2 not found, skipping" >&2; SUMMARY+=("$(printf '%-7s skipped (%s not found)' "$1" "$2")"); }
record() { SUMMARY+=("$(printf '%-7s %s' "$1" "$2")"); }

# --- C examples + bench/spawn_loop -------------------------------------------
build_c() {
  if ! have gcc; then skip c gcc; skip bench gcc; return; fi
  local built=0 fresh=0 name flags
  for name in noop sleeper daemon lagprobe forker; do
    case "$name" in
      noop)   flags=(-static -O2) ;;
      forker) flags=(-O2 -pthread) ;;
      *)      flags=(-O2) ;;
    esac
    if stale "$OUT/$name" "$EX/c/$name.c" "$EX/c/common.h" "$EX/build.sh"; then
      gcc "${flags[@]}" -Wall -Wextra -o "$OUT/$name" "$EX/c/$name.c"
      built=$((built + 1))
    else
      fresh=$((fresh + 1))
    fi
  done
  record c "ok: $built built, $fresh up to date ($OUT/{noop,sleeper,daemon,lagprobe,forker})"

  if stale "$OUT/spawn_loop" "$ROOT/bench/spawn_loop.c" "$EX/build.sh"; then
    gcc -O2 -Wall -Wextra -o "$OUT/spawn_loop" "$ROOT/bench/spawn_loop.c"
    record bench "ok: built $OUT/spawn_loop"
  else
    record bench "ok: up to date $OUT/spawn_loop"
  fi
}

# --- Go -----------------------------------------------------------------------
build_go() {
  if ! have go; then skip go go; return; fi
  if stale "$OUT/go-server" "$EX/go/main.go" "$EX/go/go.mod"; then
    (cd "$EX/go" && GOTOOLCHAIN=local GOFLAGS=-buildvcs=false go build -o "$OUT/go-server" .)
    record go "ok: built $OUT/go-server"
  else
    record go "ok: up to date $OUT/go-server"
  fi
}

# --- Java ---------------------------------------------------------------------
build_java() {
  if ! have javac; then skip java javac; return; fi
  if stale "$OUT/java/Server.class" "$EX/java/Server.java" || stale "$OUT/java/Hello.class" "$EX/java/Hello.java"; then
    javac -d "$OUT/java" "$EX/java/Server.java" "$EX/java/Hello.java"
    record java "ok: built $OUT/java/{Server,Hello}.class (run: java -cp $OUT/java Server)"
  else
    record java "ok: up to date $OUT/java/{Server,Hello}.class"
  fi
}

# --- Rust (standalone project, std only) --------------------------------------
build_rust() {
  if ! have cargo; then skip rust cargo; return; fi
  if stale "$OUT/rust-server" "$EX/rust/Cargo.toml" "$EX/rust/src/main.rs"; then
    cargo build --quiet --release --offline \
      --manifest-path "$EX/rust/Cargo.toml" --target-dir "$OUT/rust-target"
    cp "$OUT/rust-target/release/coldstart-example-server" "$OUT/rust-server"
    record rust "ok: built $OUT/rust-server"
  else
    record rust "ok: up to date $OUT/rust-server"
  fi
}

# --- Lambda clients (examples/lambda): real AWS client libraries -------------
# Rust: lambda_runtime and lambda-extension from crates.io, one workspace
# (examples/lambda/Cargo.toml) built at once, so their shared dependencies compile
# once. Go: aws-lambda-go from the module proxy.
build_lambda() {
  local dir="$OUT/lambda" lx="$EX/lambda"
  mkdir -p "$dir"
  if have cargo; then
    local tdir="$dir/cargo" built=() pair crate bin src stale_any=0
    local pairs=("rust-runtime:cs-rust-runtime:rust-bootstrap" "rust-extension:cs-rust-extension:rust-telemetry-extension")
    for pair in "${pairs[@]}"; do
      IFS=: read -r src crate bin <<<"$pair"
      stale "$dir/$bin" "$lx/Cargo.lock" "$lx/$src/Cargo.toml" "$lx/$src/src/main.rs" && stale_any=1
    done
    if [[ $stale_any == 1 ]]; then
      # errexit is off inside a function called from `if`: fail the step explicitly,
      # or a failed build would be reported as ok (and tests/integration/lambda/ would skip).
      cargo build --quiet --release --workspace --manifest-path "$lx/Cargo.toml" --target-dir "$tdir" || return 1
      for pair in "${pairs[@]}"; do
        IFS=: read -r src crate bin <<<"$pair"
        cp "$tdir/release/$crate" "$dir/$bin" || return 1
        built+=("$bin")
      done
    fi
    record lambda-rs "ok: ${#built[@]} built ($dir/{rust-bootstrap,rust-telemetry-extension})"
  else
    skip lambda-rs cargo
  fi
  if have go; then
    if stale "$dir/go-bootstrap" "$lx/go-runtime/main.go" "$lx/go-runtime/go.mod"; then
      (cd "$lx/go-runtime" && GOTOOLCHAIN=local GOFLAGS=-buildvcs=false \
        go build -tags lambda.norpc -o "$dir/go-bootstrap" .) || return 1
      record lambda-go "ok: built $dir/go-bootstrap"
    else
      record lambda-go "ok: up to date $dir/go-bootstrap"
    fi
  else
    skip lambda-go go
  fi
  if have python3; then record lambda-py "ok: no build needed (examples/lambda/python)"; else skip lambda-py python3; fi
}

# --- Interpreted: nothing to build, just report -------------------------------
check_interp() {
  if have "$2"; then record "$1" "ok: no build needed ($3)"; else skip "$1" "$2"; fi
}

for part in "${PARTS[@]}"; do
  step="build_$part"
  if ! "$step"; then
    FAILED=1
    record "${step#build_}" "FAILED"
  fi
done
check_interp python python3 "examples/python/server.py"
check_interp node node "examples/node/server.js"

printf '%s\n' "${SUMMARY[@]}"
exit "$FAILED"
