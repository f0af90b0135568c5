#!/usr/bin/env bash
# Test every checkpoint SDK with its own test runner, then check that they agree.
#
#   bash sdk/test_all.sh                  all six SDKs
#   SDKS="c rust" bash sdk/test_all.sh    a subset
#
# 1. Each SDK's suite, against sdk/vectors/checkpoint.json:
#      c       make -C sdk/c test          python  python3 -m pytest (in sdk/python)
#      rust    cargo test (in sdk/rust)    node    node --test test/vectors.test.js (in sdk/node)
#      go      go test ./... (in sdk/go)   java    mvn -q -B test (in sdk/java)
#    (plus cargo fmt --check and gofmt -l: the formatters must have nothing to change)
# 2. Agreement: a small emitter per language writes checkpoints into one
#    packet-mode pipe from sdk/tools/cscollect.c, which reads CLOCK_MONOTONIC
#    before the spawn and after the end and checks every line (format, one line
#    per write(2), timestamp inside that window). First each language alone,
#    then all six at once into the same pipe.
#
# Build output goes to target/sdk/. A language whose toolchain is missing is
# skipped with a message, unless CI is set (then it fails). The last line is
# "sdk: N passed, M failed, K skipped" (tests counted from each runner's summary).
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SDK="$ROOT/sdk"
OUT="$ROOT/target/sdk"
LOGS="$OUT/logs"
mkdir -p "$OUT" "$LOGS"
SDKS="${SDKS:-c rust go python node java}"
unset COLDSTART_FD
export GOTOOLCHAIN=local GOFLAGS=-buildvcs=false CARGO_TARGET_DIR="$OUT/rust"

PASSED=0
FAILED=0
SKIPPED=0
declare -a SUMMARY=()
declare -a READY=() # languages whose suite passed: they take part in the agreement test

have() { command -v "$1" >/dev/null 2>&1; }
note() { SUMMARY+=("$(printf '%-9s %s' "$1" "$2")"); }

