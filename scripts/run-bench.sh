#!/bin/sh
# `make bench`: runs every benchmark against a build directory and prints Markdown
# ready to paste into BENCHMARKS.md, headed by the machine and the date. Each
# benchmark gets a private STROBE_HOME so it never touches the user's daemon.
#
#   scripts/run-bench.sh BUILD_DIR
set -eu
build=$(cd "${1:-build}" && pwd)
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'if [ -f "$work/home/strobe.pid" ]; then kill "$(cat "$work/home/strobe.pid")" 2>/dev/null || true; fi; rm -rf "$work"' EXIT

echo "## Run of $(date -u +%Y-%m-%d) on $(uname -r), $(nproc) CPUs ($(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1))"
echo
echo "### Store (\`$build/bench/bench_store\`)"
echo
mkdir -p "$work/store"
"$build/bench/bench_store" "$work/store"
echo
echo "### Query shapes at 200,000 events (\`$build/bench/bench_query $work/store\`)"
echo
"$build/bench/bench_query" "$work/store"
echo
echo "### Launch (\`$build/bench/bench_launch $build/fixtures/hello_exit3 50\`)"
echo
mkdir -p "$work/home"
export PATH="$build:$PATH" # the daemon the benchmark starts is this build's
STROBE_HOME="$work/home" "$build/bench/bench_launch" "$build/fixtures/hello_exit3" 50
echo
echo "### Crash reports (\`$build/bench/bench_crash 10 ...\`)"
echo
# RUST_BACKTRACE makes the Rust panic hook walk and print its own stack: off, so the
# plain run is the program's own cost.
f="$build/fixtures"
(unset RUST_BACKTRACE; STROBE_HOME="$work/home" "$build/bench/bench_crash" 10 "$f/crash_null" \
    "$f/crash_uncaught" "$f/crash_panic" "$f/crash_stack_overflow" "$f/crash_asan")
echo
echo "### Every thread's stack (\`$build/bench/bench_stacks 20 $build/fixtures/threads16\`)"
echo
STROBE_HOME="$work/home" "$build/bench/bench_stacks" 20 "$build/fixtures/threads16"
echo
echo "### Tracing (\`$build/bench/bench_trace $build/fixtures/bench_calls 20000 5\`)"
echo
# Starts its own daemons (one pinned to CPU 0, one free) in private STROBE_HOMEs
# under /tmp and stops them; `strobe` comes from the PATH set above.
"$build/bench/bench_trace" "$build/fixtures/bench_calls" 20000 5
echo
echo "### Fast path (\`$build/bench/bench_fast $build/fixtures/bench_calls 40000 5\`)"
echo
# trace.mode "fast" per call beside int3 and uftrace (-P, -a -P) on the same fixture;
# starts its own daemon in a private STROBE_HOME and stops it.
"$build/bench/bench_fast" "$build/fixtures/bench_calls" 40000 5
echo
echo "### The fast path's recorder in the process (\`$build/bench/bench_fastrec 1000000 9\`)"
echo
# The recorder and its trampolines patched into the benchmark itself, a thread of it
# draining the ring: the floor of a recorded call, with no daemon and warm pages.
"$build/bench/bench_fastrec" 1000000 9
echo
echo "### A real workload traced broadly" \
     "(\`$build/bench/bench_workload python3.11-dbg bench/pyload.py 200000 3\`)"
echo
# CPython's debug build running a dict-heavy loop with PyDict_* traced: throughput
# untraced, with int3 and with the fast path; its own daemon, like bench_fast.
"$build/bench/bench_workload" /usr/bin/python3.11-dbg "$root/bench/pyload.py" 200000 3
echo
echo "### A real server: redis under redis-benchmark" \
     "(\`$build/bench/bench_redis 100000 3\`)"
echo
# Debian's own redis-server built with -g (scripts/bench-redis-build.sh fetches the
# source package with private apt directories; cached in $build/bench/redis) under
# redis-benchmark's SET and GET: plain, under Strobe untraced, one cold function and
# *Command traced with the fast path and int3, and uftrace; its own daemon.
if "$root/scripts/bench-redis-build.sh" "$build/bench/redis"; then
    "$build/bench/bench_redis" 100000 3 "$build/bench/redis/redis-server"
