#!/usr/bin/env bash
# Benchmarks of `coldstart lambda` (figures in docs/lambda.md):
#   1. emulator overhead: Init Duration of a runtime with no extensions, minus the
#      bare spawn → first /next of the same runtime (--bare: a minimal blocking
#      listener, no HTTP framework, no telemetry, no cgroup); the Δ row's
#      Hodges-Lehmann shift is the overhead.
#   2. memory sweep 128…3008 MB for one runtime + one extension, with the CPU quota
#      (memory/1769 vCPU, --no-init-boost) and with the default init boost: the Go runtime with
#      the Python raw-API extension (~100 ms of interpreter start-up CPU), and with the
#      Rust lambda-extension one (~4 ms of CPU: fits in one 100 ms CFS period's quota).
#
#   bench/lambda.sh [RUNS] [SWEEP_RUNS]   defaults 30 and 10; needs examples/build.sh
#                                         and cargo build --release
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
RUNS="${1:-30}"
SWEEP="${2:-10}"
CS="$ROOT/target/release/coldstart"
EX="$ROOT/target/examples/lambda"
[[ -x "$CS" ]] || { echo "build first: cargo build --release" >&2; exit 2; }
[[ -x "$EX/go-bootstrap" ]] || { echo "build first: bash examples/build.sh" >&2; exit 2; }
TMP="$(mktemp -d)"; trap 'rm -rf "$TMP"' EXIT
mkdir -p "$TMP/ext" "$TMP/pyext"
cp "$EX/rust-telemetry-extension" "$TMP/ext/rust-telemetry"
cp "$ROOT/examples/lambda/python/raw_extension.py" "$TMP/pyext/py-raw"

for rt in go-bootstrap rust-bootstrap; do
  echo "== emulator overhead: $rt (no extensions, no cgroup)"
  "$CS" lambda -q --no-store --runs "$RUNS" --warmup 3 --no-cgroup --runtime "$EX/$rt" \
    --name bare --bare --name emulated
done

echo "== memory sweep: go-bootstrap + py-raw extension, CPU = memory/1769 vCPU (--no-init-boost)"
"$CS" lambda -q --no-store --runs "$SWEEP" --warmup 1 --no-init-boost --runtime "$EX/go-bootstrap" \
  --extensions "$TMP/pyext" --memory 128,256,512,1024,1769,3008
echo "== the same with the default init boost (1 vCPU for up to 10 s of init)"
"$CS" lambda -q --no-store --runs "$SWEEP" --warmup 1 --runtime "$EX/go-bootstrap" \
  --extensions "$TMP/pyext" --memory 128,1769
echo "== memory sweep: go-bootstrap + rust-telemetry extension (lambda-extension crate)"
"$CS" lambda -q --no-store --runs "$SWEEP" --warmup 1 --runtime "$EX/go-bootstrap" \
  --extensions "$TMP/ext" --env "CS_TELEMETRY_PORT=19333" --memory 128,1769,3008
