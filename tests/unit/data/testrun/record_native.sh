#!/bin/sh
# Records the framework output test_adapters_native.c parses: runs the cargo,
# GoogleTest and go fixture projects (tests/fixtures/testproj/) in copies under
# /tmp/stackfix-* and saves stdout, stderr and report files under
# tests/unit/data/testrun/{cargo,gtest,go}/. Run from the repository root:
#
#   tests/unit/data/testrun/record_native.sh
#
# The unit test's expectations follow the fixtures' lines, so re-record after
# editing a fixture. Paths are the copies' (/tmp/stackfix-*), the same on every
# machine.
set -u
root=$(pwd)
data=$root/tests/unit/data/testrun
fresh() { rm -rf "/tmp/stackfix-$1" && cp -r "$root/tests/fixtures/testproj/$1" "/tmp/stackfix-$1"; }

# cargo: JSON suite, the same on Debian 12's cargo when it is there, a backtrace,
# the text format, a compile error.
mkdir -p "$data/cargo"
fresh cargo
cd /tmp/stackfix-cargo
json="-Z unstable-options --format json --report-time"
RUST_BACKTRACE=0 RUSTC_BOOTSTRAP=1 cargo test --no-fail-fast -- $json \
    >"$data/cargo/suite.out" 2>"$data/cargo/suite.err"
if [ -x /usr/bin/cargo ]; then
    rm -rf target Cargo.lock
    RUST_BACKTRACE=0 RUSTC_BOOTSTRAP=1 PATH=/usr/bin:/bin /usr/bin/cargo test --no-fail-fast \
        -- $json >"$data/cargo/suite_rust163.out" 2>"$data/cargo/suite_rust163.err"
fi
RUST_BACKTRACE=1 RUSTC_BOOTSTRAP=1 cargo test --lib -- pop_returns_last_pushed $json \
    >"$data/cargo/backtrace.out" 2>"$data/cargo/backtrace.err"
RUST_BACKTRACE=0 cargo test --no-fail-fast >"$data/cargo/text.out" 2>"$data/cargo/text.err"
# The hanging test killed as the runner kills a stuck run: the whole process group.
STROBE_FIXTURE_HANG=1 RUSTC_BOOTSTRAP=1 setsid cargo test -- hang_deadlock $json \
    >"$data/cargo/killed.out" 2>"$data/cargo/killed.err" &
sleep 5
kill -KILL -$!
wait
sed -i 's/self.items.len()$/self.items.len() + "one"/; s/Some(self.items.remove(0))/Some(self.items.remove(zero))/' src/stack.rs
RUSTC_BOOTSTRAP=1 cargo test --no-fail-fast -- $json \
    >"$data/cargo/build_fail.out" 2>"$data/cargo/build_fail.err"

# GoogleTest: the JSON report and stdout, and a crash in the middle (no report).
mkdir -p "$data/gtest"
fresh gtest
cd /tmp/stackfix-gtest
make -s BUILD=/tmp/stackfix-gtest/build
build/stack_test --gtest_output=json:"$data/gtest/suite.json" >"$data/gtest/suite.out" \
    2>"$data/gtest/suite.err"
STROBE_FIXTURE_HANG=1 setsid build/stack_test --gtest_output=json:/tmp/stackfix-gtest/killed.json \
    >"$data/gtest/killed.out" 2>"$data/gtest/killed.err" &
sleep 2
kill -KILL -$!
wait
sed -i 's/int v = items_.front();/int v = *(volatile int *)nullptr;/' stack.cpp
make -s BUILD=/tmp/stackfix-gtest/build
build/stack_test >"$data/gtest/crash.out" 2>"$data/gtest/crash.err"

# go test -json: the suite, the hanging test stopped with SIGQUIT (what the runner
# does to a stuck go test: the go command ignores it, the test binary prints every
# goroutine and exits), and a compile error.
mkdir -p "$data/go"
fresh go
cd /tmp/stackfix-go
go test -json ./... >"$data/go/suite.out" 2>"$data/go/suite.err"
STROBE_FIXTURE_HANG=1 setsid go test -json -run '^TestHangDeadlock$' ./... \
    >"$data/go/sigquit.out" 2>"$data/go/sigquit.err" &
sleep 5
kill -QUIT -$!
wait
STROBE_FIXTURE_HANG=1 setsid go test -json -run '^TestHangDeadlock$' ./... \
    >"$data/go/killed.out" 2>"$data/go/killed.err" &
sleep 5
kill -KILL -$!
wait
sed -i 's/return len(s.items)/return len(s.items) + missing/' stack/stack.go
go test -json ./... >"$data/go/build_fail.out" 2>"$data/go/build_fail.err"
exit 0