# Counts "P F S" from a runner's log (each runner has its own summary format).
count_tests() {
    local lang="$1" log="$2"
    case "$lang" in
    c) grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -1 | awk '{print $1, $3, $5+0}' ;;
    rust) awk '/^test result:/ {p += $4; f += $6; s += $8} /^[0-9]+ passed, [0-9]+ failed/ {p += $1; f += $3}
               END {print p+0, f+0, s+0}' "$log" ;;
    go) awk '/^ *--- PASS/ {p++} /^ *--- FAIL/ {f++} /^ *--- SKIP/ {s++} END {print p+0, f+0, s+0}' "$log" ;;
    python) tail -1 "$log" | awk '{for (i = 2; i <= NF; i++) {if ($i ~ /^passed/) p = $(i-1); if ($i ~ /^failed/) f = $(i-1);
               if ($i ~ /^skipped/) s = $(i-1); if ($i ~ /^error/) f += $(i-1)}} END {print p+0, f+0, s+0}' ;;
    node) awk '/^# pass / {p = $3} /^# fail / {f = $3} /^# skipped / {s = $3} END {print p+0, f+0, s+0}' "$log" ;;
    java) cat "$SDK"/java/target/surefire-reports/*.txt 2>/dev/null | awk -F'[:,] *' '/^Tests run:/ {
               p += $2 - $4 - $6 - $8; f += $4 + $6; s += $8} END {print p+0, f+0, s+0}' ;;
    esac
}

# run_suite LANG COMMAND...: run in the SDK's directory, log to target/sdk/logs/LANG.log.
run_suite() {
    local lang="$1"
    shift
    local log="$LOGS/$lang.log" start=$SECONDS rc
    (cd "$SDK/$lang" && timeout 900 "$@") >"$log" 2>&1
    rc=$?
    local p f s
    read -r p f s < <(count_tests "$lang" "$log")
    if [ "$rc" -eq 0 ] && [ "${f:-0}" -eq 0 ]; then
        [ "${p:-0}" -gt 0 ] || p=1 # ran, but its summary was not found: count the suite
        note "$lang" "ok: $p passed, ${s:-0} skipped ($((SECONDS - start)) s; $*)"
        READY+=("$lang")
    else
        [ "${f:-0}" -gt 0 ] || f=1
        note "$lang" "FAILED (exit $rc, $f failed; $*): log $log"
        echo "---- $lang: last lines of $log" >&2
        tail -40 "$log" >&2
    fi
    PASSED=$((PASSED + ${p:-0}))
    FAILED=$((FAILED + ${f:-0}))
    SKIPPED=$((SKIPPED + ${s:-0}))
}

missing() {
    local lang="$1" what="$2"
    if [ -n "${CI:-}" ]; then
        note "$lang" "FAILED: $what not found (required under CI)"
        FAILED=$((FAILED + 1))
    else
        note "$lang" "skipped: $what not found"
        SKIPPED=$((SKIPPED + 1))
    fi
}

# ---- tools -------------------------------------------------------------------------------
if ! have cc; then
    echo "sdk/test_all.sh: a C compiler (cc) is needed for the test tools" >&2
    echo "sdk: 0 passed, 1 failed"
    exit 1
fi
cc -O2 -Wall -Wextra -o "$OUT/monoclock" "$SDK/tools/monoclock.c" &&
    cc -O2 -Wall -Wextra -o "$OUT/cscollect" "$SDK/tools/cscollect.c" || exit 1
export COLDSTART_MONOCLOCK="$OUT/monoclock"

# ---- 1. each SDK's own suite ---------------------------------------------------------------
for lang in $SDKS; do
    case "$lang" in
    c) if have make; then run_suite c make --no-print-directory BUILD="$OUT/c" test; else missing c make; fi ;;
    rust) if have cargo; then run_suite rust sh -c 'cargo fmt --check && cargo test'; else missing rust cargo; fi ;;
    go) if have go; then run_suite go sh -c 'test -z "$(gofmt -l .)" && go test -count=1 -v ./...'; else missing go go; fi ;;
    python)
        if have python3 && python3 -c 'import pytest' 2>/dev/null; then
            run_suite python python3 -m pytest -q -p no:cacheprovider
        else
            missing python "python3 with pytest"
        fi
        ;;
    node) if have node; then run_suite node node --test test/vectors.test.js; else missing node node; fi ;;
    java)
        if have mvn && have java; then
            rm -rf "$SDK/java/target/surefire-reports"
            run_suite java mvn -q -B -Dstyle.color=never test
        else
            missing java "mvn/java"
        fi
        ;;
    *) note "$lang" "FAILED: unknown SDK" && FAILED=$((FAILED + 1)) ;;
    esac
done

# ---- 2. agreement --------------------------------------------------------------------------
emitter() { # the command line of LANG's emitter program
    case "$1" in
    c) echo "$OUT/c/emit" ;;
    rust) echo "$OUT/rust/debug/examples/emit" ;;
    go) echo "$OUT/go-emit" ;;
    python) echo "env PYTHONPATH=$SDK/python/src python3 $SDK/python/examples/emit.py" ;;
    node) echo "node $SDK/node/examples/emit.js" ;;
    java) echo "java -cp $SDK/java/target/classes:$SDK/java/target/test-classes dev.coldstart.checkpoint.Emit" ;;
    esac
}

build_emitter() {
    case "$1" in
    c) make --no-print-directory -C "$SDK/c" BUILD="$OUT/c" emit ;;
    rust) cargo build -q --manifest-path "$SDK/rust/Cargo.toml" --example emit ;;
    go) (cd "$SDK/go" && go build -o "$OUT/go-emit" ./examples/emit) ;;
    *) true ;; # python and node need no build; java's classes come from its suite
    esac
}

# check_lines FILE LANG COUNT: LANG's lines are LANG:begin, LANG:0:café .. LANG:end, in
# this order, with non-decreasing timestamps.
check_lines() {
    awk -v lang="$2" -v count="$3" '
        function later(a, b) { return length(a) != length(b) ? length(a) > length(b) : (a "") > (b "") }
        $1 == "before" || $1 == "after" { next }
        index($2, lang ":") == 1 {
            want = n == 0 ? lang ":begin" : n <= count ? lang ":" (n - 1) ":café" : lang ":end"
            if ($2 != want) { printf "%s: line %d is %s, want %s\n", lang, n, $2, want; bad = 1; exit }
            if (n > 0 && later(last, $1)) { printf "%s: timestamp went back at %s\n", lang, $2; bad = 1; exit }
            last = $1; n++
        }
        END { if (!bad && n != count + 2) { printf "%s: %d lines, want %d\n", lang, n, count + 2; bad = 1 }; exit bad }
    ' "$1"
}

agree() {
    local start=$SECONDS ok=1 lang cmd joined=""
    declare -a langs=()
    for lang in "${READY[@]}"; do
        if build_emitter "$lang" >>"$LOGS/agreement.log" 2>&1; then
            langs+=("$lang")
        else
            echo "agreement: building the $lang emitter failed (see $LOGS/agreement.log)" >&2
            ok=0
        fi
    done
    [ ${#langs[@]} -gt 0 ] || return 0
    local checks=0
    # Each language alone: its timestamps lie between CLOCK_MONOTONIC read by cscollect just
    # before the spawn and just after the end.
    for lang in "${langs[@]}"; do
        # shellcheck disable=SC2046
        if "$OUT/cscollect" -- $(emitter "$lang") "$lang" 20 >"$OUT/agree-$lang.txt" 2>>"$LOGS/agreement.log" &&
            check_lines "$OUT/agree-$lang.txt" "$lang" 20 >>"$LOGS/agreement.log" 2>&1; then
            checks=$((checks + 1))
        else
            echo "agreement: $lang alone failed (see $LOGS/agreement.log)" >&2
            ok=0
        fi
    done
    # All at once, into the same pipe.
    local script="pids=()"
    for lang in "${langs[@]}"; do
        script+="; $(emitter "$lang") $lang 300 & pids+=(\$!)"
    done
    script+='; for p in "${pids[@]}"; do wait "$p" || exit 1; done'
    if "$OUT/cscollect" -- bash -c "$script" >"$OUT/agree-all.txt" 2>>"$LOGS/agreement.log"; then
        for lang in "${langs[@]}"; do
            if check_lines "$OUT/agree-all.txt" "$lang" 300 >>"$LOGS/agreement.log" 2>&1; then
                checks=$((checks + 1))
            else
                echo "agreement: $lang in the shared pipe failed (see $LOGS/agreement.log)" >&2
                ok=0
            fi
        done
    else
        echo "agreement: the shared-pipe run failed (see $LOGS/agreement.log)" >&2
        ok=0
    fi
    joined="${langs[*]}"
    if [ "$ok" -eq 1 ]; then
        note agreement "ok: $checks passed (${joined// /, }: alone, then together in one pipe; $((SECONDS - start)) s)"
        PASSED=$((PASSED + checks))
    else
        note agreement "FAILED: $(tail -5 "$LOGS/agreement.log" | tr '\n' ' ')"
        PASSED=$((PASSED + checks))
        FAILED=$((FAILED + 1))
    fi
}
# The checker must catch what it is there to catch (emitters in bash, on purpose wrong).
selfcheck() {
    local name script failures=0
    for name in split-over-two-writes realtime-clock bad-prefix; do
        case "$name" in
        split-over-two-writes) script='m=$("$1"); printf "cs1 %s" "$m" >&3; printf " x\n" >&3' ;;
        realtime-clock) script='printf "cs1 %s x\n" "$(date +%s%N)" >&3' ;;
        bad-prefix) script='printf "cs2 %s x\n" "$("$1")" >&3' ;;
        esac
        if "$OUT/cscollect" -- bash -c "$script" selfcheck "$OUT/monoclock" >/dev/null 2>>"$LOGS/agreement.log"; then
            echo "agreement: cscollect accepted a $name line" >&2
            failures=$((failures + 1))
        fi
    done
    if [ "$failures" -eq 0 ]; then
        note selfcheck "ok: 3 passed (cscollect rejects a split line, a CLOCK_REALTIME stamp, a bad prefix)"
        PASSED=$((PASSED + 3))
    else
        note selfcheck "FAILED: cscollect accepted $failures bad input(s)"
        FAILED=$((FAILED + failures))
    fi
}
: >"$LOGS/agreement.log"
selfcheck
agree

echo
echo "checkpoint SDKs:"
printf '  %s\n' "${SUMMARY[@]}"
echo "sdk: $PASSED passed, $FAILED failed, $SKIPPED skipped"
[ "$FAILED" -eq 0 ]