else
    echo "Skipped: redis-server could not be built (\`scripts/bench-redis-build.sh\`;" \
         "its log: $build/bench/redis/build.log)."
fi
echo
echo "### A Python function traced (\`$build/bench/bench_python PYTHON bench/pycalls.py 200000 3\`)"
echo
# The Python collector's cost to a call: setprofile on Debian's 3.11, sys.monitoring
# on pyenv's 3.12 when the machine has it, against the interpreter alone and an
# empty sys.setprofile function.
for py in /usr/bin/python3.11 $(ls -d "$HOME"/.pyenv/versions/3.12.*/bin/python3.12 2>/dev/null | tail -n 1); do
    echo "$py:"
    echo
    "$build/bench/bench_python" "$py" "$root/bench/pycalls.py" 200000 3
    echo
done
echo "### Python breakpoints beside pdb (\`$build/bench/bench_pybreak /usr/bin/python3.11 bench/pybreak.py 50 20000 3\`)"
echo
# Hit -> pause answer through the daemon socket beside pdb on a pipe, a never-true
# condition's cost per call, and a stacks snapshot of 16 waiting Python threads.
STROBE_HOME="$work/home" "$build/bench/bench_pybreak" /usr/bin/python3.11 "$root/bench/pybreak.py" 50 20000 3
echo
echo "### Exact counting (\`$build/bench/bench_count $build/fixtures/bench_calls 10000000 5\`)"
echo
# A sampled function's calls through the counting jump, against the untraced call.
STROBE_HOME="$work/home" "$build/bench/bench_count" "$build/fixtures/bench_calls" 10000000 5
echo
echo "### Memory reads (\`$build/bench/bench_memory 20 $build/fixtures/globals_all\`)"
echo
# A 16-variable debug_memory read of a running program through the daemon, beside gdb
# reading the same variables of another copy of it.
STROBE_HOME="$work/home" "$build/bench/bench_memory" 20 "$build/fixtures/globals_all"
echo
echo "### Data watchpoint hits (\`$build/bench/bench_watch $build/fixtures/watch_writer 5000 5\`)"
echo
# A machine whose hypervisor never raises debug-register traps has no hits to time,
# for gdb either (tests/fixtures/debug_traps.c exits 3 there).
if "$build/fixtures/debug_traps" >/dev/null; then
    STROBE_HOME="$work/home" "$build/bench/bench_watch" "$build/fixtures/watch_writer" 5000 5
else
    echo "Skipped: this machine never delivers x86 debug-register traps" \
         "(\`$build/fixtures/debug_traps\`); Strobe answers WATCH_UNSUPPORTED and gdb's" \
         "watch stays silent."
fi
echo
echo "### Breakpoints, conditions, steps (\`$build/bench/bench_break $build/fixtures/bench_break 200 5000 3\`)"
echo
# Hit -> pause answer and step-over round trips through the daemon socket beside gdb
# driven over MI on the same fixture, and a never-true condition's cost per hit.
STROBE_HOME="$work/home" "$build/bench/bench_break" "$build/fixtures/bench_break" 200 5000 3
echo
echo "### Test runs (\`$build/bench/bench_test 5 $build/fixtures/deadlock_abba ...\`)"
echo
# debug_test's round trip (run call to completed answer) beside the same command run
# directly, and the time to a stuck verdict on a deadlocking program.
# The fixture projects of tests/fixtures/testproj, copied or built outside the tree.
tp="$work/testproj"
mkdir -p "$tp"
cp -r "$root/tests/fixtures/testproj/cargo" "$root/tests/fixtures/testproj/pytest" "$tp/"
make -s -C "$root/tests/fixtures/testproj/gtest" BUILD="$tp/gtest" >/dev/null
STROBE_HOME="$work/home" "$build/bench/bench_test" 5 "$build/fixtures/deadlock_abba" \
    "$tp/cargo" cargo - "$tp/gtest" gtest "$tp/gtest/stack_test" "$tp/pytest" pytest - \
    "$work" generic "$build/fixtures/hello_exit3"
echo
echo "### DWARF index (\`$build/bench/bench_dwarf\`, generated C++ binary, and libc)"
echo
# Generates and compiles a large C++ program (about 40 s), indexes it, and runs gdb's
# `info functions` on the same file for comparison.
"$build/bench/bench_dwarf"
