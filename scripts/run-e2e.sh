#!/bin/sh
# Runs the end-to-end suites against a build directory.
#
#   scripts/run-e2e.sh BUILD_DIR
#
# 1. the pytest suite tests/e2e (STROBE_BUILD=BUILD_DIR), which drives strobe daemon,
#    strobe mcp and strobectl against the fixtures in BUILD_DIR/fixtures (installs the
#    JS test fixture's node_modules with npm ci first when they are missing);
# 2. tests/mcp-sdk/sdk_test.mjs, the official MCP SDK client against `strobe mcp`
#    (installs its node_modules with npm ci first when they are missing);
# 3. tests/agent, the Python agent inside real interpreters (not for a sanitized
#    build: the agent is the same Python in every build).
#
# With STROBE_VALGRIND=1 only the pytest suite runs, each test's daemon under
# valgrind (see tests/e2e/conftest.py). Exits non-zero if any suite fails.
#
# The pytest suite runs on one worker per CPU (pytest-xdist), each test file on one
# worker (its module fixtures build once): every test has its own daemon, state
# directory and project, and most of a test's time is spent waiting for the program.
# Under valgrind too: a daemon there keeps a CPU busy while it works, but a third of
# each test is its start and the waits between requests (13.5 min on one worker, 8.5
# on two, on the 2-CPU machine). The slowest 15 tests are listed at the end (where
# CI's time goes).
set -u

if [ $# -ne 1 ]; then
    echo "usage: $0 BUILD_DIR" >&2
    exit 64
fi
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "$1" 2>/dev/null && pwd) || { echo "run-e2e: no build directory $1" >&2; exit 2; }
cd "$root" || exit 2

status=0

# A sanitized build's daemon runs detached, its stderr on /dev/null: its reports go
# to files instead, and any file at the end fails the run.
san_logs=""
case "$build" in
*-san)
    san_logs=$(mktemp -d)
    export ASAN_OPTIONS="log_path=$san_logs/asan:detect_leaks=1"
    export UBSAN_OPTIONS="log_path=$san_logs/ubsan:print_stacktrace=1:halt_on_error=1"
    ;;
esac

if [ "${STROBE_VALGRIND:-}" = 1 ]; then
    echo "== e2e (pytest, daemon under valgrind) =="
else
    echo "== e2e (pytest) =="
fi
# debug_test's JavaScript fixture (jest, vitest, mocha) runs from its own node_modules.
# npm ci refuses a lock file that lacks other platforms' optional packages (rollup's,
# when it was made through a registry mirror serving only this one): npm install
# --no-save then installs the same pinned versions without touching the lock.
js="$root/tests/fixtures/testproj/js"
if [ ! -d "$js/node_modules/.bin" ]; then
    (cd "$js" && { npm ci --no-audit --no-fund --loglevel=error 2>/dev/null ||
                   npm install --no-save --no-audit --no-fund --loglevel=error; }) || status=1
fi
workers="-n auto --dist loadfile"
# shellcheck disable=SC2086
STROBE_BUILD="$build" /usr/bin/python3 -m pytest -q -p no:cacheprovider --durations=15 $workers tests/e2e ||
    status=1

if [ "${STROBE_VALGRIND:-}" != 1 ]; then
    echo "== e2e (MCP SDK client) =="
    sdk="$root/tests/mcp-sdk"
    if [ ! -d "$sdk/node_modules/@modelcontextprotocol/sdk" ]; then
        if [ -f "$sdk/package-lock.json" ]; then
            (cd "$sdk" && npm ci --no-audit --no-fund --loglevel=error) || status=1
        else
            (cd "$sdk" && npm install --no-audit --no-fund --loglevel=error) || status=1
        fi
    fi
    node "$sdk/sdk_test.mjs" "$build" || status=1
    # The Python agent in the interpreters it runs in (python3.11, and pyenv's 3.9,
    # 3.12 and 3.13 where installed): its code is the same in every build, so once.
    case "$build" in
    *-san) ;;
    *)
        echo "== Python agent (pytest, real interpreters) =="
        /usr/bin/python3 -m pytest -q -p no:cacheprovider tests/agent || status=1
        ;;
    esac
fi

if [ -n "$san_logs" ]; then
    for f in "$san_logs"/*; do
        [ -e "$f" ] || continue
        echo "run-e2e: sanitizer report $f:" >&2
        cat "$f" >&2
        status=1
    done
    rm -rf "$san_logs"
fi

if [ $status -ne 0 ]; then
    echo "run-e2e: FAILED" >&2
fi
exit $status
