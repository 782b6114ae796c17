#!/bin/sh
# Runs each cmocka unit test binary given on the command line, showing its output,
# and fails if any of them fails.
#
#   scripts/run-unit.sh build/tests/test_a build/tests/test_b ...
set -u

if [ $# -eq 0 ]; then
    echo "run-unit: no unit test binaries given" >&2
    exit 1
fi

failed=""
n=0
for t in "$@"; do
    n=$((n + 1))
    echo "== $t =="
    if [ ! -x "$t" ]; then
        echo "run-unit: $t is missing or not executable" >&2
        failed="$failed $t"
        continue
    fi
    "$t"
    rc=$?
    if [ $rc -ne 0 ]; then
        echo "run-unit: $t exited with $rc" >&2
        failed="$failed $t"
    fi
done

if [ -n "$failed" ]; then
    echo "run-unit: FAILED:$failed" >&2
    exit 1
fi
echo "run-unit: all $n unit test binaries passed"
exit 0
