#!/usr/bin/env bash
# Benchmarks of `coldstart lambda` (figures in docs/lambda.md):
#   1. emulator overhead: Init Duration of a runtime with no extensions, minus the
#      bare spawn → first /next of the same runtime (--bare: a minimal blocking
#      listener, no HTTP framework, no telemetry, no cgroup); the Δ row's
#      Hodges-Lehmann shift is the overhead.
#   2. memory sweep 128…3008 MB for one runtime + one extension, with the CPU quota
#      (memory/1769 vCPU) and, for contrast, with --init-boost.
#
#   bench/lambda.sh [RUNS]      default 30; needs examples/build.sh and cargo build --release
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
RUNS="${1:-30}"
CS="$ROOT/target/release/coldstart"
EX="$ROOT/target/examples/lambda"
[[ -x "$CS" ]] || { echo "build first: cargo build --release" >&2; exit 2; }
[[ -x "$EX/go-bootstrap" ]] || { echo "build first: bash examples/build.sh" >&2; exit 2; }
TMP="$(mktemp -d)"; trap 'rm -rf "$TMP"' EXIT
mkdir -p "$TMP/ext"
cp "$EX/rust-telemetry-extension" "$TMP/ext/rust-telemetry"

for rt in go-bootstrap rust-bootstrap; do
  echo "== emulator overhead: $rt (no extensions, no cgroup)"
  "$CS" lambda -q --no-store --runs "$RUNS" --warmup 3 --no-cgroup --runtime "$EX/$rt" \
    --name bare --bare --name emulated
done

echo "== memory sweep: go-bootstrap + rust-telemetry extension, CPU = memory/1769 vCPU"
"$CS" lambda -q --no-store --runs "$RUNS" --warmup 1 --runtime "$EX/go-bootstrap" \
  --extensions "$TMP/ext" --env "CS_TELEMETRY_PORT=19333" --memory 128,256,512,1024,1769,3008 \
  --export-markdown "$TMP/sweep.md"
echo "== memory sweep with --init-boost (init unthrottled)"
"$CS" lambda -q --no-store --runs "$RUNS" --warmup 1 --init-boost --runtime "$EX/go-bootstrap" \
  --extensions "$TMP/ext" --env "CS_TELEMETRY_PORT=19333" --memory 128,512,1769
